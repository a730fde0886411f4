// Package version tells which Vigil this is, for User-Agent headers.
package version

import (
	"runtime/debug"
	"sync"
)

// Override is set by builds that know their version:
// -ldflags "-X github.com/vigil-operator/vigil/internal/version.Override=v1.2.3".
var Override string

// Get returns Override, else the main module's version from the build
// info, else "" (a development build).
var Get = sync.OnceValue(func() string {
	if Override != "" {
		return Override
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return ""
})

// UserAgent is the User-Agent of Vigil's own pings: "vigil/<version>", or
// "vigil" for a development build.
func UserAgent() string {
	if v := Get(); v != "" {
		return "vigil/" + v
	}
	return "vigil"
}
