package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// stormTest is the contract storm control decides by (storm.go): a
// Channel's recent plain notifications of one direction counted by check,
// its pending ones that may go together (each check's oldest), and
// whether one is still due; all read from the outbox, across a restart.
func stormTest(ctx context.Context, t *testing.T, dsn string) {
	now := t0
	opts := store.Options{Now: func() time.Time { return now }}
	s, err := store.Open(ctx, dsn, opts)
	must(t, err)
	defer func() { _ = s.Close() }()
	ops := store.ChannelRef{Namespace: "team-a", Name: "ops"}
	a, b, c, x := simple("a", "ops"), simple("b", "ops"), simple("c", "ops"), simple("x", "other")
	a.Realert = 10 * time.Minute
	record := func(tg store.Target, kind monitor.PingKind) {
		t.Helper()
		_, err := s.RecordPing(ctx, tg, ping(kind, now))
		must(t, err)
	}
	recent := func(ch store.ChannelRef, up bool, since time.Duration, limit int) int {
		t.Helper()
		n, err := s.RecentlyQueued(ctx, ch, up, now.Add(-since), limit)
		must(t, err)
		return n
	}
	members := func(up bool) []string {
		t.Helper()
		ms, err := s.StormMembers(ctx, ops, up, now, 100)
		must(t, err)
		var out []string
		for _, m := range ms {
			out = append(out, fmt.Sprintf("%s#%d", m.CheckUID, m.Flip.N))
			if m.Queued.IsZero() || m.Flip.Notice != "" || m.Flip.Up != up {
				t.Fatalf("member %+v", m)
			}
		}
		return out
	}

	for _, tg := range []store.Target{a, b, c, x} {
		record(tg, monitor.PingFail)
		now = now.Add(time.Second)
	}
	// b flaps: down, up, down. One check, counted once.
	record(b, monitor.PingSuccess)
	record(b, monitor.PingFail)
	if n := recent(ops, false, time.Minute, 10); n != 3 {
		t.Fatalf("checks down lately to ops: %d, want 3 (a, b once, c)", n)
	}
	if n := recent(ops, false, time.Minute, 2); n != 2 {
		t.Fatalf("counted past the limit: %d", n)
	}
	if n := recent(ops, true, time.Minute, 10); n != 1 {
		t.Fatalf("checks up lately to ops: %d, want 1 (b)", n)
	}
	if n := recent(store.ChannelRef{Namespace: "team-a", Name: "other"}, false, time.Minute, 10); n != 1 {
		t.Fatalf("checks down lately to other: %d", n)
	}
	if n := recent(store.ChannelRef{Namespace: "team-b", Name: "ops"}, false, time.Minute, 10); n != 0 {
		t.Fatalf("another namespace's Channel of the same name: %d", n)
	}
	// Each check's oldest pending notification, oldest queued first: b's
	// up and second down wait behind its first down.
	if got := members(false); !slices.Equal(got, []string{"a#1", "b#1", "c#1"}) {
		t.Fatalf("members %v", got)
	}
	if got := members(true); len(got) != 0 {
		t.Fatalf("up members %v: b's up waits behind its down", got)
	}

	// a waits for its group: still a member, not due until then.
	ms, err := s.StormMembers(ctx, ops, false, now, 1)
	must(t, err)
	wait := now.Add(10 * time.Second)
	must(t, s.RecordOutcomes(ctx, []store.Outcome{{CheckUID: ms[0].CheckUID, FlipN: ms[0].Flip.N, Channel: "ops",
		State: store.DeliveryPending, NextAttempt: wait}}))
	if due, err := s.DeliveryDue(ctx, ms[0], now); err != nil || due {
		t.Fatalf("waiting for its group, due: %v %v", due, err)
	}
	if got := members(false); !slices.Equal(got, []string{"a#1", "b#1", "c#1"}) {
		t.Fatalf("members while a waits: %v", got)
	}

	// Across a restart; then a is attempted (it has a next attempt after a
	// backoff): no longer a member until it is due again.
	must(t, s.Close())
	s, err = store.Open(ctx, dsn, opts)
	must(t, err)
	now = wait
	if due, err := s.DeliveryDue(ctx, ms[0], now); err != nil || !due {
		t.Fatalf("at its group's time, due: %v %v", due, err)
	}
	must(t, s.RecordOutcomes(ctx, []store.Outcome{{CheckUID: ms[0].CheckUID, FlipN: ms[0].Flip.N, Channel: "ops",
		State: store.DeliveryPending, Attempted: true, NextAttempt: now.Add(time.Minute)}}))
	if got := members(false); !slices.Equal(got, []string{"b#1", "c#1"}) {
		t.Fatalf("members after a's attempt: %v", got)
	}

	// A re-alert is a notice: not counted, never a member.
	now = t0.Add(10 * time.Minute)
	_, err = s.Observe(ctx, []store.Target{a}, now)
	must(t, err)
	if n := recent(ops, false, 5*time.Minute, 10); n != 0 {
		t.Fatalf("a re-alert counted: %d", n)
	}
	if n := recent(ops, false, 11*time.Minute, 10); n != 3 {
		t.Fatalf("the downs, later: %d", n)
	}
}
