package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// BenchmarkChecksIn: a project's read of what the store knows of its
// checks (a list, a board, a scrape), in a fleet of 100,000 checks over
// 1,000 namespaces, on each backend.
//
//   - first: the first read of a namespace after the store opens (and the
//     one every mirrorRebuild);
//
//   - after-pings: a read after 1,000 pings to checks all over the fleet,
//     as between two refreshes of a board.
//
//     go test ./internal/store -run x -bench ChecksIn -benchtime 20x
func BenchmarkChecksIn(b *testing.B) {
	onEachBackend(b, func(b *testing.B, dsn string) {
		const checks, namespaces = 100_000, 1_000
		ctx := context.Background()
		s, err := store.Open(ctx, dsn, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		targets := make([]store.Target, checks)
		for i := range targets {
			targets[i] = store.Target{UID: types.UID(fmt.Sprint("uid-", i)), Namespace: fmt.Sprintf("team-%03d", i%namespaces),
				Name: fmt.Sprint("c", i), Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}}
		}
		ping := func(tg store.Target) {
			if _, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingSuccess, At: time.Now(), Method: "GET"}); err != nil {
				b.Error(err) // from many goroutines: not Fatal
			}
		}
		parallel(b, checks, func(i int) { ping(targets[i]) })
		b.Run("first", func(b *testing.B) {
			for i := range b.N {
				b.StopTimer()
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				if s, err = store.Open(ctx, dsn, store.Options{}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				observed, err := s.ChecksIn(ctx, targets[i%namespaces].Namespace)
				if err != nil || observed.Len() != checks/namespaces {
					b.Fatalf("%d rows, %v", observed.Len(), err)
				}
			}
		})
		b.Run("after-pings", func(b *testing.B) {
			for i := range b.N {
				b.StopTimer()
				parallel(b, 1000, func(int) { ping(targets[rand.IntN(checks)]) })
				b.StartTimer()
				observed, err := s.ChecksIn(ctx, targets[i%namespaces].Namespace)
				if err != nil || observed.Len() != checks/namespaces {
					b.Fatalf("%d rows, %v", observed.Len(), err)
				}
			}
		})
	})
}

// parallel calls f(0..n-1) from 64 goroutines.
func parallel(b *testing.B, n int, f func(i int)) {
	b.Helper()
	var next atomic.Int64
	done := make(chan struct{})
	for range 64 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				f(i)
			}
		}()
	}
	for range 64 {
		<-done
	}
}
