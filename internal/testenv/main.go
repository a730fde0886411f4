package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// attachEnv names the kubeconfig of the control plane a pass on a further
// store runs on: its parent's.
const attachEnv = "VIGIL_TEST_CONTROL_PLANE"

// shared is the package's control plane, when Main runs its tests: the
// first Start boots it, Stop hands it back, and the next Start resets it
// to what it held once started. One test holds it at a time; a Start
// while it is held boots a control plane of its own.
var shared struct {
	sync.Mutex
	enabled bool
	cluster *Cluster // once booted
	held    bool
	used    bool // held since its last reset
	// attach is the kubeconfig of the parent's control plane, in a pass
	// on a further store.
	attach string
}

// Main runs a package's tests with one control plane shared by all of
// them, one after the other (Start and Stop), and exits. Call it from the
// package's TestMain.
func Main(m *testing.M) {
	os.Exit(runMain(m, false))
}

// MainOnEachStore is Main for the suites that run a whole manager on its
// ping store: it runs the package's tests on each store that
// $VIGIL_TEST_STORE lists ("sqlite,postgres" under `make test`), one pass
// after the other, on the same control plane, reset between them. A
// further pass runs in a process of its own (Ginkgo runs a suite once per
// process), the lines of its output marked with its store, such as
// "[postgres] ".
func MainOnEachStore(m *testing.M) {
	os.Exit(runMain(m, true))
}

func runMain(m *testing.M, eachStore bool) int {
	list, err := Stores()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	shared.Lock()
	shared.enabled = true
	shared.attach = os.Getenv(attachEnv)
	shared.Unlock()
	// This process's pass is on the first store; StoreDSN reads it.
	if err := os.Setenv(StoreEnv, list[0]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	code := m.Run()
	if eachStore && shared.attach == "" {
		for _, store := range list[1:] {
			code = max(code, runPass(store))
		}
	}
	if err := stopShared(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stopping the package's control plane:", err)
		code = max(code, 1)
	}
	return code
}

// runPass runs this test binary again, with its arguments, on store and
// the package's control plane (reset), and returns its exit code.
func runPass(store string) int {
	env := append(os.Environ(), StoreEnv+"="+store)
	kubeconfig, err := sharedForPass(context.Background())
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: the control plane for the pass on %s: %v\n", store, err)
		return 1
	}
	if kubeconfig != "" {
		defer func() { _ = os.Remove(kubeconfig) }()
		env = append(env, attachEnv+"="+kubeconfig)
	}
	prefix := "[" + store + "] "
	out := &prefixer{w: os.Stdout, prefix: prefix}
	exited := make(chan error, 1)
	go func() {
		// The pass dies with this process (see controlplane's
		// sysProcAttr): this goroutine keeps the thread that starts it.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(os.Args[0], os.Args[1:]...) //nolint:gosec,noctx // this very test binary, bounded by its own -test.timeout
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		exited <- cmd.Run()
	}()
	err = <-exited
	out.flush()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit):
		fmt.Fprintf(os.Stdout, "%sFAIL: the pass on %s: %v\n", prefix, store, err)
		return max(exit.ExitCode(), 1)
	default:
		fmt.Fprintf(os.Stdout, "%sFAIL: the pass on %s did not run: %v\n", prefix, store, err)
		return 1
	}
}

// takeShared hands the package's control plane to a test, booting or
// resetting it first; ok is false when there is none to take (Main does
// not run this package, or another test holds it).
func takeShared(ctx context.Context) (c *Cluster, ok bool, err error) {
	shared.Lock()
	defer shared.Unlock()
	switch {
	case shared.attach != "":
		c, err := attach(shared.attach)
		return c, true, err
	case !shared.enabled || shared.held:
		return nil, false, nil
	}
	if err := readyShared(ctx); err != nil {
		return nil, true, err
	}
	shared.held, shared.used = true, true
	return shared.cluster, true, nil
}

// readyShared boots the package's control plane, or resets it if a test
// has used it since. Call it holding shared's lock.
func readyShared(ctx context.Context) error {
	if shared.cluster == nil {
		c, err := boot(ctx, startOptions{crds: true})
		if err != nil {
			return err
		}
		if c.fresh, err = takeSnapshot(ctx, c.Config); err != nil {
			return errors.Join(err, c.cp.Stop())
		}
		c.shared = true
		shared.cluster = c
		return nil
	}
	if shared.used {
		began := time.Now()
		if err := shared.cluster.reset(ctx); err != nil {
			return err
		}
		countStart("reset", time.Since(began))
		shared.used = false
	}
	return nil
}

func giveBackShared(c *Cluster) {
	shared.Lock()
	defer shared.Unlock()
	if shared.cluster == c {
		shared.held = false
	}
}

// sharedForPass resets the package's control plane for a further pass and
// writes its administrator's kubeconfig; "" when no test started it.
func sharedForPass(ctx context.Context) (string, error) {
	shared.Lock()
	defer shared.Unlock()
	if shared.cluster == nil {
		return "", nil
	}
	if err := readyShared(ctx); err != nil {
		return "", err
	}
	// The pass's tests use it as they would their own.
	shared.used = true
	f, err := os.CreateTemp("", "vigil-pass-*.kubeconfig")
	if err != nil {
		return "", err
	}
	_ = f.Close()
	return f.Name(), shared.cluster.WriteKubeconfig(f.Name())
}

func stopShared() error {
	shared.Lock()
	defer shared.Unlock()
	if shared.cluster == nil {
		return nil
	}
	err := shared.cluster.cp.Stop()
	shared.cluster = nil
	return err
}

// prefixer writes each line with a prefix.
type prefixer struct {
	mu      sync.Mutex
	w       io.Writer
	prefix  string
	partial []byte
}

func (p *prefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.partial[:i]); err != nil {
			return 0, err
		}
		p.partial = p.partial[i+1:]
	}
}

func (p *prefixer) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.partial) > 0 {
		_, _ = fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.partial)
		p.partial = nil
	}
}
