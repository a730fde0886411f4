// Package maintenance reads MaintenanceWindows: which checks a window
// covers and when it is active. The Door asks it which windows hold a
// check's notifications, the window controller when to look again, and
// the ping store, through store.Maintenance, whether a notification due
// now is held. A snooze (snooze.go) is a one-off window for one check,
// written the same way by the API, the dashboard and `vigil snooze`.
package maintenance

import (
	"fmt"
	"sync/atomic"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/schedule"
	"github.com/vigil-operator/vigil/internal/selection"
)

// maxMerge bounds how many overlapping instances of a recurring window are
// joined into one span (a schedule more frequent than its duration keeps
// the window open): past it, the span ends where the count stopped and
// the next look continues it. It bounds the work a tenant's window costs
// each write of a check it covers.
const maxMerge = 64

// Window is a MaintenanceWindow, compiled.
type Window struct {
	// Name is the MaintenanceWindow's name.
	Name string

	selection.Selection

	from, to time.Time // a one-off window

	sched    schedule.Schedule // a recurring window
	duration time.Duration

	// last is what At last found, and for which instants it holds: a
	// recurring window's schedule is read when the clock passes the span
	// it found (its start, or its end), not on every question. A window
	// covers many checks and each of their pings asks, inside the store's
	// one writer: 300 windows of a schedule that fires once in decades
	// cost a ping 80 ms when each question walked the calendar.
	last atomic.Pointer[memo]
}

// memo is an answer of At, which holds for every instant in [from, until)
// (until zero: from on).
type memo struct {
	from, until time.Time
	span        Span
	active      bool
}

// Compile reads a MaintenanceWindow. Its error says what is wrong with the
// spec in words a user can act on (the schema has caught the rest).
func Compile(mw *v1.MaintenanceWindow) (*Window, error) {
	s := &mw.Spec
	chosen, err := selection.New(s.CheckSelection)
	if err != nil {
		return nil, err
	}
	w := &Window{Name: mw.Name, Selection: chosen}
	switch {
	case s.From != nil && s.To != nil:
		w.from, w.to = s.From.UTC(), s.To.UTC()
		if !w.from.Before(w.to) {
			return nil, fmt.Errorf("spec.to (%s) must be after spec.from (%s)", w.to.Format(time.RFC3339), w.from.Format(time.RFC3339))
		}
	case s.Schedule != nil && s.Duration != nil:
		sched, err := schedule.Parse(*s.Schedule, string(s.Zone()))
		if err != nil {
			return nil, fmt.Errorf("spec.schedule: %w", err)
		}
		if s.Duration.Duration <= 0 {
			return nil, fmt.Errorf("spec.duration must be positive")
		}
		w.sched, w.duration = sched, s.Duration.Duration
	default:
		return nil, fmt.Errorf("set either from and to (a one-off window) or schedule and duration (a recurring window)")
	}
	return w, nil
}

// Span is one stretch of time a window is active: [Start, End).
type Span struct {
	Start, End time.Time
}

// IsZero reports whether the span is none.
func (s Span) IsZero() bool { return s.End.IsZero() }

// At returns the span the window is active in at t (active), or else the
// next one to come (zero: none will). The answer found for an earlier
// instant is given again while it holds: until the span's start when it
// was to come (no instance starts before it), until its end when it was
// active (a span merged past maxMerge instances is continued from there,
// as ever), forever when none was to come.
func (w *Window) At(t time.Time) (span Span, active bool) {
	if m := w.last.Load(); m != nil && !t.Before(m.from) && (m.until.IsZero() || t.Before(m.until)) {
		return m.span, m.active
	}
	span, active = w.at(t)
	m := &memo{from: t, span: span, active: active}
	switch {
	case active:
		m.until = span.End
	case !span.IsZero():
		m.until = span.Start
	}
	w.last.Store(m)
	return span, active
}

// at is At, worked out.
func (w *Window) at(t time.Time) (span Span, active bool) {
	if w.sched == nil {
		switch {
		case t.Before(w.from):
			return Span{w.from, w.to}, false
		case t.Before(w.to):
			return Span{w.from, w.to}, true
		}
		return Span{}, false
	}
	// An instance that started after t-duration (and not after t) is
	// running at t; the first such one is the span's start.
	start, ok := w.sched.Next(t.Add(-w.duration))
	if !ok {
		return Span{}, false
	}
	if start.After(t) {
		return w.merged(start), false
	}
	return w.merged(start), true
}

// merged is the span that starts with the instance at start, joined with
// the instances that start before it ends.
func (w *Window) merged(start time.Time) Span {
	span := Span{start, start.Add(w.duration)}
	at := start
	for range maxMerge {
		next, ok := w.sched.Next(at)
		if !ok || next.After(span.End) {
			break
		}
		span.End, at = next.Add(w.duration), next
	}
	return span
}

// Set is the windows that cover one check; it tells the ping store when
// the check's notifications are held (store.Maintenance).
type Set []*Window

// Hold is the window that holds notifications at t and when it ends (the
// latest end of the windows active then); when none does, name is empty
// and next is when the first of them starts (zero: none will).
func (s Set) Hold(t time.Time) (name string, until, next time.Time) {
	for _, w := range s {
		span, active := w.At(t)
		switch {
		case active && span.End.After(until):
			name, until = w.Name, span.End
		case !active && !span.IsZero() && (next.IsZero() || span.Start.Before(next)):
			next = span.Start
		}
	}
	if name != "" {
		next = time.Time{}
	}
	return name, until, next
}
