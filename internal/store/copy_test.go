package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// copyOpts are the options of every store these tests fill: a small body
// budget, so that some bodies are dropped.
var copyOpts = store.Options{BodyBudget: 1000}

// copyT0 is the instant the filled stores start at.
var copyT0 = time.Date(2026, 11, 24, 3, 0, 0, 0, time.UTC)

// backends open fresh, empty stores of each kind; the test closes them.
type backends struct{ pg *testenv.Postgres }

func startBackends(t *testing.T) backends {
	t.Helper()
	pg, err := testenv.StartPostgres(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Remove() })
	return backends{pg: pg}
}

func (b backends) open(t *testing.T, kind string) *store.Store {
	t.Helper()
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "vigil.db")
	if kind == "postgres" {
		var err error
		if dsn, err = b.pg.NewDatabase(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s, err := store.Open(ctx, dsn, copyOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func copyTarget(uid string, channels ...string) store.Target {
	return store.Target{
		UID: types.UID(uid), Namespace: "team-a", Name: "check-" + uid,
		Config:       monitor.Config{Timeout: time.Minute, Grace: time.Minute},
		Channels:     channels,
		PingLogLimit: 20,
	}
}

// fill records a bit of everything through the store's API and returns the
// checks' targets: every kind of ping, with and without bodies and exit
// statuses, bodies dropped for the budget, a ping log trimmed at its limit,
// flips down (a fail, a missed deadline) and up with deliveries to two
// channels, delivered, retried and failed, an observed check and a paused
// one.
func fill(t *testing.T, s *store.Store) []store.Target {
	t.Helper()
	ctx := context.Background()
	ping := func(tg store.Target, p store.Ping) store.Recorded {
		t.Helper()
		if p.Scheme == "" {
			p.Scheme, p.Method, p.RemoteAddr, p.UA = "https", "POST", "10.0.0.7", "curl/8.5"
		}
		rec, err := s.RecordPing(ctx, tg, p)
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	exit := func(n int) *int { return &n }

	// A run: start, log, success with a body and an exit status.
	run := copyTarget("run")
	ping(run, store.Ping{Kind: monitor.PingStart, At: copyT0, RID: "rid-1"})
	ping(run, store.Ping{Kind: monitor.PingLog, At: copyT0.Add(time.Second), Body: []byte("halfway")})
	ping(run, store.Ping{Kind: monitor.PingSuccess, At: copyT0.Add(3 * time.Second), RID: "rid-1", ExitStatus: exit(0),
		Body: []byte("done\x00with a NUL and \xff")})
	ping(run, store.Ping{Kind: monitor.PingStart, At: copyT0.Add(4 * time.Second), RID: "rid-2"}) // outstanding

	// Down with a fail, up again: two flips, each to two channels.
	flappy := copyTarget("flappy", "ops", "pager")
	ping(flappy, store.Ping{Kind: monitor.PingSuccess, At: copyT0})
	if rec := ping(flappy, store.Ping{Kind: monitor.PingFail, At: copyT0.Add(time.Second), ExitStatus: exit(3), Body: []byte("boom")}); rec.Flip == nil {
		t.Fatal("a fail ping did not flip")
	}
	if rec := ping(flappy, store.Ping{Kind: monitor.PingSuccess, At: copyT0.Add(2 * time.Second)}); rec.Flip == nil {
		t.Fatal("a success after a fail did not flip")
	}
	if err := s.RecordOutcomes(ctx, []store.Outcome{
		{CheckUID: flappy.UID, FlipN: 1, Channel: "ops", State: store.DeliveryDelivered, Attempted: true},
		{CheckUID: flappy.UID, FlipN: 1, Channel: "pager", State: store.DeliveryPending, Attempted: true,
			NextAttempt: copyT0.Add(time.Hour), LastError: "503 Service Unavailable"},
		{CheckUID: flappy.UID, FlipN: 2, Channel: "ops", State: store.DeliveryFailed, Attempted: true,
			NextAttempt: copyT0.Add(time.Minute), LastError: "400 Bad Request"},
	}); err != nil {
		t.Fatal(err)
	}

	// Down by a missed deadline, noticed late; its deliveries pending.
	late := copyTarget("late", "ops")
	ping(late, store.Ping{Kind: monitor.PingSuccess, At: copyT0})
	flips, err := s.Observe(ctx, []store.Target{late}, copyT0.Add(time.Hour))
	if err != nil || flips[late.UID] == nil {
		t.Fatalf("a missed deadline: flips %v, %v", flips, err)
	}

	// Observed only, and paused: rows without pings.
	quiet, paused := copyTarget("quiet"), copyTarget("paused")
	if _, err := s.Observe(ctx, []store.Target{quiet}, copyT0); err != nil {
		t.Fatal(err)
	}
	ping(paused, store.Ping{Kind: monitor.PingSuccess, At: copyT0})
	if _, err := s.Pause(ctx, paused, copyT0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}

	// 40 pings with bodies: the log keeps about 20, the budget 1000 bytes of
	// bodies, the rest marked dropped; serial numbers do not start at 1.
	busy := copyTarget("busy")
	for i := range 40 {
		ping(busy, store.Ping{Kind: monitor.PingSuccess, At: copyT0.Add(time.Duration(i) * time.Second), Body: bytes.Repeat([]byte{byte('a' + i%26)}, 300)})
	}
	// One ignored ping.
	ping(busy, store.Ping{Kind: monitor.PingIgnored, At: copyT0.Add(time.Minute)})

	// Someone signed in to the dashboard.
	if err := s.CreateSession(ctx, copySession); err != nil {
		t.Fatal(err)
	}

	return []store.Target{run, flappy, late, quiet, paused, busy}
}

// copySession is the dashboard session fill creates.
var copySession = store.Session{ID: store.SessionID("cookie token"), Subject: "https://issuer.example|alice", Username: "alice",
	Groups: []string{"ops", "dev"}, CSRF: "csrf-token", Created: copyT0, Expires: copyT0.Add(8 * time.Hour)}

// sameContent compares everything the read API shows of the two stores.
func sameContent(t *testing.T, want, got *store.Store) {
	t.Helper()
	ctx := context.Background()
	uids := func(s *store.Store) []types.UID {
		u, err := s.UIDs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(u)
		return u
	}
	all := uids(want)
	if g := uids(got); !reflect.DeepEqual(g, all) {
		t.Fatalf("checks %v, want %v", g, all)
	}
	equal := func(what string, w, g any) {
		t.Helper()
		if !reflect.DeepEqual(w, g) {
			t.Errorf("%s:\n got %+v\nwant %+v", what, g, w)
		}
	}
	for _, uid := range all {
		wc, wf, err1 := want.Check(ctx, uid)
		gc, gf, err2 := got.Check(ctx, uid)
		equal(fmt.Sprint("check ", uid), []any{wc, wf, err1}, []any{gc, gf, err2})
		wp, err1 := want.Pings(ctx, uid, 1000)
		gp, err2 := got.Pings(ctx, uid, 1000)
		equal(fmt.Sprint("pings of ", uid), []any{wp, err1}, []any{gp, err2})
		for _, p := range wp {
			wb, wfound, err1 := want.PingBody(ctx, uid, p.N)
			gb, gfound, err2 := got.PingBody(ctx, uid, p.N)
			equal(fmt.Sprint("body of ping ", p.N, " of ", uid), []any{wb, wfound, err1}, []any{gb, gfound, err2})
		}
		wfl, err1 := want.Flips(ctx, uid)
		gfl, err2 := got.Flips(ctx, uid)
		equal(fmt.Sprint("flips of ", uid), []any{wfl, err1}, []any{gfl, err2})
		for _, f := range wfl {
			wd, err1 := want.Deliveries(ctx, uid, f.N)
			gd, err2 := got.Deliveries(ctx, uid, f.N)
			equal(fmt.Sprint("deliveries of flip ", f.N, " of ", uid), []any{wd, err1}, []any{gd, err2})
		}
		wk, wh, err1 := want.RunKinds(ctx, uid, "rid-1")
		gk, gh, err2 := got.RunKinds(ctx, uid, "rid-1")
		equal(fmt.Sprint("run kinds of ", uid), []any{wk, wh, err1}, []any{gk, gh, err2})
	}
	wch, err1 := want.Changes(ctx, store.Cursor{}, 1000)
	gch, err2 := got.Changes(ctx, store.Cursor{}, 1000)
	equal("the changes feed", []any{wch, err1}, []any{gch, err2})
	later := copyT0.Add(24 * time.Hour)
	wdue, err1 := want.Due(ctx, later, 1000)
	gdue, err2 := got.Due(ctx, later, 1000)
	equal("due checks", []any{wdue, err1}, []any{gdue, err2})
	wdd, err1 := want.DueDeliveries(ctx, later, store.DueQuery{Limit: 1000})
	gdd, err2 := got.DueDeliveries(ctx, later, store.DueQuery{Limit: 1000})
	equal("due deliveries", []any{wdd, err1}, []any{gdd, err2})
	wnext, err1 := want.NextDelivery(ctx)
	gnext, err2 := got.NextDelivery(ctx)
	equal("next delivery", []any{wnext, err1}, []any{gnext, err2})
	wss, wok, err1 := want.Session(ctx, copySession.ID, copyT0)
	gss, gok, err2 := got.Session(ctx, copySession.ID, copyT0)
	equal("the dashboard session", []any{wss, wok, err1}, []any{gss, gok, err2})
	wsc, err1 := want.StateCounts(ctx)
	gsc, err2 := got.StateCounts(ctx)
	equal("state counts", []any{wsc, err1}, []any{gsc, err2})
}

// TestCopy fills a store of one kind through its API, copies it into an
// empty one of another, and finds the same through the read API of both:
// every check, ping, body, flip and delivery, and the changes feed. The
// copy then goes on where the source stopped: each check's next ping is
// numbered one after its last, and the feed's versions keep increasing.
//
// Copy compares its column lists with the tables of both stores, so this
// test also fails when a migration adds a column that the copy forgets.
func TestCopy(t *testing.T) {
	b := startBackends(t)
	for _, dir := range [][2]string{{"sqlite", "postgres"}, {"postgres", "sqlite"}, {"sqlite", "sqlite"}} {
		t.Run(dir[0]+" to "+dir[1], func(t *testing.T) {
			ctx := context.Background()
			src, dst := b.open(t, dir[0]), b.open(t, dir[1])
			targets := fill(t, src)

			stats, err := store.Copy(ctx, dst, src)
			if err != nil {
				t.Fatal(err)
			}
			sameContent(t, src, dst)

			var pings, flips, deliveries, bodies int64
			for _, tg := range targets {
				p, _ := src.Pings(ctx, tg.UID, 1000)
				pings += int64(len(p))
				for _, p := range p {
					bodies += int64(p.BodySize)
				}
				f, _ := src.Flips(ctx, tg.UID)
				flips += int64(len(f))
				for _, f := range f {
					d, _ := src.Deliveries(ctx, tg.UID, f.N)
					deliveries += int64(len(d))
				}
			}
			want := store.CopyStats{Checks: int64(len(targets)), Pings: pings, Flips: flips, Deliveries: deliveries, BodyBytes: bodies}
			feed, err := src.Changes(ctx, store.Cursor{}, 1000)
			if err != nil {
				t.Fatal(err)
			}
			last := feed[len(feed)-1]
			want.Changes = last.Version
			if stats != want {
				t.Errorf("stats = %+v, want %+v", stats, want)
			}
			if deliveries < 4 || bodies == 0 || flips < 3 {
				t.Fatalf("the filled store holds too little to test: %+v", want)
			}

			for _, tg := range targets {
				before, _, err := dst.Check(ctx, tg.UID)
				if err != nil {
					t.Fatal(err)
				}
				rec, err := dst.RecordPing(ctx, tg, store.Ping{Kind: monitor.PingSuccess, At: copyT0.Add(2 * time.Hour)})
				if err != nil {
					t.Fatal(err)
				}
				if rec.N != before.NPings+1 {
					t.Errorf("check %s: the ping after the copy is number %d, want %d", tg.UID, rec.N, before.NPings+1)
				}
			}
			after, err := dst.Changes(ctx, last.Cursor(), 1000)
			if err != nil {
				t.Fatal(err)
			}
			if len(after) != len(targets) {
				t.Fatalf("the feed after the copy lists %d checks, want %d: %+v", len(after), len(targets), after)
			}
			for _, ch := range after {
				if ch.Version <= last.Version {
					t.Errorf("a write after the copy has version %d, not after the source's last, %d", ch.Version, last.Version)
				}
			}

			// A Channel the source never named gets a number after the
			// copied ones; one it did keeps its own.
			fresh := copyTarget("fresh", "ops", "new-after-copy")
			if _, err := dst.RecordPing(ctx, fresh, store.Ping{Kind: monitor.PingFail, At: copyT0.Add(3 * time.Hour)}); err != nil {
				t.Fatal(err)
			}
			d, err := dst.Deliveries(ctx, fresh.UID, 1)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := d["ops"]; !ok || len(d) != 2 || d["new-after-copy"].State != store.DeliveryPending {
				t.Errorf("the down after the copy queued %+v, want ops and new-after-copy", d)
			}
		})
	}
}

// TestCopyRefusesANonEmptyDestination: a destination that holds a check is
// refused, and left as it was, so that a second run cannot double anything.
func TestCopyRefusesANonEmptyDestination(t *testing.T) {
	ctx := context.Background()
	b := startBackends(t)
	src, dst := b.open(t, "sqlite"), b.open(t, "postgres")
	fill(t, src)
	if _, err := store.Copy(ctx, dst, src); err != nil {
		t.Fatal(err)
	}
	// A write the second copy must not undo.
	if _, err := dst.RecordPing(ctx, copyTarget("run"), store.Ping{Kind: monitor.PingFail, At: copyT0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	snapshot := b.open(t, "sqlite")
	if _, err := store.Copy(ctx, snapshot, dst); err != nil {
		t.Fatal(err)
	}

	_, err := store.Copy(ctx, dst, src)
	if !errors.Is(err, store.ErrNotEmpty) || !strings.Contains(err.Error(), "6 checks") {
		t.Fatalf("copying into a store that holds 6 checks: %v", err)
	}
	sameContent(t, snapshot, dst)

	// A store without checks, but with the flip of a check whose row is
	// gone, is not empty either.
	path := filepath.Join(t.TempDir(), "other.db")
	other, err := store.Open(ctx, "sqlite:"+path, copyOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.RecordPing(ctx, copyTarget("gone", "ops"), store.Ping{Kind: monitor.PingFail, At: copyT0}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `DELETE FROM checks`); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Copy(ctx, other, src); !errors.Is(err, store.ErrNotEmpty) || !strings.Contains(err.Error(), "pings") {
		t.Fatalf("copying into a store with pings but no checks: %v", err)
	}
}

// TestCopyRefusesColumnsItDoesNotKnow: a column that Copy does not copy (as
// a new migration would add) fails the copy, naming the column, before
// anything is written. TestCopy shows that the stores' real columns are
// all known, on both backends.
func TestCopyRefusesColumnsItDoesNotKnow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "vigil.db")
	src, err := store.Open(ctx, "sqlite:"+path, copyOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	fill(t, src)
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `ALTER TABLE pings ADD COLUMN signature TEXT`); err != nil {
		t.Fatal(err)
	}
	dst, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "copy.db"), copyOpts)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	_, err = store.Copy(ctx, dst, src)
	if err == nil || !strings.Contains(err.Error(), "pings.signature") {
		t.Fatalf("copying a store with a column the copy does not know: %v", err)
	}
	if uids, _ := dst.UIDs(ctx); len(uids) != 0 {
		t.Errorf("the failed copy left %d checks in the destination", len(uids))
	}

	if _, err := db.ExecContext(ctx, `CREATE TABLE incidents (id INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err = store.Copy(ctx, dst, src); err == nil || !strings.Contains(err.Error(), "table incidents") {
		t.Fatalf("copying a store with a table the copy does not know: %v", err)
	}
}

// TestExclusiveOpen: an embedded store opened with Options.Exclusive is
// refused while another process (here another store) has the file open,
// and keeps others out while it is open.
func TestExclusiveOpen(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite:" + filepath.Join(t.TempDir(), "vigil.db")
	manager, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := manager.RecordPing(ctx, copyTarget("a"), store.Ping{Kind: monitor.PingSuccess, At: copyT0}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Open(ctx, dsn, store.Options{Exclusive: true}); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("opening a store in use for this process alone: %v", err)
	}
	if err := manager.Close(); err != nil {
		t.Fatal(err)
	}

	alone, err := store.Open(ctx, dsn, store.Options{Exclusive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer alone.Close()
	if c, found, err := alone.Check(ctx, "a"); err != nil || !found || c.NPings != 1 {
		t.Fatalf("reading the store opened alone: %+v %v %v", c, found, err)
	}
	start := time.Now()
	if s, err := store.Open(ctx, dsn, store.Options{}); err == nil {
		_ = s.Close()
		t.Fatal("a store opened alone was opened again")
	}
	t.Logf("a second open failed after %v", time.Since(start).Round(time.Millisecond))
}

// BenchmarkCopy copies an embedded store of 10,000 pings (100 checks of
// 100, each with a 200-byte body) into PostgreSQL, commit included: about
// 0.6 s on 2 cores (2.1 s inserting one row per statement).
//
//	go test ./internal/store -run x -bench Copy -benchtime 5x
func BenchmarkCopy(b *testing.B) {
	ctx := context.Background()
	pg, err := testenv.StartPostgres(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = pg.Remove() }()
	src, err := store.Open(ctx, "sqlite:"+filepath.Join(b.TempDir(), "vigil.db"), store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	const checks, each = 100, 100
	var wg sync.WaitGroup
	for c := range checks {
		wg.Go(func() {
			tg := store.Target{UID: types.UID(fmt.Sprint("uid-", c)), Namespace: "bench", Name: fmt.Sprint("c", c),
				Config: monitor.Config{Timeout: time.Hour, Grace: time.Hour}, PingLogLimit: each}
			for i := range each {
				p := store.Ping{Kind: monitor.PingSuccess, At: copyT0.Add(time.Duration(i) * time.Second), Method: "POST",
					Scheme: "https", RemoteAddr: "10.0.0.1", UA: "curl/8", Body: bytes.Repeat([]byte("x"), 200)}
				if _, err := src.RecordPing(ctx, tg, p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		dsn, err := pg.NewDatabase(ctx)
		if err != nil {
			b.Fatal(err)
		}
		dst, err := store.Open(ctx, dsn, store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		stats, err := store.Copy(ctx, dst, src)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if stats.Pings != checks*each {
			b.Fatalf("copied %d pings, want %d", stats.Pings, checks*each)
		}
		_ = dst.Close()
		b.StartTimer()
	}
}
