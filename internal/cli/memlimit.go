package cli

import (
	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memoryLimitRatio is the share of the container's memory limit that the
// manager's Go heap aims to stay under (GOMEMLIMIT): the collector works
// harder as the heap nears it, instead of the kernel killing the manager
// at the limit. The rest is for what the Go runtime does not count as
// heap: goroutine stacks, the SQLite page cache's mappings, buffers in
// flight.
const memoryLimitRatio = 0.9

// SetMemoryLimit sets the Go runtime's soft memory limit to
// memoryLimitRatio of what provider says the process may use (the
// container's cgroup limit), and returns it. An explicit GOMEMLIMIT in the
// environment wins, and AUTOMEMLIMIT=off (or a ratio, such as 0.8) changes
// the rule. github.com/KimMachineGun/automemlimit reads cgroup v1 and v2
// limits, nested ones included, which is more than a
// resourceFieldRef-fed GOMEMLIMIT could do (no ratio, and nothing for the
// one-file install or podman).
func SetMemoryLimit(provider memlimit.Provider) (int64, error) {
	return memlimit.Set(memlimit.WithRatio(memoryLimitRatio), memlimit.WithProvider(provider))
}
