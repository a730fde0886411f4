//go:build unix

package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// runIn runs command under a RunConfig pointed at srv with fast retries.
func runIn(t *testing.T, srv *pingServer, cfg RunConfig) (RunResult, *syncBuffer, *syncBuffer) {
	t.Helper()
	stdout, stderr := newSyncBuffer(""), newSyncBuffer("")
	if cfg.Client == nil {
		cfg.Client = &Client{Retry: fastRetry}
	}
	if cfg.CheckURL == "" {
		cfg.CheckURL = srv.checkURL()
	}
	if cfg.Stdout == nil {
		cfg.Stdout = stdout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = stderr
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res, stdout, stderr
}

func sh(script string) []string { return []string{"sh", "-c", script} }

func TestRunPingsStartAndExitStatus(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		wantCode int
		wantBody string
	}{
		{name: "exit 0", script: "echo hello", wantCode: 0, wantBody: "hello\n"},
		// Two pipes: the tail keeps the order between stdout and stderr only
		// as well as the reads see it, hence the pause.
		{name: "exit 3 with output tail", script: "echo out; sleep 0.05; echo err >&2; exit 3", wantCode: 3, wantBody: "out\nerr\n"},
		{name: "silent failure", script: "exit 1", wantCode: 1, wantBody: ""},
		{name: "exit 255", script: "exit 255", wantCode: 255, wantBody: ""},
		{name: "killed by a signal", script: "kill -KILL $$", wantCode: 128 + 9, wantBody: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newPingServer(t, 10000)
			res, _, _ := runIn(t, srv, RunConfig{Command: sh(tt.script), NewProcessGroup: true})
			if res.ExitCode != tt.wantCode || res.StartErr != nil || res.EndErr != nil || res.ExecErr != nil {
				t.Fatalf("result = %+v", res)
			}
			reqs := srv.requests()
			if len(reqs) != 2 {
				t.Fatalf("requests = %+v, want start and exit status", reqs)
			}
			start, end := reqs[0], reqs[1]
			if start.Suffix() != "/start" || start.Method != "POST" || start.Body != "" {
				t.Errorf("first request = %+v, want POST /start", start)
			}
			if want := fmt.Sprintf("/%d", tt.wantCode); end.Suffix() != want || end.Method != "POST" {
				t.Errorf("second request = %s %s, want POST %s", end.Method, end.Path, want)
			}
			rid := start.Query.Get("rid")
			if _, err := CanonicalRunID(rid); err != nil || rid != res.RunID || end.Query.Get("rid") != rid {
				t.Errorf("rids: start %q, end %q, result %q", rid, end.Query.Get("rid"), res.RunID)
			}
			if end.Body != tt.wantBody {
				t.Errorf("body = %q, want %q", end.Body, tt.wantBody)
			}
		})
	}
}

func TestRunPassesOutputThrough(t *testing.T) {
	srv := newPingServer(t, 0)
	stdout := newSyncBuffer("first")
	stderr := newSyncBuffer("")
	done := make(chan RunResult)
	go func() {
		res, _ := Run(context.Background(), RunConfig{
			Client: &Client{Retry: fastRetry}, CheckURL: srv.checkURL(),
			Command: sh("echo first; sleep 1; echo second; echo warn >&2"),
			Stdin:   strings.NewReader("ignored"), Stdout: stdout, Stderr: stderr,
		})
		done <- res
	}()
	select {
	case <-stdout.seen: // streamed while the command still runs
	case <-done:
		t.Fatal("the output arrived only after the command ended")
	case <-time.After(5 * time.Second):
		t.Fatal("no output")
	}
	res := <-done
	if res.ExitCode != 0 || stdout.String() != "first\nsecond\n" || stderr.String() != "warn\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, stdout.String(), stderr.String())
	}
}

func TestRunStdin(t *testing.T) {
	srv := newPingServer(t, 0)
	res, stdout, _ := runIn(t, srv, RunConfig{Command: []string{"cat"}, Stdin: strings.NewReader("from stdin")})
	if res.ExitCode != 0 || stdout.String() != "from stdin" || string(res.Body) != "from stdin" {
		t.Fatalf("exit %d, stdout %q, body %q", res.ExitCode, stdout.String(), res.Body)
	}
}

// megabyte is the output of megabyteScript: 131072 lines of 8 bytes.
func megabyte() string {
	var b strings.Builder
	for i := range 131072 {
		fmt.Fprintf(&b, "%07d\n", i)
	}
	return b.String()
}

const megabyteScript = `awk 'BEGIN { for (i = 0; i < 131072; i++) printf "%07d\n", i }'`

func TestRunBodyIsTheLastPingBodyLimitBytes(t *testing.T) {
	want := megabyte()
	for _, limit := range []int{65536, 10000, 4097} {
		t.Run(fmt.Sprint(limit), func(t *testing.T) {
			t.Parallel()
			srv := newPingServer(t, limit)
			res, stdout, _ := runIn(t, srv, RunConfig{Command: sh(megabyteScript)})
			if res.ExitCode != 0 || stdout.String() != want {
				t.Fatalf("exit %d, %d bytes passed through, want %d", res.ExitCode, len(stdout.String()), len(want))
			}
			reqs := srv.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			if body := reqs[1].Body; body != want[len(want)-limit:] {
				t.Fatalf("body is %d bytes ending %q; want the last %d bytes", len(body), body[max(0, len(body)-20):], limit)
			}
		})
	}
}

func TestRunBodyLimitWithoutHeader(t *testing.T) {
	want := megabyte()
	srv := newPingServer(t, 0) // no Ping-Body-Limit header
	res, _, _ := runIn(t, srv, RunConfig{Command: sh(megabyteScript)})
	if string(res.Body) != want[len(want)-DefaultBodyLimit:] {
		t.Fatalf("body is %d bytes, want the last %d", len(res.Body), DefaultBodyLimit)
	}
	res, _, _ = runIn(t, srv, RunConfig{Command: sh(megabyteScript), NoStartPing: true, BodyLimit: 1000})
	if string(res.Body) != want[len(want)-1000:] {
		t.Fatalf("body is %d bytes, want the last 1000", len(res.Body))
	}
}

func TestRunBodyLimitHeaderLargerThanDefault(t *testing.T) {
	want := megabyte()
	srv := newPingServer(t, 200_000)
	// The start ping is answered long before the output starts.
	res, _, _ := runIn(t, srv, RunConfig{Command: sh("sleep 0.5; " + megabyteScript), BodyLimit: 1000})
	if string(res.Body) != want[len(want)-200_000:] {
		t.Fatalf("body is %d bytes, want the last 200000", len(res.Body))
	}
}

func TestChooseBodyLimit(t *testing.T) {
	tests := []struct {
		configured int
		explicit   bool
		announced  int
		want       int
	}{
		{DefaultBodyLimit, false, 10000, 10000},
		{DefaultBodyLimit, false, 1 << 20, 1 << 20},
		{DefaultBodyLimit, false, 1 << 30, MaxBodyLimit},
		{5000, true, 10000, 5000},
		{50000, true, 10000, 10000},
	}
	for _, tt := range tests {
		if got := chooseBodyLimit(tt.configured, tt.explicit, tt.announced); got != tt.want {
			t.Errorf("chooseBodyLimit(%d, %v, %d) = %d, want %d", tt.configured, tt.explicit, tt.announced, got, tt.want)
		}
	}
}

func TestRunTruncatedBodyStartsOnARune(t *testing.T) {
	srv := newPingServer(t, 10)
	// "€" is 3 bytes: the last 10 bytes of "€€€€€" start inside one.
	res, _, _ := runIn(t, srv, RunConfig{Command: sh("printf '€€€€€'")})
	if string(res.Body) != "€€€" {
		t.Fatalf("body = %q, want %q", res.Body, "€€€")
	}
}

func TestRunCommandCannotStart(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "script.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		command  []string
		wantCode int
		wantMsg  string
	}{
		{name: "not in PATH", command: []string{"vigil-no-such-command-xyz", "arg"}, wantCode: 127, wantMsg: "vigil-no-such-command-xyz: command not found"},
		{name: "no such path", command: []string{filepath.Join(dir, "missing")}, wantCode: 127, wantMsg: "missing: command not found"},
		{name: "not executable", command: []string{notExec}, wantCode: 126, wantMsg: "permission denied"},
		{name: "a directory", command: []string{dir}, wantCode: 126, wantMsg: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newPingServer(t, 0)
			res, _, stderr := runIn(t, srv, RunConfig{Command: tt.command})
			if res.ExitCode != tt.wantCode || res.ExecErr == nil {
				t.Fatalf("result = %+v", res)
			}
			if !strings.Contains(stderr.String(), tt.wantMsg) {
				t.Errorf("stderr = %q, want %q", stderr.String(), tt.wantMsg)
			}
			reqs := srv.requests()
			if len(reqs) != 2 || reqs[0].Suffix() != "/start" || reqs[1].Suffix() != fmt.Sprintf("/%d", tt.wantCode) {
				t.Fatalf("requests = %+v", reqs)
			}
			if !strings.Contains(reqs[1].Body, tt.wantMsg) {
				t.Errorf("body = %q, want the reason", reqs[1].Body)
			}
		})
	}
}

func TestRunMonitorUnreachable(t *testing.T) {
	stdout, stderr := newSyncBuffer(""), newSyncBuffer("")
	res, err := Run(context.Background(), RunConfig{
		Client:   &Client{Retry: fastRetry},
		CheckURL: closedURL(t) + "/ping/" + testCheck,
		Command:  sh("echo still runs; exit 7"),
		Stdout:   stdout, Stderr: stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 7 || stdout.String() != "still runs\n" {
		t.Fatalf("exit %d, stdout %q", res.ExitCode, stdout.String())
	}
	if res.StartErr == nil || res.EndErr == nil {
		t.Errorf("ping errors = %v, %v; want both", res.StartErr, res.EndErr)
	}
	for _, want := range []string{"warning: start ping failed", "warning: could not report exit status 7"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

func TestRunMonitorErrors(t *testing.T) {
	tests := []struct {
		name     string
		statuses []int
		wantReqs int
	}{
		{name: "404 is final", statuses: []int{404, 404}, wantReqs: 2},
		{name: "503 is retried then given up", statuses: []int{503, 503, 503, 503, 503, 503}, wantReqs: 6},
		{name: "503 then 200 recovers", statuses: []int{503, 200, 503, 200}, wantReqs: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newPingServer(t, 0, tt.statuses...)
			res, _, _ := runIn(t, srv, RunConfig{Command: sh("exit 4")})
			if res.ExitCode != 4 || len(srv.requests()) != tt.wantReqs {
				t.Fatalf("exit %d after %d requests; want 4 after %d", res.ExitCode, len(srv.requests()), tt.wantReqs)
			}
		})
	}
}

func TestRunOptions(t *testing.T) {
	const rid = "0B1C2D3E-4F50-4617-8293-A4B5C6D7E8F9"
	srv := newPingServer(t, 0)
	stdout := newSyncBuffer("")
	res, _, _ := runIn(t, srv, RunConfig{Command: sh("echo secret"), NoStartPing: true, NoOutput: true, RunID: rid, Stdout: stdout})
	reqs := srv.requests()
	if len(reqs) != 1 || reqs[0].Suffix() != "/0" || reqs[0].Method != "POST" || reqs[0].Body != "" {
		t.Fatalf("requests = %+v, want one empty POST /0", reqs)
	}
	if got := reqs[0].Query.Get("rid"); got != strings.ToLower(rid) || res.RunID != got {
		t.Errorf("rid = %q, result %q", got, res.RunID)
	}
	if stdout.String() != "secret\n" {
		t.Errorf("stdout = %q", stdout.String())
	}
}

func TestRunInvalidConfig(t *testing.T) {
	for name, cfg := range map[string]RunConfig{
		"no command": {CheckURL: "http://vigil/ping/x"},
		"bad url":    {CheckURL: "vigil", Command: []string{"true"}},
		"bad rid":    {CheckURL: "http://vigil/ping/x", Command: []string{"true"}, RunID: "run-1"},
		"bad retry":  {CheckURL: "http://vigil/ping/x", Command: []string{"true"}, Client: &Client{Retry: RetryPolicy{Attempts: -1}}},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// startSleeper runs `sh -c 'echo ready $$; sleep 30'` (or cfg.Command, which
// must also print "ready" and the shell's pid first) and returns once sleep
// runs, in the shell's place (exec sleep) or as its child.
func startSleeper(t *testing.T, ctx context.Context, srv *pingServer, cfg RunConfig) <-chan RunResult {
	t.Helper()
	stdout := newSyncBuffer("")
	cfg.Client = &Client{Retry: fastRetry}
	cfg.CheckURL = srv.checkURL()
	cfg.Stdout = stdout
	if cfg.Command == nil {
		cfg.Command = sh("echo ready $$; sleep 30; echo not reached")
	}
	done := make(chan RunResult, 1)
	go func() {
		res, err := Run(ctx, cfg)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	g := gomega.NewWithT(t)
	var pid int
	g.Eventually(func() error {
		_, err := fmt.Sscanf(stdout.String(), "ready %d\n", &pid)
		return err
	}).WithTimeout(10*time.Second).Should(gomega.Succeed(), "the command did not start")
	// Wait for sleep itself: a signal caught before sh's child exec'd it,
	// while the forked shell still has its handlers, would be lost, and sh
	// waits for a child that did not die of SIGINT. Once the kernel names
	// the process sleep its exec is under way, and a signal from then on
	// meets sleep's own (default) handling.
	g.Eventually(func() (bool, error) { return runsSleep(pid) }).
		WithTimeout(10*time.Second).Should(gomega.BeTrue(), "sh did not exec sleep")
	return done
}

// runsSleep reports whether process pid, or one of its children, has exec'd
// sleep. It reads Linux's /proc.
func runsSleep(pid int) (bool, error) {
	children, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return false, err
	}
	for _, p := range append([]string{strconv.Itoa(pid)}, strings.Fields(string(children))...) {
		comm, err := os.ReadFile("/proc/" + p + "/comm")
		if errors.Is(err, fs.ErrNotExist) {
			continue // a child that ended meanwhile, such as one of a loop's short sleeps
		}
		if err != nil {
			return false, err
		}
		if strings.TrimSpace(string(comm)) == "sleep" {
			return true, nil
		}
	}
	return false, nil
}

// waitResult waits for the command to stop. The exit code the callers
// check tells a stop by signal from the sleeper ending on its own; the
// limit only keeps a broken build from hanging.
func waitResult(t *testing.T, done <-chan RunResult) RunResult {
	t.Helper()
	select {
	case res := <-done:
		return res
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not stop")
		return RunResult{}
	}
}

func TestRunForwardsSignals(t *testing.T) {
	tests := []struct {
		name     string
		group    bool
		command  []string
		sig      os.Signal
		wantCode int
	}{
		{name: "SIGTERM to the process group", group: true, sig: syscall.SIGTERM, wantCode: 128 + 15},
		{name: "SIGINT to the process group", group: true, sig: syscall.SIGINT, wantCode: 128 + 2},
		{name: "SIGTERM to the command alone", group: false, command: sh("echo ready $$; exec sleep 30"), sig: syscall.SIGTERM, wantCode: 128 + 15},
		{name: "a trapped signal lets the command decide", group: true,
			command: sh("trap 'echo cleaned up; exit 0' TERM; sleep 30 & echo ready $$; wait"), sig: syscall.SIGTERM, wantCode: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newPingServer(t, 0)
			sigs := make(chan os.Signal, 1)
			done := startSleeper(t, context.Background(), srv, RunConfig{Command: tt.command, Signals: sigs, NewProcessGroup: tt.group})
			sigs <- tt.sig
			res := waitResult(t, done)
			if res.ExitCode != tt.wantCode {
				t.Fatalf("exit code %d, want %d", res.ExitCode, tt.wantCode)
			}
			reqs := srv.requests()
			if len(reqs) != 2 || reqs[1].Suffix() != fmt.Sprintf("/%d", tt.wantCode) {
				t.Fatalf("requests = %+v", reqs)
			}
		})
	}
}

func TestRunSharedGroupSkipsTerminalSignals(t *testing.T) {
	srv := newPingServer(t, 0)
	sigs := make(chan os.Signal, 2)
	done := startSleeper(t, context.Background(), srv, RunConfig{Command: sh("echo ready $$; exec sleep 30"), Signals: sigs})
	sigs <- syscall.SIGINT // the terminal would have delivered it: not forwarded
	select {
	case res := <-done:
		t.Fatalf("SIGINT was forwarded: exit %d", res.ExitCode)
	case <-time.After(300 * time.Millisecond):
	}
	sigs <- syscall.SIGTERM
	if res := waitResult(t, done); res.ExitCode != 143 {
		t.Fatalf("exit code %d, want 143", res.ExitCode)
	}
}

func TestRunCancelTerminates(t *testing.T) {
	srv := newPingServer(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := startSleeper(t, ctx, srv, RunConfig{NewProcessGroup: true})
	cancel()
	res := waitResult(t, done)
	if res.ExitCode != 143 || res.EndErr != nil {
		t.Fatalf("result = %+v, want 143 reported", res)
	}
	if reqs := srv.requests(); len(reqs) != 2 || reqs[1].Suffix() != "/143" {
		t.Fatalf("requests = %+v", reqs)
	}
}

func TestRunCancelKillsAfterGrace(t *testing.T) {
	srv := newPingServer(t, 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := startSleeper(t, ctx, srv, RunConfig{
		Command:         sh("trap '' TERM; echo ready $$; while :; do sleep 0.1; done"),
		NewProcessGroup: true, KillGrace: 300 * time.Millisecond,
	})
	cancel()
	if res := waitResult(t, done); res.ExitCode != 128+9 {
		t.Fatalf("exit code %d, want 137", res.ExitCode)
	}
}

// TestRunRealSignal sends SIGTERM to this process, as Kubernetes does to a
// job's container, with the signal wiring "vigil run" uses.
func TestRunRealSignal(t *testing.T) {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, ForwardedSignals...)
	defer signal.Stop(sigs)
	srv := newPingServer(t, 0)
	done := startSleeper(t, context.Background(), srv, RunConfig{Signals: sigs, NewProcessGroup: true})
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if res := waitResult(t, done); res.ExitCode != 143 {
		t.Fatalf("exit code %d, want 143", res.ExitCode)
	}
}

func TestRunBackgroundProcessKeepsOutputOpen(t *testing.T) {
	srv := newPingServer(t, 0)
	res, _, stderr := runIn(t, srv, RunConfig{Command: sh("sleep 3 & echo done"), OutputGrace: 200 * time.Millisecond, NewProcessGroup: true})
	if res.ExitCode != 0 || string(res.Body) != "done\n" {
		t.Fatalf("exit %d, body %q", res.ExitCode, res.Body)
	}
	if !strings.Contains(stderr.String(), "output stayed open") {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("/dev/null is not a terminal")
	}
}

type failingWriter struct{ calls int }

func (w *failingWriter) Write([]byte) (int, error) {
	w.calls++
	return 0, syscall.EPIPE
}

func TestRunStdoutClosed(t *testing.T) {
	srv := newPingServer(t, 0)
	out := &failingWriter{}
	res, _, _ := runIn(t, srv, RunConfig{Command: sh("echo one; echo two; echo three; exit 2"), Stdout: out})
	if res.ExitCode != 2 || string(res.Body) != "one\ntwo\nthree\n" {
		t.Fatalf("exit %d, body %q", res.ExitCode, res.Body)
	}
	if out.calls != 1 {
		t.Errorf("the failing stdout was written %d times, want once", out.calls)
	}
}
