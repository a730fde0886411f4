package dashboard

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/runstats"
)

func TestRunStatsCacheReadsOnceForBoardsAskingAtOnce(t *testing.T) {
	var rc runStatsCache
	var reads atomic.Int32
	release := make(chan struct{})
	compute := func(context.Context) (map[types.UID]runstats.Stats, error) { //nolint:unparam // the signature rc.of takes
		reads.Add(1)
		<-release
		return map[types.UID]runstats.Stats{"a": {Runs: 3}}, nil
	}
	now := time.Now()
	var wg sync.WaitGroup
	got := make([]int, 8)
	for i := range got {
		wg.Go(func() {
			stats, err := rc.of(context.Background(), "team-a", now, compute)
			if err != nil {
				t.Error(err)
			}
			got[i] = stats["a"].Runs
		})
	}
	// Let the boards pile up behind the first reading, then end it.
	for reads.Load() < 1 {
		runtime.Gosched()
	}
	for range 1000 {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	for i, n := range got {
		if n != 3 {
			t.Errorf("board %d saw %d runs", i, n)
		}
	}
	// Later boards are served what is held; another project reads its own.
	if _, err := rc.of(context.Background(), "team-a", now.Add(time.Second), compute); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.of(context.Background(), "team-b", now, func(context.Context) (map[types.UID]runstats.Stats, error) { reads.Add(1); return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 2 {
		t.Errorf("%d readings for 8 boards of a project asking at once and one of another, want 2", n)
	}
}

func TestRunStatsCacheBoardThatLeavesStopsWaiting(t *testing.T) {
	var rc runStatsCache
	release := make(chan struct{})
	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := rc.of(ctx, "team-a", time.Now(), func(read context.Context) (map[types.UID]runstats.Stats, error) {
		if _, ok := read.Deadline(); !ok {
			t.Error("the shared reading has no deadline")
		}
		<-release
		return nil, nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the board's own cancellation", err)
	}
}
