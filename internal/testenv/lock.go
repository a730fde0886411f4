package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// WithStartLock runs fn holding one of the machine's start slots: one per
// two cores, shared by every test process of the machine (files locked
// with flock in the temporary directory, which `make test` makes its
// own). A control plane starts holding one, and so does a test's build:
// a start is the heaviest minute of a control plane's life, and on a
// loaded machine many at once, or one beside a compile, made
// kube-apiserver miss its start timeout.
func WithStartLock(ctx context.Context, fn func() error) error {
	release, err := holdStartSlot(ctx)
	if err != nil {
		return err
	}
	defer release()
	return fn()
}

// startSlots is how many starts may run at once.
func startSlots() int { return max(1, runtime.NumCPU()/2) }

// holdStartSlot waits for a free start slot and takes it.
func holdStartSlot(ctx context.Context) (release func(), err error) {
	dir := filepath.Join(os.TempDir(), "vigil-testenv-slots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	n := startSlots()
	files := make([]*os.File, n)
	for i := range files {
		if files[i], err = os.OpenFile(filepath.Join(dir, fmt.Sprintf("start-%d", i)), os.O_CREATE|os.O_RDWR, 0o644); err != nil {
			closeAll(files)
			return nil, err
		}
	}
	// A slot is free when its lock can be taken at once; a process that
	// dies lets go of its lock with its files.
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		for i, f := range files {
			if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
				files[i] = nil
				closeAll(files)
				return func() { _ = f.Close() }, nil
			}
		}
		select {
		case <-ctx.Done():
			closeAll(files)
			return nil, fmt.Errorf("testenv: waiting for a start slot: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			_ = f.Close()
		}
	}
}
