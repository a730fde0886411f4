package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// earlyOrderTest: an early ping is recorded once however many replicas try,
// a check whose early pings wait is neither due nor judged, and an early
// ping older than one the check recorded first is logged and changes
// nothing (store/early.go).
func earlyOrderTest(ctx context.Context, t *testing.T, s *store.Store) {
	tg := simple("eo")
	_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
	must(t, err)
	// Due at t0+2m (a minute's timeout and grace). A fail came at t0+30s,
	// and was kept early.
	late := t0.Add(10 * time.Minute)
	if due, err := s.Due(ctx, late, 10); err != nil || len(due) != 1 {
		t.Fatalf("due = %+v (%v), want the check", due, err)
	}
	fail := ping(monitor.PingFail, t0.Add(30*time.Second))
	fail.Body = []byte("disk full")
	must(t, s.RecordEarly(ctx, store.EarlyPing{Check: tg.UID, Namespace: tg.Namespace, Ping: fail}))
	kept, err := s.EarlyPings(ctx, store.EarlyQuery{Limit: 10})
	must(t, err)
	if len(kept) != 1 || kept[0].Replica != s.Replica() {
		t.Fatalf("kept = %+v, want one of replica %s", kept, s.Replica())
	}

	due, err := s.Due(ctx, late, 10)
	must(t, err)
	if len(due) != 0 {
		t.Errorf("a check whose early ping waits is due: %+v", due)
	}
	flips, err := s.Observe(ctx, []store.Target{tg}, late)
	must(t, err)
	if c, _, err := s.Check(ctx, tg.UID); err != nil || len(flips) != 0 || c.Facts.State != monitor.StatusUp {
		t.Fatalf("observed while its early ping waits: flips %v, check %+v (%v)", flips, c, err)
	}

	// Two replicas record it: one does, the other finds it taken.
	p := kept[0].Ping
	p.Early, p.Noted = kept[0].ID, late
	first, err := s.RecordPing(ctx, tg, p)
	must(t, err)
	again, err := s.RecordPing(ctx, tg, p)
	must(t, err)
	if first.Taken || first.LogOnly || first.Kind != monitor.PingFail || !again.Taken || again.N != 0 {
		t.Errorf("recorded %+v, then %+v; want the fail, then taken", first, again)
	}

	// A success came at t0+2m and was recorded; an early start from
	// t0+90s comes after it: logged, the check stays up, and no run is
	// left in progress.
	_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(2*time.Minute)))
	must(t, err)
	start := ping(monitor.PingStart, t0.Add(90*time.Second))
	must(t, s.RecordEarly(ctx, store.EarlyPing{Check: tg.UID, Namespace: tg.Namespace, Ping: start}))
	kept, err = s.EarlyPings(ctx, store.EarlyQuery{Limit: 10})
	must(t, err)
	if len(kept) != 1 {
		t.Fatalf("kept = %+v", kept)
	}
	start.Early, start.Noted = kept[0].ID, late
	rec, err := s.RecordPing(ctx, tg, start)
	must(t, err)
	if !rec.LogOnly || rec.Kind != monitor.PingStart || rec.N != 4 {
		t.Errorf("an early start older than the last ping: %+v, want logged only as the 4th", rec)
	}
	c, _, err := s.Check(ctx, tg.UID)
	must(t, err)
	if c.NPings != 4 || c.Facts.State != monitor.StatusUp || c.Facts.Started() || !c.Facts.LastPing.Equal(t0.Add(2*time.Minute)) {
		t.Errorf("check after an older early start = %+v", c)
	}
	pings, err := s.Pings(ctx, tg.UID, 10)
	must(t, err)
	if got := kindsOf(pings); fmt.Sprint(got) != "[start success fail success]" || !pings[0].At.Equal(t0.Add(90*time.Second)) ||
		pings[2].BodySize != len("disk full") {
		t.Errorf("log = %v, the newest at %v", got, pings[0].At)
	}
	if left, err := s.EarlyPings(ctx, store.EarlyQuery{Limit: 10}); err != nil || len(left) != 0 {
		t.Errorf("left = %+v (%v)", left, err)
	}

	// A forgotten check's early pings go with it.
	must(t, s.RecordEarly(ctx, store.EarlyPing{Check: tg.UID, Namespace: tg.Namespace, Ping: ping(monitor.PingSuccess, late)}))
	must(t, s.Forget(ctx, tg.UID))
	if left, err := s.EarlyPings(ctx, store.EarlyQuery{Limit: 10}); err != nil || len(left) != 0 {
		t.Errorf("a forgotten check's early pings: %+v (%v)", left, err)
	}
}

// earlyReplicasTest: on a store replicas share, each reads its own early
// pings or the others', one replica recording another's gives the room
// back to the one that took them, and each knows whether another has
// read every Check.
func earlyReplicasTest(ctx context.Context, t *testing.T, dsn string) {
	a, err := store.Open(ctx, dsn, store.Options{})
	must(t, err)
	defer func() { _ = a.Close() }()
	if !a.Shared() {
		return // the embedded store is one replica's
	}
	b, err := store.Open(ctx, dsn, store.Options{})
	must(t, err)
	defer func() { _ = b.Close() }()
	if a.Replica() == b.Replica() {
		t.Fatalf("two replicas are both %s", a.Replica())
	}

	tg := simple("er")
	body := make([]byte, 64<<10)
	for i := range store.MaxEarlyBodyBytesPerNamespace / len(body) {
		p := ping(monitor.PingSuccess, t0.Add(time.Duration(i)*time.Second))
		p.Body = body
		must(t, b.RecordEarly(ctx, store.EarlyPing{Check: tg.UID, Namespace: tg.Namespace, Ping: p}))
	}
	full := store.EarlyPing{Check: tg.UID, Namespace: tg.Namespace, Ping: ping(monitor.PingSuccess, t0.Add(time.Hour))}
	full.Ping.Body = body
	if err := b.RecordEarly(ctx, full); err == nil {
		t.Fatalf("an early ping past its namespace's budget was kept")
	}
	count := func(s *store.Store, scope store.EarlyScope, after store.EarlyPing) []store.EarlyPing {
		t.Helper()
		got, err := s.EarlyPings(ctx, store.EarlyQuery{Scope: scope, After: after, Limit: 1000})
		must(t, err)
		return got
	}
	all := count(a, store.OtherReplicas, store.EarlyPing{})
	if len(all) != len(count(b, store.ThisReplica, store.EarlyPing{})) || len(all) == 0 ||
		len(count(a, store.ThisReplica, store.EarlyPing{})) != 0 || len(count(b, store.OtherReplicas, store.EarlyPing{})) != 0 {
		t.Fatalf("scopes disagree: %d others of a", len(all))
	}
	if rest := count(a, store.EveryReplica, all[9]); len(rest) != len(all)-10 || rest[0].ID != all[10].ID {
		t.Errorf("after the tenth: %d, want %d from the eleventh", len(rest), len(all)-10)
	}

	// Both record the oldest at once: one does, the other finds it taken.
	race := all[0].Ping
	race.Early = all[0].ID
	recs := make([]store.Recorded, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, s := range []*store.Store{a, b} {
		wg.Go(func() { recs[i], errs[i] = s.RecordPing(ctx, tg, race) })
	}
	wg.Wait()
	must(t, errors.Join(errs...))
	if recs[0].Taken == recs[1].Taken || recs[0].N+recs[1].N != 1 {
		t.Fatalf("two replicas recording one early ping: %+v and %+v, want it recorded once", recs[0], recs[1])
	}

	// a records the rest: b has room again.
	for _, e := range all[1:] {
		p := e.Ping
		p.Early = e.ID
		rec, err := a.RecordPing(ctx, tg, p)
		must(t, err)
		if rec.Taken || rec.LogOnly {
			t.Fatalf("a's recording of b's early ping: %+v", rec)
		}
	}
	// b counts again at most once a second, and counted at the refusal.
	deadline := time.Now().Add(10 * time.Second)
	for err := b.RecordEarly(ctx, full); err != nil; err = b.RecordEarly(ctx, full) {
		if time.Now().After(deadline) {
			t.Fatalf("b has no room once a recorded its early pings: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Whether another replica has read every Check, by the database's
	// clock.
	for _, s := range []*store.Store{a, b} {
		if whole, err := s.WholeReplica(ctx, time.Minute); err != nil || whole {
			t.Fatalf("a whole replica before any said so (%v)", err)
		}
	}
	must(t, a.SayWhole(ctx))
	if whole, err := b.WholeReplica(ctx, time.Minute); err != nil || !whole {
		t.Errorf("b does not see that a is whole (%v)", err)
	}
	if whole, err := a.WholeReplica(ctx, time.Minute); err != nil || whole {
		t.Errorf("a counts itself as another replica (%v)", err)
	}
	time.Sleep(10 * time.Millisecond)
	if whole, err := b.WholeReplica(ctx, 5*time.Millisecond); err != nil || whole {
		t.Errorf("a's word is taken once it is stale (%v)", err)
	}
	must(t, a.TakeBackWhole(ctx))
	if whole, err := b.WholeReplica(ctx, time.Minute); err != nil || whole {
		t.Errorf("a's word is taken after it took it back (%v)", err)
	}
}
