// Package benchutil holds what the benchmark programs under hack/bench
// share: running operations on concurrent workers and timing them, and
// waiting for the controller to bring checks to a state.
package benchutil

import (
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Parallel runs op(0..n-1) on concurrency workers and returns the first
// error.
func Parallel(n, concurrency int, op func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range concurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return first
}

// Measure runs op as Parallel does and returns the rate per second and each
// operation's latency.
func Measure(n, concurrency int, op func(i int) error) (float64, []time.Duration, error) {
	lat := make([]time.Duration, n)
	start := time.Now()
	err := Parallel(n, concurrency, func(i int) error {
		t := time.Now()
		err := op(i)
		lat[i] = time.Since(t)
		return err
	})
	return float64(n) / time.Since(start).Seconds(), lat, err
}

// Percentile returns the p-th percentile of d (which it does not change),
// rounded to 100 µs.
func Percentile(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100].Round(100 * time.Microsecond)
}

// TempStore names a fresh ping store in a temporary directory.
func TempStore() string {
	dir, err := os.MkdirTemp("", "vigil-bench-")
	if err != nil {
		panic(err)
	}
	return "sqlite:" + filepath.Join(dir, "vigil.db")
}
