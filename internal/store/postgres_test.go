package store_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"

	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/store/storetest"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// TestPostgresContract runs the store's contract on a real PostgreSQL
// server, one database per test. The databases sort text as a production
// database with the usual en_US.UTF-8 default does, not byte by byte as
// the test server's C locale would: ICU's en-US with punctuation shifted
// (ignored at first, as glibc's en_US ignores it), so that the contract
// finds a comparison that forgets the store's byte order.
func TestPostgresContract(t *testing.T) {
	ctx := context.Background()
	pg, err := testenv.StartPostgres(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Remove() })
	var dbs atomic.Int64
	storetest.Run(t, func(t *testing.T) string {
		conn, err := pgx.Connect(ctx, pg.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close(ctx) }()
		name := fmt.Sprintf("vigil_contract_%d", dbs.Add(1))
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+
			" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US-u-ka-shifted'"); err != nil {
			t.Fatal(err)
		}
		return pg.DSN(name)
	})
}

// TestPostgresReplicas opens two stores on one database at once, as two
// replicas do when they start together (their migrations must not collide),
// and has both take pings for the same checks, alternately and in batches:
// every ping is counted once, each check's serial numbers stay gap-free, and
// the changes feed, which the leader follows, lists every write once in the
// order the writes committed.
func TestPostgresReplicas(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.PostgresDatabase(t)
	var replicas [2]*store.Store
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() {
			s, err := store.Open(ctx, dsn, store.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			t.Cleanup(func() { _ = s.Close() })
			replicas[i] = s
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	const checks, each = 20, 30
	t0 := time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)
	target := func(c int) store.Target {
		return store.Target{
			UID: types.UID(fmt.Sprint("r", c)), Namespace: "team-a", Name: fmt.Sprint("check-", c),
			Config:   monitor.Config{Timeout: time.Minute, Grace: time.Minute},
			Channels: []string{"ops"},
		}
	}
	var acked atomic.Int64
	for c := range checks {
		for i := range each {
			wg.Go(func() {
				kind := monitor.PingSuccess
				if i%10 == 9 {
					kind = monitor.PingFail // a flip down, and one up after it
				}
				_, err := replicas[(c+i)%2].RecordPing(ctx, target(c), store.Ping{Kind: kind, At: t0.Add(time.Duration(i) * time.Millisecond), Method: "GET"})
				if err != nil {
					t.Error(err)
					return
				}
				acked.Add(1)
			})
		}
	}
	wg.Wait()
	if acked.Load() != checks*each {
		t.Fatalf("%d pings acknowledged, want %d", acked.Load(), checks*each)
	}
	for c := range checks {
		tg := target(c)
		for _, s := range replicas {
			chk, _, err := s.Check(ctx, tg.UID)
			if err != nil {
				t.Fatal(err)
			}
			if chk.NPings != each {
				t.Fatalf("check %s: n_pings %d, want %d", tg.UID, chk.NPings, each)
			}
		}
		pings, err := replicas[0].Pings(ctx, tg.UID, 1000)
		if err != nil {
			t.Fatal(err)
		}
		ns := make([]int64, 0, len(pings))
		for _, p := range pings {
			ns = append(ns, p.N)
		}
		slices.Sort(ns)
		for i, n := range ns {
			if n != int64(i+1) {
				t.Fatalf("check %s: serials %v, want 1..%d", tg.UID, ns, each)
			}
		}
		flips, err := replicas[1].Flips(ctx, tg.UID)
		if err != nil {
			t.Fatal(err)
		}
		for i := 1; i < len(flips); i++ {
			if flips[i].Up == flips[i-1].Up {
				t.Fatalf("check %s: two flips in a row to the same side: %+v", tg.UID, flips)
			}
		}
	}
	feed, err := replicas[1].Changes(ctx, store.Cursor{}, 10*checks)
	if err != nil {
		t.Fatal(err)
	}
	if len(feed) != checks {
		t.Fatalf("the changes feed lists %d checks, want %d", len(feed), checks)
	}
	for i := 1; i < len(feed); i++ {
		if feed[i].Version < feed[i-1].Version {
			t.Fatalf("the changes feed is out of order: %+v", feed)
		}
	}
}

// TestPostgresSweepLosesNoNotification: one replica flips a check whose
// one Channel no delivery names between its flips (each notification is
// delivered and pruned at once), while the other prunes and sweeps the
// Channel numbers as fast as it can: every flip's notification is queued,
// none lost to a number swept between its making and the insert that
// reads it (channels.go).
func TestPostgresSweepLosesNoNotification(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.PostgresDatabase(t)
	var replicas [2]*store.Store
	for i := range replicas {
		s, err := store.Open(ctx, dsn, store.Options{Flapping: store.FlapPolicy{Limit: -1}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		replicas[i] = s
	}
	flipper, sweeper := replicas[0], replicas[1]
	t0 := time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC)
	// Everything before the cutoff that owes nothing is pruned.
	cutoff := t0.Add(24 * time.Hour)

	done := make(chan struct{})
	var sweeps atomic.Int64
	swept := make(chan error, 1)
	go func() {
		for {
			select {
			case <-done:
				swept <- nil
				return
			default:
			}
			if err := sweeper.Prune(ctx, cutoff); err != nil {
				swept <- err
				return
			}
			sweeps.Add(1)
		}
	}()

	tg := store.Target{UID: "racing", Namespace: "team-a", Name: "racing",
		Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}, Channels: []string{"hook"}}
	const flips = 300
	for i := range flips {
		kind := monitor.PingFail
		if i%2 == 1 {
			kind = monitor.PingSuccess
		}
		rec, err := flipper.RecordPing(ctx, tg, store.Ping{Kind: kind, At: t0.Add(time.Duration(i) * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Flip == nil {
			t.Fatalf("ping %d did not flip the check", i)
		}
		due, err := flipper.DueDeliveries(ctx, cutoff, store.DueQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(due) != 1 || due[0].Flip.N != rec.Flip.N || due[0].Channel != "hook" {
			t.Fatalf("after flip %d the outbox holds %+v, want its one notification to hook", rec.Flip.N, due)
		}
		if err := flipper.RecordOutcomes(ctx, []store.Outcome{{CheckUID: tg.UID, FlipN: rec.Flip.N, Channel: "hook",
			State: store.DeliveryDelivered, Attempted: true}}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	if err := <-swept; err != nil {
		t.Fatal(err)
	}
	if sweeps.Load() < 10 {
		t.Fatalf("only %d sweeps ran beside %d flips: the race was hardly tried", sweeps.Load(), flips)
	}
}
