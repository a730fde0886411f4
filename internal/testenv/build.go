package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildVigil builds the vigil command of the tree at src ("" for this
// repository) into the file out, with env added to the environment (make's
// build configuration, CGO_ENABLED and GOFLAGS, comes through it).
// -trimpath: a tree in a new directory each run (a release's, from git
// archive) still finds its packages in the build cache.
func BuildVigil(ctx context.Context, src, out string, env ...string) error {
	if src == "" {
		root, err := RepoRoot()
		if err != nil {
			return err
		}
		src = root
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-o", out, "./cmd/vigil")
	cmd.Dir, cmd.Env = src, append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building vigil in %s: %w\n%s", filepath.Clean(src), err, b)
	}
	return nil
}
