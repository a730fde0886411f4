package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// Defaults of [RunConfig].
const (
	// DefaultBodyLimit is how many bytes of output the exit-status ping
	// carries when the server does not announce a Ping-Body-Limit.
	DefaultBodyLimit = 100_000
	// MaxBodyLimit caps a limit announced by the server.
	MaxBodyLimit = 10 << 20
	// DefaultKillGrace is how long a cancelled command has between SIGTERM
	// and SIGKILL.
	DefaultKillGrace = 10 * time.Second
	// DefaultOutputGrace is how long the output is still read after the
	// command exited, when a background process it started keeps it open.
	DefaultOutputGrace = 5 * time.Second
)

// Exit statuses for a command that could not be started, as a shell's.
const (
	ExitCannotExecute = 126
	ExitNotFound      = 127
)

// RunConfig describes one monitored run of a command.
type RunConfig struct {
	// Client sends the pings; nil means a zero Client (default retries).
	Client *Client
	// CheckURL is the check's ping URL without suffix (see [ResolveURL]).
	CheckURL string
	// Command is the program and its arguments.
	Command []string
	// RunID is sent as rid with every ping; empty means a new random one.
	RunID string
	// NoStartPing skips the /start ping.
	NoStartPing bool
	// NoOutput sends no output with the exit-status ping; the command's
	// output then goes straight to Stdout and Stderr.
	NoOutput bool
	// BodyLimit is how many bytes of output tail to send (<= 0 means
	// [DefaultBodyLimit]). A Ping-Body-Limit header in the answer to the
	// start ping replaces it, unless BodyLimitExplicit is set and the
	// header is larger.
	BodyLimit         int
	BodyLimitExplicit bool
	// Stdin, Stdout and Stderr are the command's; nil means the null
	// device. Pass *os.File values to let the command use them directly.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Log receives vigil's own warnings; nil means Stderr.
	Log io.Writer
	// Signals are forwarded to the command while it runs.
	Signals <-chan os.Signal
	// NewProcessGroup runs the command in its own process group, and
	// forwarded signals go to that whole group (the command's children
	// included). When false the command shares vigil's process group, so
	// it can use the terminal; SIGINT, SIGQUIT and SIGHUP are then not
	// forwarded, as the terminal delivers them to the whole group itself.
	NewProcessGroup bool
	// KillGrace is how long the command has to exit after SIGTERM when ctx
	// is cancelled, before SIGKILL; 0 means [DefaultKillGrace].
	KillGrace time.Duration
	// OutputGrace bounds reading the output after the command exited;
	// 0 means [DefaultOutputGrace].
	OutputGrace time.Duration
}

// RunResult is what happened in a run.
type RunResult struct {
	// ExitCode is the command's exit status: its own, 128+n when killed by
	// signal n, or 127/126 when it could not be started. Pinging problems
	// never change it.
	ExitCode int
	// RunID is the rid sent with the pings.
	RunID string
	// StartErr is the start ping's failure, if any.
	StartErr error
	// ExecErr is why the command could not be started, if it could not.
	ExecErr error
	// EndErr is the exit-status ping's failure, if any.
	EndErr error
	// Body is what the exit-status ping carried.
	Body []byte
}

// Run pings start, runs the command, and pings its exit status with the tail
// of its output. The pings never hold up or fail the command: the start ping
// goes out while the command already runs, and failed pings are logged to
// cfg.Log. The exit-status ping waits for the start ping, so the server sees
// them in order.
//
// Cancelling ctx terminates the command (SIGTERM, then SIGKILL after
// KillGrace). It does not stop the pings: the start and exit-status pings
// are still sent, bounded by the client's retry policy.
//
// Run returns an error only for an invalid configuration, before anything
// ran.
func Run(ctx context.Context, cfg RunConfig) (RunResult, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return RunResult{}, errors.New("no command to run")
	}
	if _, err := PingURL(cfg.CheckURL, Success, ""); err != nil {
		return RunResult{}, fmt.Errorf("check URL: %w", err)
	}
	res := RunResult{RunID: cfg.RunID}
	if res.RunID == "" {
		res.RunID = NewRunID()
	} else {
		rid, err := CanonicalRunID(res.RunID)
		if err != nil {
			return RunResult{}, err
		}
		res.RunID = rid
	}
	client := cfg.Client
	if client == nil {
		client = &Client{}
	}
	if err := client.Retry.Validate(); err != nil && client.Retry != (RetryPolicy{}) {
		return RunResult{}, err
	}
	logw := cfg.Log
	if logw == nil {
		logw = cfg.Stderr
	}
	if logw == nil {
		logw = io.Discard
	}

	var ring *Ring
	if !cfg.NoOutput {
		limit := cfg.BodyLimit
		if limit <= 0 {
			limit = DefaultBodyLimit
		}
		ring = NewRing(limit)
	}

	// The start ping runs alongside the command.
	startDone := make(chan struct{})
	if cfg.NoStartPing {
		close(startDone)
	} else {
		go func() {
			defer close(startDone)
			u, _ := PingURL(cfg.CheckURL, Start, res.RunID)
			resp, err := client.Ping(context.WithoutCancel(ctx), Request{URL: u, Method: "POST"})
			if err != nil {
				res.StartErr = err
				fmt.Fprintf(logw, "vigil: warning: start ping failed: %v (the command runs regardless)\n", err)
				return
			}
			if ring != nil && resp.BodyLimit > 0 {
				ring.SetLimit(chooseBodyLimit(ring.Limit(), cfg.BodyLimitExplicit, resp.BodyLimit))
			}
		}()
	}

	var body []byte
	res.ExitCode, res.ExecErr = execute(ctx, cfg, ring, logw)
	<-startDone // it may still set the ring's limit
	switch {
	case cfg.NoOutput:
		body = []byte{}
	case res.ExecErr != nil:
		body = []byte(res.ExecErr.Error() + "\n")
	default:
		body = ring.Bytes()
		if ring.Truncated() {
			body = trimPartialRune(body)
		}
	}
	res.Body = body

	kind, _ := ExitStatus(res.ExitCode)
	u, _ := PingURL(cfg.CheckURL, kind, res.RunID)
	if _, err := client.Ping(context.WithoutCancel(ctx), Request{URL: u, Method: "POST", Body: body}); err != nil {
		res.EndErr = err
		fmt.Fprintf(logw, "vigil: warning: could not report exit status %d: %v\n", res.ExitCode, err)
	}
	return res, nil
}

// chooseBodyLimit picks the output tail size once the server announced its
// limit: the server's, capped at MaxBodyLimit, or the configured one when it
// was set explicitly and is smaller.
func chooseBodyLimit(configured int, explicit bool, announced int) int {
	limit := min(announced, MaxBodyLimit)
	if explicit && configured > 0 {
		limit = min(limit, configured)
	}
	return limit
}

// execute runs the command to completion and returns its exit status, or
// 127/126 and the reason when it could not be started.
func execute(ctx context.Context, cfg RunConfig, ring *Ring, logw io.Writer) (int, error) {
	// Not CommandContext: cancellation is forward's job (SIGTERM to the
	// process group, SIGKILL after KillGrace), not an immediate SIGKILL.
	cmd := exec.Command(cfg.Command[0], cfg.Command[1:]...) //nolint:noctx // see above
	cmd.Stdin = cfg.Stdin
	if ring == nil {
		cmd.Stdout, cmd.Stderr = cfg.Stdout, cfg.Stderr
	} else {
		t := &tee{ring: ring}
		cmd.Stdout = &teeStream{t: t, w: cfg.Stdout}
		cmd.Stderr = &teeStream{t: t, w: cfg.Stderr}
	}
	cmd.WaitDelay = cfg.OutputGrace
	if cmd.WaitDelay <= 0 {
		cmd.WaitDelay = DefaultOutputGrace
	}
	if cfg.NewProcessGroup {
		setProcessGroup(cmd)
	}

	if err := cmd.Start(); err != nil {
		code, msg := ExitCannotExecute, err.Error()
		var (
			pathErr *fs.PathError
			execErr *exec.Error
		)
		if errors.As(err, &pathErr) {
			msg = pathErr.Err.Error()
		} else if errors.As(err, &execErr) {
			msg = execErr.Err.Error()
		}
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
			code, msg = ExitNotFound, "command not found"
		}
		err = fmt.Errorf("vigil: %s: %s", cfg.Command[0], msg)
		fmt.Fprintln(logw, err)
		return code, err
	}

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { forward(ctx, cfg, cmd.Process, done, logw) })
	err := cmd.Wait()
	close(done)
	wg.Wait()

	if errors.Is(err, exec.ErrWaitDelay) {
		fmt.Fprintf(logw, "vigil: warning: the command exited but its output stayed open for %s (a background process?); stopped reading it\n", cmd.WaitDelay)
	}
	return exitCode(cmd.ProcessState), nil
}

// forward passes signals on to the command until done, and terminates it
// when ctx is cancelled.
func forward(ctx context.Context, cfg RunConfig, p *os.Process, done <-chan struct{}, logw io.Writer) {
	grace := cfg.KillGrace
	if grace <= 0 {
		grace = DefaultKillGrace
	}
	send := func(sig os.Signal) {
		if err := signalCommand(p, cfg.NewProcessGroup, sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
			fmt.Fprintf(logw, "vigil: warning: could not pass %v on to the command: %v\n", sig, err)
		}
	}
	sigs := cfg.Signals
	ctxDone := ctx.Done()
	var kill <-chan time.Time
	for {
		select {
		case <-done:
			return
		case sig, ok := <-sigs:
			if !ok {
				sigs = nil
				continue
			}
			if !cfg.NewProcessGroup && slices.Contains(terminalSignals, sig) {
				continue
			}
			send(sig)
		case <-ctxDone:
			ctxDone = nil
			send(terminateSignal)
			t := time.NewTimer(grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			send(os.Kill)
		}
	}
}

// tee copies the command's output into the ring. Both output streams share
// it, so writes to a shared destination are serialised.
type tee struct {
	mu   sync.Mutex
	ring *Ring
}

// teeStream is one output stream: it passes data through to w as it comes
// and keeps a copy in the ring. A failing w (a closed stdout) is dropped
// rather than failing the command's writes.
type teeStream struct {
	t      *tee
	w      io.Writer
	broken bool
}

func (s *teeStream) Write(p []byte) (int, error) {
	s.t.mu.Lock()
	defer s.t.mu.Unlock()
	if s.w != nil && !s.broken {
		if _, err := s.w.Write(p); err != nil {
			s.broken = true
		}
	}
	return s.t.ring.Write(p)
}

func clampExit(code int) int {
	if code < 0 || code > MaxExitStatus {
		return MaxExitStatus
	}
	return code
}
