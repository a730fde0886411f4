// Command vigil is Vigil's single binary: the manager that runs in the
// cluster, the local development environment, key management, and the
// helpers jobs use to report (see `vigil --help`).
package main

import (
	"os"

	"github.com/vigil-operator/vigil/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:]))
}
