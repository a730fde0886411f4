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
	eachProcess(names, "stat", func(name, text string) {
		if d, ok := statCPU(text); ok {
			out[name] += d
		}
	})
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
	eachProcess(names, "status", func(name, text string) {
		out[name] += statusBytes(text, "VmRSS:")
	})
	return out
}

// PeakRSS is this process's largest resident memory so far, in bytes
// (VmHWM): what a container limit must hold.
func PeakRSS() int64 { return selfStatus("VmHWM:") }

// SelfRSS is this process's resident memory now, in bytes (VmRSS).
func SelfRSS() int64 { return selfStatus("VmRSS:") }

// selfStatus is a field of /proc/self/status given in kB, in bytes.
func selfStatus(field string) int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	return statusBytes(string(raw), field)
}

// statusBytes is a /proc/<pid>/status field given in kB, in bytes.
func statusBytes(text, field string) int64 {
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// eachProcess calls fn with the command name and the text of
// /proc/<pid>/<file> of every process whose command name (/proc/<pid>/comm)
// is in names.
func eachProcess(names []string, file string, fn func(name, text string)) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		comm, err := os.ReadFile(filepath.Join(dir, "comm"))
		if err != nil || !want[strings.TrimSpace(string(comm))] {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			continue
		}
		fn(strings.TrimSpace(string(comm)), string(raw))
	}
}
