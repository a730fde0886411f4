//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package runner

import "os"

// IsTerminal reports whether f is a terminal (always false on this
// platform).
func IsTerminal(*os.File) bool { return false }
