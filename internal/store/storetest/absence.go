package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// absenceTest is the contract of Vigil's own absence (clock.go): a store
// opened after its deadline loop stopped applies the time away to every
// observation, a ping that comes first included, until the loop has swept
// what fell due; what is not yet applied survives another restart; and a
// deadline after the return, or one that no absence covers, is judged as
// ever.
func absenceTest(ctx context.Context, t *testing.T, dsn string) {
	embedded := strings.HasPrefix(dsn, "sqlite:")
	now := t0
	opts := store.Options{Now: func() time.Time { return now }}
	open := func() *store.Store {
		t.Helper()
		s, err := store.Open(ctx, dsn, opts)
		must(t, err)
		return s
	}
	away := func(s *store.Store, want store.Absence, ok bool) {
		t.Helper()
		got, found := s.Away()
		if found != ok || !got.From.Equal(want.From) || !got.Until.Equal(want.Until) {
			t.Fatalf("Away() = %+v, %v; want %+v, %v", got, found, want, ok)
		}
	}
	// a and b are due a minute after their ping, with a minute's grace;
	// late is due in an hour.
	a, b, late := simple("a"), simple("b"), simple("late")
	late.Config.Timeout = time.Hour

	s := open()
	away(s, store.Absence{}, false) // a store no loop has run on
	for _, tg := range []store.Target{a, b, late} {
		_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
		must(t, err)
	}
	must(t, s.Alive(ctx, t0))
	must(t, s.Close())

	// Ten minutes without a manager: a's and b's deadlines (t0+2m) fell.
	now = t0.Add(10 * time.Minute)
	s = open()
	away(s, store.Absence{From: t0}, true)
	// A ping before the loop's first pass: judged with the absence, so
	// no down at b's deadline and no up at the ping.
	rec, err := s.RecordPing(ctx, b, ping(monitor.PingSuccess, now))
	must(t, err)
	if rec.Flip != nil {
		t.Fatalf("b's ping on the return recorded a flip %+v; its deadline fell while Vigil was away", rec.Flip)
	}
	must(t, s.Alive(ctx, now))
	away(s, store.Absence{From: t0, Until: now}, true)
	flips, err := s.Observe(ctx, []store.Target{a, late}, now)
	must(t, err)
	if len(flips) != 0 {
		t.Fatalf("the first pass after the return recorded flips %+v", flips)
	}
	c, _, err := s.Check(ctx, a.UID)
	must(t, err)
	if st := a.Config.Status(c.Facts, now); st != monitor.StatusGrace || !c.Facts.Reprieve.Equal(now) {
		t.Fatalf("a after the return: %s, reprieve %s; want grace, reprieved at %s", st, c.Facts.Reprieve, now)
	}
	c, _, err = s.Check(ctx, late.UID)
	must(t, err)
	if !c.Facts.Reprieve.IsZero() {
		t.Fatalf("late, due after the return, was reprieved at %s", c.Facts.Reprieve)
	}
	must(t, s.Swept(ctx, now))
	away(s, store.Absence{}, false)

	// No ping in the fresh grace: down at its end, saying why.
	flips, err = s.Observe(ctx, []store.Target{a}, now.Add(time.Minute))
	must(t, err)
	fl := flips[a.UID]
	if fl == nil || fl.Up || !fl.At.Equal(now.Add(time.Minute)) || fl.Reason != monitor.ReasonTimeout ||
		!strings.Contains(fl.Detail, "while Vigil was away") {
		t.Fatalf("a at the fresh grace's end: flip %+v; want a timeout at %s that says Vigil was away", fl, now.Add(time.Minute))
	}
	must(t, s.Close())

	// A restart a second later: an embedded store was away for it; on
	// PostgreSQL other replicas may have served, and a heartbeat this
	// fresh is a leader that was there.
	now = now.Add(time.Second)
	s = open()
	if embedded {
		away(s, store.Absence{From: t0.Add(10 * time.Minute)}, true)
	} else {
		away(s, store.Absence{}, false)
	}
	must(t, s.Close())

	// A long stop, and a manager that stops again after its heartbeat but
	// before its pass: the next finds the absence from its start.
	stopped := now
	now = now.Add(20 * time.Minute)
	s = open()
	away(s, store.Absence{From: t0.Add(10 * time.Minute)}, true)
	must(t, s.Alive(ctx, now))
	must(t, s.Close())
	now = now.Add(time.Second)
	s = open()
	away(s, store.Absence{From: t0.Add(10 * time.Minute)}, true)
	must(t, s.Alive(ctx, now))
	away(s, store.Absence{From: t0.Add(10 * time.Minute), Until: now}, true)
	must(t, s.Swept(ctx, now))
	away(s, store.Absence{}, false)
	must(t, s.Close())
	_ = stopped

	// A clock that jumps while the loop runs is no absence.
	s = open()
	must(t, s.Alive(ctx, now))
	must(t, s.Swept(ctx, now))
	must(t, s.Alive(ctx, now.Add(time.Hour)))
	if got, found := s.Away(); found && !got.Until.IsZero() && got.Until.After(now) {
		t.Fatalf("a jump of the clock made an absence %+v", got)
	}
	must(t, s.Close())
}
