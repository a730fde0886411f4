package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // "pgx", for ANALYZE
	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// BenchmarkRecordPing: pings to 10,000 checks from 64 goroutines at once,
// each acknowledged after its transaction is durable, on each backend (a
// PostgreSQL server on this machine, fsync on).
//
//	go test ./internal/store -run x -bench RecordPing
func BenchmarkRecordPing(b *testing.B) {
	onEachBackend(b, func(b *testing.B, dsn string) { benchmarkRecordPing(b, dsn, 10_000) })
}

// BenchmarkRecordPingHot: the same, all to one check, whose log is full
// (cut back every 16 pings) after its first hundred.
//
//	go test ./internal/store -run x -bench RecordPingHot
func BenchmarkRecordPingHot(b *testing.B) {
	onEachBackend(b, func(b *testing.B, dsn string) { benchmarkRecordPing(b, dsn, 1) })
}

// onEachBackend runs bench on a fresh SQLite file and on a fresh database
// of a PostgreSQL server on this machine.
func onEachBackend(b *testing.B, bench func(b *testing.B, dsn string)) {
	b.Run("sqlite", func(b *testing.B) {
		bench(b, "sqlite:"+b.TempDir()+"/vigil.db")
	})
	b.Run("postgres", func(b *testing.B) {
		bench(b, testenv.PostgresDatabase(b))
	})
}

func benchmarkRecordPing(b *testing.B, dsn string, checks int) {
	s, err := store.Open(context.Background(), dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	targets := make([]store.Target, checks)
	for i := range targets {
		targets[i] = store.Target{UID: types.UID(fmt.Sprint("uid-", i)), Namespace: "bench", Name: fmt.Sprint("c", i),
			Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}}
	}
	var next atomic.Int64
	b.SetParallelism(32) // 64 goroutines on 2 cores
	written := writtenBytes(b)
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
	st := s.Stats()
	b.ReportMetric(float64(st.Writes)/float64(max(st.Commits, 1)), "writes/tx")
	if strings.HasPrefix(dsn, "sqlite:") {
		// Every byte this process handed to write(2) meanwhile: the WAL's
		// frames, and the checkpoints' copies of them into the database
		// file (PostgreSQL's writes are its server's, not counted here).
		b.ReportMetric(float64(writtenBytes(b)-written)/float64(b.N), "written-B/ping")
	}
}

// writtenBytes is how many bytes this process has passed to write(2) and
// its kin so far (wchar in /proc/self/io).
func writtenBytes(b *testing.B) int64 {
	raw, err := os.ReadFile("/proc/self/io")
	if err != nil {
		b.Fatal(err)
	}
	for line := range strings.SplitSeq(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "wchar: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("/proc/self/io has no wchar")
	return 0
}

// BenchmarkDueDeliveries: the dispatcher's query for due notifications
// (64 at most, 4 per namespace) with a backlog pending, nine tenths of it
// one namespace's and the rest spread over a hundred others, on each
// backend (PostgreSQL: a throw-away server on this machine, as
// testenv.StartPostgres starts for every test). Its cost grows with the
// namespaces in the answer, not with the backlog: the namespaces that owe
// something are found one index seek each, and each one's first few are
// read from the index. The store contract ("does not read one namespace's
// whole backlog") asserts it, with a hundred times the backlog.
//
//	go test ./internal/store -run '^$' -bench DueDeliveries -benchtime 20x -count 2
func BenchmarkDueDeliveries(b *testing.B) {
	for _, backlog := range []int{1_000, 10_000} {
		b.Run(fmt.Sprint("sqlite/", backlog), func(b *testing.B) {
			benchmarkDueDeliveries(b, "sqlite:"+b.TempDir()+"/vigil.db", backlog)
		})
		b.Run(fmt.Sprint("postgres/", backlog), func(b *testing.B) {
			pg, err := testenv.StartPostgres(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = pg.Remove() }()
			dsn, err := pg.NewDatabase(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			benchmarkDueDeliveries(b, dsn, backlog)
		})
	}
}

func benchmarkDueDeliveries(b *testing.B, dsn string, backlog int) {
	ctx := context.Background()
	s, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var targets []store.Target
	for i := range backlog {
		ns := "flood"
		if i >= backlog*9/10 {
			ns = fmt.Sprint("team-", i%100)
		}
		targets = append(targets, store.Target{UID: types.UID(fmt.Sprint("uid-", i)), Namespace: ns, Name: fmt.Sprint("c", i),
			Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}, Channels: []string{"hook"}})
	}
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 64 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(len(targets)); i = next.Add(1) - 1 {
				if _, err := s.RecordPing(ctx, targets[i], store.Ping{Kind: monitor.PingFail, At: time.Now()}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if strings.HasPrefix(dsn, "postgres") { // as autovacuum would have by now
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			b.Fatal(err)
		}
		_, err = db.ExecContext(ctx, "ANALYZE")
		_ = db.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	q := store.DueQuery{Limit: 64, PerNamespace: 4}
	b.ResetTimer()
	for b.Loop() {
		due, err := s.DueDeliveries(ctx, time.Now().Add(time.Hour), q)
		if err != nil || len(due) != 64 {
			b.Fatalf("%d due, %v", len(due), err)
		}
	}
}
