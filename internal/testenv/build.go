package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// VigilEnv names the variable that gives the vigil binary of this tree:
// `make test` builds it before the tests run.
const VigilEnv = "VIGIL_BIN"

var vigilBuild struct {
	sync.Once
	path string
	err  error
}

// Vigil returns the vigil binary of this tree, for a test that runs it as
// a process: $VIGIL_BIN, or else one this process builds once, under the
// start lock, into the repository's bin/test (a test run from an editor).
func Vigil(ctx context.Context) (string, error) {
	if path := os.Getenv(VigilEnv); path != "" {
		return path, nil
	}
	vigilBuild.Do(func() {
		vigilBuild.path, vigilBuild.err = buildVigil(ctx)
	})
	return vigilBuild.path, vigilBuild.err
}

// buildVigil builds the vigil command into bin/test/vigil, by way of a
// file of its own and a rename: another test process may be running the
// binary there.
func buildVigil(ctx context.Context) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	out := filepath.Join(root, "bin", "test", "vigil")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".vigil-*")
	if err != nil {
		return "", err
	}
	_ = tmp.Close()
	defer func() { _ = os.Remove(tmp.Name()) }()
	err = WithStartLock(ctx, func() error {
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-o", tmp.Name(), "./cmd/vigil")
		cmd.Dir = root
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("building vigil: %w\n%s", err, b)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return out, os.Rename(tmp.Name(), out)
}

// PreviousRelease returns the release test/upgrade upgrades from and its
// vigil binary, which hack/previous-release.sh builds once and keeps
// (`make test` builds it before the tests run; from an editor, the first
// test to ask builds it, under the start lock).
func PreviousRelease(ctx context.Context) (rev, bin string, err error) {
	root, err := RepoRoot()
	if err != nil {
		return "", "", err
	}
	var out []byte
	err = WithStartLock(ctx, func() error {
		cmd := exec.CommandContext(ctx, filepath.Join(root, "hack", "previous-release.sh"), "build")
		cmd.Dir = root
		cmd.Stderr = os.Stderr
		out, err = cmd.Output()
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("hack/previous-release.sh build: %w", err)
	}
	fields := strings.Fields(string(out))
	if len(fields) != 2 {
		return "", "", fmt.Errorf("hack/previous-release.sh build said %q, want a revision and a path", out)
	}
	return fields[0], fields[1], nil
}
