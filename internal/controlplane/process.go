package controlplane

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// process is a started etcd or kube-apiserver.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *tail
	// exited is closed once the process has exited and waitErr is set.
	exited  chan struct{}
	waitErr error
}

// startProcess starts path with args; its output goes to the process's
// tail.
func startProcess(name, path string, args ...string) (*process, error) {
	p := &process{name: name, out: newTail(tailLines), exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal is sent when the thread that started
		// the child exits, not the process: this goroutine keeps its
		// thread for as long as the child runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(path, args...) //nolint:noctx // stopped by stop, with SIGTERM first
		cmd.Stdout, cmd.Stderr = p.out, p.out
		cmd.SysProcAttr = sysProcAttr()
		if err := cmd.Start(); err != nil {
			started <- fmt.Errorf("starting %s: %w", name, err)
			return
		}
		p.cmd = cmd
		started <- nil
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return p, nil
}

// waitReady polls url until it answers 200 OK, the process exits, or
// timeout passes.
func (p *process) waitReady(ctx context.Context, timeout time.Duration, c *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		if last = get(ctx, c, url); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return p.exitError()
		case <-ctx.Done():
			return fmt.Errorf("%s was not ready within %s (%s: %w); its last lines of output:\n%s", p.name, timeout, url, last, p.out.Tail())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}

// exitError describes a process that exited before it was ready. Call it
// once exited is closed.
func (p *process) exitError() error {
	output := p.out.Tail()
	status := p.waitErr
	if status == nil {
		status = errors.New("exit status 0")
	}
	err := fmt.Errorf("%s exited before it was ready (%w); its last lines of output:\n%s", p.name, status, output)
	if portTaken(output) {
		return errors.Join(errPortTaken, err)
	}
	return err
}

// stop sends SIGTERM and waits, then kills the process if it has not
// exited within timeout.
func (p *process) stop(timeout time.Duration) error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return nil
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return fmt.Errorf("%s did not stop within %s of SIGTERM and was killed", p.name, timeout)
	}
}

// tailLines is how much of a process's output a failed start shows.
const tailLines = 40

// tail keeps the last lines written to it.
type tail struct {
	mu      sync.Mutex
	lines   []string // a ring of complete lines
	next    int
	partial strings.Builder
}

func newTail(n int) *tail { return &tail{lines: make([]string, 0, n)} }

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := string(b)
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			// A line longer than a few kilobytes is cut: what matters is
			// its start.
			if t.partial.Len() < 4096 {
				t.partial.WriteString(s[:min(len(s), 4096-t.partial.Len())])
			}
			return len(b), nil
		}
		t.partial.WriteString(s[:min(i, max(0, 4096-t.partial.Len()))])
		t.add(t.partial.String())
		t.partial.Reset()
		s = s[i+1:]
	}
}

func (t *tail) add(line string) {
	if len(t.lines) < cap(t.lines) {
		t.lines = append(t.lines, line)
		return
	}
	t.lines[t.next] = line
	t.next = (t.next + 1) % len(t.lines)
}

// Tail returns the last lines, oldest first, each indented.
func (t *tail) Tail() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	for i := range t.lines {
		b.WriteString("    " + t.lines[(t.next+i)%len(t.lines)] + "\n")
	}
	if t.partial.Len() > 0 {
		b.WriteString("    " + t.partial.String() + "\n")
	}
	if b.Len() == 0 {
		return "    (none)\n"
	}
	return b.String()
}
