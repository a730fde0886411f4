package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// BenchmarkPrune: the minute's prune of an embedded store whose outbox
// holds 1,000,000 delivery rows (100,000 flips of 1,000 checks, 10
// Channels each), when none is old enough to go (every minute's case) and
// when all are (a fleet's 90-day boundary). Meanwhile a client pings one
// check every 2 ms; the prune shares the store's one writer with those
// pings, so what it costs them is what matters: the slowest ping during
// the prune.
//
//	go test ./internal/store -run x -bench Prune -benchtime 1x
func BenchmarkPrune(b *testing.B) {
	for _, old := range []bool{false, true} {
		b.Run(map[bool]string{false: "nothing-to-prune", true: "all-old"}[old], func(b *testing.B) {
			for range b.N {
				took, slowest, p99 := prune(b, old)
				b.ReportMetric(float64(took.Milliseconds()), "ms-prune")
				b.ReportMetric(float64(slowest.Microseconds())/1000, "ms-slowest-ping")
				b.ReportMetric(float64(p99.Microseconds())/1000, "ms-p99-ping")
			}
		})
	}
}

func prune(b *testing.B, old bool) (took, slowest, p99 time.Duration) {
	const checks, flipsEach, channels = 1000, 100, 10
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "vigil.db")
	dsn := "sqlite:" + path
	db, err := store.MigrateTo(ctx, dsn, 0)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	created := now.Add(-time.Hour)
	if old {
		created = now.Add(-100 * 24 * time.Hour)
	}
	series := func(n int) string {
		return fmt.Sprintf(`WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i WHERE n < %d)`, n-1)
	}
	for _, stmt := range []string{
		`INSERT INTO checks (uid, namespace, name, version) ` + series(checks) + ` SELECT 'u' || n, 'bench', 'c' || n, 1 FROM i`,
		`INSERT INTO flips (check_uid, n, created, up, from_state, to_state) ` + series(checks*flipsEach) +
			fmt.Sprintf(` SELECT 'u' || (n / %d), n %% %d + 1, %d, n %% 2 = 0, 'up', 'down' FROM i`, flipsEach, flipsEach, created.UnixMicro()),
		`INSERT INTO channels (id, namespace, name) ` + series(channels) + ` SELECT n + 1, 'bench', 'channel-with-a-long-name-' || n FROM i`,
		`INSERT INTO deliveries (check_uid, flip_n, channel_id, state, next_attempt, namespace) ` + series(checks*flipsEach*channels) +
			fmt.Sprintf(` SELECT 'u' || (n / %d), (n / %d) %% %d + 1, n %% %d + 1, 'delivered', %d, 'bench' FROM i`,
				flipsEach*channels, channels, flipsEach, channels, created.UnixMicro()),
		`ANALYZE`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			b.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	tg := store.Target{UID: types.UID("pinged"), Namespace: "bench", Name: "pinged", Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}}
	ping := func() time.Duration {
		began := time.Now()
		if _, err := s.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingSuccess, At: time.Now(), Method: "GET", Scheme: "http"}); err != nil {
			b.Fatal(err)
		}
		return time.Since(began)
	}
	ping()
	done := make(chan struct{})
	var latencies []time.Duration
	go func() {
		defer close(done)
		began := time.Now()
		if err := s.Prune(ctx, now.Add(-90*24*time.Hour)); err != nil {
			b.Error(err)
		}
		took = time.Since(began)
	}()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		case <-time.After(2 * time.Millisecond):
			latencies = append(latencies, ping())
		}
	}
	ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		b.Fatal(err)
	}
	defer ro.Close()
	var left int
	if err := ro.QueryRowContext(ctx, `SELECT COUNT(*) FROM deliveries`).Scan(&left); err != nil {
		b.Fatal(err)
	}
	if want := map[bool]int{false: checks * flipsEach * channels, true: 0}[old]; left != want {
		b.Fatalf("%d deliveries left after the prune, want %d", left, want)
	}
	slices.Sort(latencies)
	if len(latencies) == 0 {
		latencies = []time.Duration{0}
	}
	return took, latencies[len(latencies)-1], latencies[len(latencies)*99/100]
}
