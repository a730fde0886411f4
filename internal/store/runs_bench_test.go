package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/store"
)

// BenchmarkRunStats: the reads behind run statistics in a project of
// 10,000 checks that each keep 200 runs over the last 14 days (2 million
// runs; the last 50 of each still in its ping log of 100 pings, a start
// and an end each, the rest kept as runs rows): one check's history of a week and the one before (its page, the
// stats API), a board's page of 100 checks, and the whole project's week
// (a board sorted by success rate or p95), on each backend.
//
//	go test ./internal/store -run x -bench RunStats -benchtime 20x
func BenchmarkRunStats(b *testing.B) { onEachBackend(b, benchmarkRunStats) }

const (
	benchChecks = 10_000
	benchRuns   = 200
)

func benchmarkRunStats(b *testing.B, dsn string) {
	ctx := context.Background()
	now := time.Now()
	db, err := store.MigrateTo(ctx, dsn, 13)
	if err != nil {
		b.Fatal(err)
	}
	fillRuns(b, db, now, !strings.HasPrefix(dsn, "sqlite:"))
	if err := db.Close(); err != nil {
		b.Fatal(err)
	}
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	week := 7 * 24 * time.Hour
	b.Run("one check, two weeks", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			h, err := s.History(ctx, types.UID(fmt.Sprint("uid-", i%benchChecks)), now.Add(-2*week))
			if err != nil || len(h.Runs) != benchRuns {
				b.Fatalf("%d runs, %v", len(h.Runs), err)
			}
		}
	})
	b.Run("a board's page of 100 checks, a week", func(b *testing.B) {
		uids := make([]types.UID, 100)
		for i := 0; b.Loop(); i++ {
			for j := range uids {
				uids[j] = types.UID(fmt.Sprint("uid-", (i*100+j)%benchChecks))
			}
			page, err := s.HistoriesOf(ctx, uids, now.Add(-week))
			if err != nil || len(page) != len(uids) {
				b.Fatalf("%d checks, %v", len(page), err)
			}
		}
	})
	b.Run("a project of 10,000 checks, a week", func(b *testing.B) {
		for b.Loop() {
			all, err := s.HistoriesIn(ctx, "bench", now.Add(-week))
			if err != nil || len(all) != benchChecks {
				b.Fatalf("%d checks, %v", len(all), err)
			}
		}
	})
}

// fillRuns writes the checks and their runs straight into the database:
// through RecordPing, two million pings would take minutes.
func fillRuns(b *testing.B, db *sql.DB, now time.Time, dollars bool) {
	b.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	insert := func(stmt string, rows [][]any) {
		if len(rows) == 0 {
			return
		}
		var q strings.Builder
		q.WriteString(stmt + " VALUES ")
		args := make([]any, 0, len(rows)*len(rows[0]))
		for i, r := range rows {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(")
			for j, v := range r {
				if j > 0 {
					q.WriteString(", ")
				}
				args = append(args, v)
				if dollars {
					fmt.Fprintf(&q, "$%d", len(args))
				} else {
					q.WriteString("?")
				}
			}
			q.WriteString(")")
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			b.Fatal(err)
		}
	}
	const logged = 100 // the ping log's default
	var checks, runs, pings [][]any
	for c := range benchChecks {
		uid := fmt.Sprint("uid-", c)
		checks = append(checks, []any{uid, "bench", fmt.Sprint("c", c), 1, 2 * benchRuns})
		for r := range benchRuns {
			n := 2 * (r + 1)
			ended := now.Add(-time.Duration(benchRuns-r) * 14 * 24 * time.Hour / benchRuns)
			took := time.Duration(30+r%60) * time.Second
			if n > 2*benchRuns-logged {
				kind := "success"
				if r%10 == 9 {
					kind = "fail"
				}
				pings = append(pings, []any{uid, n - 1, "start", ended.Add(-took).UnixMicro(), nil},
					[]any{uid, n, kind, ended.UnixMicro(), took.Microseconds()})
			} else {
				runs = append(runs, []any{uid, n, ended.UnixMicro(), r%10 == 9, took.Microseconds()})
			}
			if len(runs) >= 1000 {
				insert(`INSERT INTO runs (check_uid, n, ended, failed, duration)`, runs)
				runs = runs[:0]
			}
			if len(pings) >= 1000 {
				insert(`INSERT INTO pings (check_uid, n, kind, created, duration)`, pings)
				pings = pings[:0]
			}
		}
		if len(checks) == 1000 {
			insert(`INSERT INTO checks (uid, namespace, name, version, n_pings)`, checks)
			checks = checks[:0]
		}
	}
	insert(`INSERT INTO runs (check_uid, n, ended, failed, duration)`, runs)
	insert(`INSERT INTO pings (check_uid, n, kind, created, duration)`, pings)
	insert(`INSERT INTO checks (uid, namespace, name, version, n_pings)`, checks)
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "ANALYZE"); err != nil {
		b.Fatal(err)
	}
}
