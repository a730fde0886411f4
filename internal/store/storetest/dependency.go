package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// parents is a check's Dependencies: fixed names.
type parents []string

func (p parents) Parents() []string { return p }

// dependencyTest is the contract of a check held by a parent that is down
// (dependency.go): its down, re-alerts and escalation tell nobody while
// the parent is down, across a restart; an up the Channels were told the
// down of is told at once; once the parent is up, each dependent still
// down is told once, and one that came back meanwhile tells nothing. A
// deadline pass that finds the parent and a dependent due together
// decides the parent first.
func dependencyTest(ctx context.Context, t *testing.T, dsn string) {
	host := simple("host", "host")
	host.Config.Timeout, host.Config.Grace = time.Hour, time.Hour
	dependent := func(uid string) store.Target {
		tg := simple(uid, uid)
		tg.Realert = 10 * time.Minute
		tg.Escalation = store.Escalation{After: 15 * time.Minute, Channels: []string{"lead"}}
		tg.Dependencies = parents{"check-host", "check-gone"}
		return tg
	}
	// stays stays down; back pings again while the host is down (and
	// expects a ping an hour later); early went down before the host (its
	// down was told).
	stays, back, early := dependent("stays"), dependent("back"), dependent("early")
	back.Config.Timeout = time.Hour
	all := []store.Target{host, stays, back, early}
	s, err := store.Open(ctx, dsn, store.Options{})
	must(t, err)
	defer func() { _ = s.Close() }()
	record := func(tg store.Target, kind monitor.PingKind, at time.Time) {
		t.Helper()
		_, err := s.RecordPing(ctx, tg, ping(kind, at))
		must(t, err)
	}
	observe := func(at time.Time, targets ...store.Target) {
		t.Helper()
		if len(targets) == 0 {
			targets = all
		}
		_, err := s.Observe(ctx, targets, at)
		must(t, err)
	}
	expect := func(when string, want ...string) {
		t.Helper()
		if got := drain(t, s); !slices.Equal(got, want) {
			t.Fatalf("%s: told %q, want %q", when, got, want)
		}
	}

	record(early, monitor.PingSuccess, t0.Add(-2*time.Minute))
	record(stays, monitor.PingSuccess, t0)
	record(back, monitor.PingFail, t0)
	observe(t0.Add(30 * time.Second))
	expect("before the host is down", "down to back", "down to early")
	record(back, monitor.PingSuccess, t0.Add(40*time.Second))
	expect("back's up", "up to back")
	record(host, monitor.PingFail, t0.Add(time.Minute))
	expect("the host's fail", "down to host")
	record(back, monitor.PingFail, t0.Add(2*time.Minute))
	observe(t0.Add(3 * time.Minute))
	expect("the dependents' downs while the host is down")
	c, _, err := s.Check(ctx, stays.UID)
	must(t, err)
	if c.Facts.State != monitor.StatusDown || c.Dependency.Parent != "check-host" || !c.Dependency.Since.Equal(t0.Add(time.Minute)) {
		t.Fatalf("a held dependent: state %s, held by %+v", c.Facts.State, c.Dependency)
	}
	if want := t0.Add(3*time.Minute + store.DependencyRecheck); !c.NextChange.Equal(want) {
		t.Fatalf("a held dependent's next change %s, want %s (the recheck)", c.NextChange, want)
	}
	if c.LastFlip == nil || c.LastFlip.HeldByParent() != "check-host" || c.LastFlip.HeldBy() != "" {
		t.Fatalf("a held dependent's down: %+v", c.LastFlip)
	}

	// Across a restart, past the re-alert interval and the escalation:
	// nothing. Back comes back: nobody heard of its down, nobody hears of
	// its up. Early, whose down was told, is told of its up at once.
	must(t, s.Close())
	s, err = store.Open(ctx, dsn, store.Options{})
	must(t, err)
	record(back, monitor.PingSuccess, t0.Add(10*time.Minute))
	observe(t0.Add(40 * time.Minute))
	expect("re-alerts and escalations while the host is down")
	record(early, monitor.PingSuccess, t0.Add(41*time.Minute))
	expect("early's up", "up to early")

	// The host back: at the recheck, each dependent still down is told
	// once; back, up again, tells nothing; early, whose deadline fell
	// after the host was back, is told as ever.
	record(host, monitor.PingSuccess, t0.Add(43*time.Minute))
	expect("the host's up", "up to host")
	observe(t0.Add(44 * time.Minute))
	expect("the recheck once the host is up", "down to early", "down to stays")
	c, _, err = s.Check(ctx, stays.UID)
	must(t, err)
	if c.Dependency.Parent != "" {
		t.Fatalf("a dependent told of its down is still held by %+v", c.Dependency)
	}
	observe(t0.Add(45 * time.Minute))
	expect("the next pass")

	// A parent and its dependent due at the same instant, decided in one
	// transaction, the parent first (as a deadline pass orders them): the
	// dependent sees the parent's down before it is written.
	db, tied := simple("db", "db"), simple("tied", "tied")
	tied.Dependencies = parents{"check-db"}
	record(db, monitor.PingSuccess, t0.Add(50*time.Minute))
	record(tied, monitor.PingSuccess, t0.Add(50*time.Minute))
	observe(t0.Add(53*time.Minute), db, tied)
	expect("the parent and its dependent due together", "down to db")
	record(db, monitor.PingSuccess, t0.Add(54*time.Minute))
	observe(t0.Add(55*time.Minute), db, tied)
	expect("the parent back", "up to db", "down to tied")
}
