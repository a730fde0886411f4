package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// BenchmarkStoreBytesPerCheck: the bytes one check makes the store hold
// at each of its per-check bounds, so that what a namespace can make the
// store hold is a number (its checks times these): its ping log full of
// pings with bodies (the log limit, 100, and the body budget, 256 KiB),
// and then what each flip it keeps adds (at most --flip-limit, 10,000),
// with and without one delivery per Channel. The embedded store always;
// PostgreSQL too when $VIGIL_TEST_STORE names it.
//
//	VIGIL_TEST_STORE=sqlite,postgres go test ./internal/store -run x -bench StoreBytesPerCheck -benchtime 1x
func BenchmarkStoreBytesPerCheck(b *testing.B) {
	backends, err := testenv.Stores()
	if err != nil {
		b.Fatal(err)
	}
	for _, backend := range backends {
		for _, channels := range []int{0, 10} {
			b.Run(fmt.Sprint(backend, "/", channels, "-channels"), func(b *testing.B) {
				for range b.N {
					log, perFlip := storeBytesPerCheck(b, backend, channels)
					b.ReportMetric(float64(log), "B-full-log")
					b.ReportMetric(perFlip, "B/flip")
				}
			})
		}
	}
}

// storeBytesPerCheck fills a check's ping log, then flips it flips times,
// and measures the bytes the database uses after each: SQLite's pages in
// use (freed pages, which SQLite reuses, left out); PostgreSQL's tables
// with their indexes after VACUUM FULL (what the rows take, packed, as
// autovacuum keeps a table in its steady state).
func storeBytesPerCheck(b *testing.B, backend string, channels int) (logBytes int64, perFlip float64) {
	const flips = 1000
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "vigil.db")
	dsn := "sqlite:" + path
	if backend == "postgres" {
		dsn = testenv.PostgresDatabase(b)
	}
	tg := store.Target{UID: types.UID("uid-bytes"), Namespace: "bench", Name: "bytes",
		Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}}
	for i := range channels {
		tg.Channels = append(tg.Channels, fmt.Sprint("channel-with-a-long-name-", i))
	}
	opts := store.Options{Flapping: store.FlapPolicy{Limit: -1}}
	open := func() *store.Store {
		s, err := store.Open(ctx, dsn, opts)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	used := func() int64 { // closed: the write-ahead log is folded in
		if backend == "postgres" {
			db, err := sql.Open("pgx", dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, "VACUUM FULL"); err != nil {
				b.Fatal(err)
			}
			var bytes int64
			if err := db.QueryRowContext(ctx, `SELECT SUM(pg_total_relation_size(relid)) FROM pg_stat_user_tables`).Scan(&bytes); err != nil {
				b.Fatal(err)
			}
			return bytes
		}
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		var pages, free, size int64
		for q, v := range map[string]*int64{"page_count": &pages, "freelist_count": &free, "page_size": &size} {
			if err := db.QueryRowContext(ctx, "PRAGMA "+q).Scan(v); err != nil {
				b.Fatal(err)
			}
		}
		return (pages - free) * size
	}
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	ping := func(s *store.Store, kind monitor.PingKind, body string) {
		at = at.Add(time.Second)
		p := store.Ping{Kind: kind, At: at, Scheme: "https", Method: "POST", RemoteAddr: "10.0.0.1", UA: "curl/8.5.0", Body: []byte(body)}
		if _, err := s.RecordPing(ctx, tg, p); err != nil {
			b.Fatal(err)
		}
	}
	drain := func(s *store.Store) {
		for {
			due, err := s.DueDeliveries(ctx, at.Add(time.Hour), store.DueQuery{Limit: 1000})
			if err != nil {
				b.Fatal(err)
			}
			if len(due) == 0 {
				return
			}
			var out []store.Outcome
			for _, d := range due {
				out = append(out, store.Outcome{CheckUID: d.CheckUID, FlipN: d.Flip.N, Channel: d.Channel,
					State: store.DeliveryDelivered, Attempted: true})
			}
			if err := s.RecordOutcomes(ctx, out); err != nil {
				b.Fatal(err)
			}
		}
	}

	s := open()
	ping(s, monitor.PingSuccess, "")
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	empty := used()
	s = open()
	body := strings.Repeat("backup log line\n", 6250) // 100,000 bytes, the ping body limit
	for range 100 {
		ping(s, monitor.PingSuccess, body)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	full := used()
	// Flips are measured from a log full of pings without bodies, as the
	// flips' own pings are (twice the log: it is cut back every 16 pings),
	// so that the log's size does not move meanwhile.
	s = open()
	for range 200 {
		ping(s, monitor.PingSuccess, "")
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	before := used()
	s = open()
	for i := range flips {
		kind := monitor.PingFail
		if i%2 == 1 {
			kind = monitor.PingSuccess
		}
		ping(s, kind, "")
		drain(s) // a Channel is given a check's flips one at a time, in order
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return full - empty, float64(used()-before) / flips
}
