package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// newInstallCmd copies the running binary to a path, so an init container
// from Vigil's image (which has no shell or cp) can hand `vigil run` to a
// job's own container through an emptyDir volume.
func newInstallCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "install PATH",
		Short:   "Copy this vigil binary to PATH (for init containers that wrap a job with vigil run)",
		Example: `  initContainers: [{name: vigil, image: vigil:dev, args: ["install", "/opt/vigil/vigil"], volumeMounts: [...]}]`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			self, err := os.Executable()
			if err != nil {
				return err
			}
			src, err := os.Open(self)
			if err != nil {
				return err
			}
			defer src.Close()
			if err := os.MkdirAll(filepath.Dir(args[0]), 0o755); err != nil {
				return err
			}
			dst, err := os.OpenFile(args[0], os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o755)
			if err != nil {
				return err
			}
			if _, err := io.Copy(dst, src); err != nil {
				_ = dst.Close()
				return err
			}
			if err := dst.Close(); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s\n", args[0])
			return nil
		},
	}
}
