package benchutil

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, which Linux fixes at 100 for /proc/<pid>/stat.
const clockTicks = 100

// CPUTimes returns the CPU time (user+system) used so far by this process
// ("bench") and by every process whose command name is in names (for
// example "kube-apiserver" and "etcd"), summed per name. It reads /proc and
// returns an empty map where there is none.
func CPUTimes(names ...string) map[string]time.Duration {
	out := map[string]time.Duration{}
	if raw, err := os.ReadFile("/proc/self/stat"); err == nil {
		if d, ok := statCPU(string(raw)); ok {
			out["bench"] = d
		}
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(raw)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open || !want[s[open+1:closing]] {
			continue
		}
		if d, ok := statCPU(s); ok {
			out[s[open+1:closing]] += d
		}
	}
	return out
}

// statCPU reads utime+stime out of the text of /proc/<pid>/stat.
func statCPU(s string) (time.Duration, bool) {
	closing := strings.LastIndexByte(s, ')')
	if closing < 0 {
		return 0, false
	}
	// Fields after the command: state is field 3; utime and stime are 14
	// and 15, so 11 and 12 after the state.
	f := strings.Fields(s[closing+1:])
	if len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+st) * time.Second / clockTicks, true
}

// RSS returns the resident memory, in bytes, of every process whose
// command name is in names, summed per name, read from /proc/<pid>/status
// (VmRSS).
func RSS(names ...string) map[string]int64 {
	out := map[string]int64{}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/status")
	for _, path := range stats {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var name string
		var rss int64
		for line := range strings.SplitSeq(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "Name:"); ok {
				name = strings.TrimSpace(v)
			}
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err == nil {
					rss = kb << 10
				}
			}
		}
		if want[name] {
			out[name] += rss
		}
	}
	return out
}
