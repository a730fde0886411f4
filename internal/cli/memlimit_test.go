package cli

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	for _, tc := range []struct {
		name         string
		env, autoEnv string
		container    memlimit.Provider
		want         int64
	}{
		{name: "90% of the container's limit", container: memlimit.Limit(512 << 20), want: 512 << 20 * 9 / 10},
		{name: "no limit: none", container: func() (uint64, error) { return 0, memlimit.ErrNoLimit }, want: math.MaxInt64},
		{name: "AUTOMEMLIMIT changes the share", autoEnv: "0.5", container: memlimit.Limit(512 << 20), want: 256 << 20},
		{name: "GOMEMLIMIT wins", env: "100MiB", container: memlimit.Limit(512 << 20), want: 100 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tc.env)
			if tc.autoEnv != "" {
				t.Setenv("AUTOMEMLIMIT", tc.autoEnv)
			}
			if tc.env != "" {
				debug.SetMemoryLimit(100 << 20) // as the runtime read it at start
			}
			got, err := SetMemoryLimit(tc.container)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || debug.SetMemoryLimit(-1) != tc.want {
				t.Errorf("limit %d (runtime %d), want %d", got, debug.SetMemoryLimit(-1), tc.want)
			}
		})
	}
}
