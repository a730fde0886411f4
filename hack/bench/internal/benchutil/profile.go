package benchutil

import (
	"os"
	"runtime"
	"runtime/pprof"
)

// WriteHeapProfile writes this process's heap profile to path (read it
// with go tool pprof -sample_index=inuse_space).
func WriteHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// LiveHeap is this process's heap in use after two collections, in bytes:
// what its live objects hold, whenever garbage last ran.
func LiveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}
