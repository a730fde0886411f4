package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// BenchmarkRecordPing: pings to 10,000 checks from 64 goroutines at once,
// each acknowledged after its transaction is on disk.
//
//	go test ./internal/store -run x -bench RecordPing
func BenchmarkRecordPing(b *testing.B) {
	s, err := store.Open(context.Background(), "sqlite:"+b.TempDir()+"/vigil.db", store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	targets := make([]store.Target, 10_000)
	for i := range targets {
		targets[i] = store.Target{UID: types.UID(fmt.Sprint("uid-", i)), Namespace: "bench", Name: fmt.Sprint("c", i),
			Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}}
	}
	var next atomic.Int64
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			if _, err := s.RecordPing(context.Background(), targets[i%int64(len(targets))],
				store.Ping{Kind: monitor.PingSuccess, At: time.Now(), Method: "GET", Scheme: "http", RemoteAddr: "10.0.0.1", UA: "curl/8"}); err != nil {
				b.Error(err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pings/s")
}
