package storetest

import (
	"context"
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// bodyLimitTest is the contract of a namespace's ping body limit: past it,
// a check keeps a new body only by giving up as many bytes of its own
// oldest, one that holds none has the body refused (the ping itself
// recorded), and another namespace keeps its bodies as before. The totals
// survive a restart, and a forgotten check's bodies make room.
func bodyLimitTest(ctx context.Context, t *testing.T, dsn string) {
	const budget, limit, size = 1000, 1500, 400
	opts := store.Options{BodyBudget: budget}
	s, err := store.Open(ctx, dsn, opts)
	must(t, err)
	defer func() { _ = s.Close() }()
	in := func(ns, uid string) store.Target {
		tg := simple(uid)
		tg.Namespace, tg.BodyLimit = ns, limit
		return tg
	}
	at := t0
	send := func(tg store.Target) store.Recorded {
		t.Helper()
		at = at.Add(time.Second)
		p := ping(monitor.PingSuccess, at)
		p.Body = make([]byte, size)
		rec, err := s.RecordPing(ctx, tg, p)
		must(t, err)
		return rec
	}
	// kept lists the serial numbers of the check's pings that kept their
	// bodies, and those marked dropped, newest first.
	kept := func(uid string) (bodies, dropped []int64) {
		t.Helper()
		pings, err := s.Pings(ctx, types.UID(uid), 100)
		must(t, err)
		for _, p := range pings {
			switch {
			case p.BodySize > 0:
				bodies = append(bodies, p.N)
			case p.BodyDropped:
				dropped = append(dropped, p.N)
			}
		}
		return bodies, dropped
	}
	totals := func(want map[string]int64) {
		t.Helper()
		if got := s.BodyBytes(); !maps.Equal(got, want) {
			t.Fatalf("body bytes by namespace = %v, want %v", got, want)
		}
	}
	a1, a2, a3, b1 := in("a", "a1"), in("a", "a2"), in("a", "a3"), in("b", "b1")
	for range 3 { // a1 keeps two at its own budget
		send(a1)
	}
	if rec := send(a2); rec.BodyRefused {
		t.Fatal("a2's first body was refused within the limit (800 + 400 of 1500)")
	}
	totals(map[string]int64{"a": 1200})

	// Past the limit: a3 holds nothing to give up.
	rec := send(a3)
	if !rec.BodyRefused || rec.N != 1 {
		t.Fatalf("a3's ping past the limit: %+v, want recorded as ping 1 with its body refused", rec)
	}
	if bodies, dropped := kept("a3"); len(bodies) != 0 || len(dropped) != 1 {
		t.Fatalf("a3 kept bodies %v, dropped %v; want none kept, ping 1 marked dropped", bodies, dropped)
	}
	// a2 pays for its second body with its first.
	if rec := send(a2); rec.BodyRefused {
		t.Fatal("a2's body past the limit was refused, though a2 could give up its first")
	}
	if bodies, dropped := kept("a2"); len(bodies) != 1 || bodies[0] != 2 || len(dropped) != 1 {
		t.Fatalf("a2 kept bodies %v, dropped %v; want its newest (2), the first dropped", bodies, dropped)
	}
	// Another namespace is untouched: b1 keeps what its budget allows.
	for range 3 {
		if rec := send(b1); rec.BodyRefused {
			t.Fatal("namespace b's body was refused for namespace a's limit")
		}
	}
	totals(map[string]int64{"a": 1200, "b": 800})

	// The totals are read from the table on opening.
	must(t, s.Close())
	s, err = store.Open(ctx, dsn, opts)
	must(t, err)
	totals(map[string]int64{"a": 1200, "b": 800})
	if rec := send(a3); !rec.BodyRefused {
		t.Fatal("after a restart, a3's body past the limit was kept")
	}

	// Forgetting a1 makes room for a3's.
	must(t, s.Forget(ctx, a1.UID))
	totals(map[string]int64{"a": 400, "b": 800})
	if rec := send(a3); rec.BodyRefused {
		t.Fatal("a3's body was refused after a1's were forgotten")
	}
	totals(map[string]int64{"a": 800, "b": 800})
}
