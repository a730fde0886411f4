// Package uptime is the one rule for what a check's state was over time,
// and how much of it counts as up: the check page's bar and calendar, the
// public status page's days and figure, and the reports all take it from
// here, so that they show the same figure for the same check.
//
// The rule:
//   - Before the check was created there is no data; from its creation on,
//     it is new, up or in its grace period (all up), down, down inside a
//     maintenance window (maintenance), or paused.
//   - The flips say when it went down and came back up. Before the oldest
//     flip the store keeps (90 days), the check was what that flip left:
//     down for an up flip, and for a down flip its status before (paused,
//     or else up: a new check counts as up, as the reference counts no
//     downtime before a first ping).
//   - A down that a maintenance window held is maintenance until the
//     window's end, and a down from then on (a down only if it outlasts
//     the window).
//   - Pausing and resuming are not flips; the check's last pause and
//     resume are known (its facts), so a down ends at a pause after it,
//     and a resume makes it new (up). Two downs in a row with no pause
//     known between them mean an older pause whose time the store no
//     longer has: that time is unknown.
//   - Uptime is the share of the up and down time that was up: time in
//     maintenance, paused or unknown counts neither way.
package uptime

import (
	"slices"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// State is what a check was over a span of time.
type State string

const (
	// Unknown: before the check existed, or time the store cannot tell.
	Unknown State = "unknown"
	// Up: new, up or in its grace period.
	Up State = "up"
	// Down: down, and no maintenance window held it.
	Down State = "down"
	// Maintenance: down inside a maintenance window that held it.
	Maintenance State = "maintenance"
	// Paused: monitoring was paused.
	Paused State = "paused"
)

// Check is what the rule is applied to.
type Check struct {
	// Created is when the check was created.
	Created time.Time
	// Flips are the check's flips, newest first as the store lists them
	// (notices among them are left out).
	Flips []store.Flip
	// Truncated: Flips are only the newest of the flips the store keeps,
	// so the state before the oldest of them is unknown.
	Truncated bool
	// Status is the check's status now, which says what it was all along
	// when it never flipped.
	Status monitor.Status
	// PausedAt and ResumedAt are the check's last pause and resume (zero:
	// none), which no flip records.
	PausedAt, ResumedAt time.Time
}

// Span is a stretch of time in one state, [From, To).
type Span struct {
	State    State
	From, To time.Time
	// Began: a down began at From (not a down that went on from before,
	// nor one held by a maintenance window until it ended). A down whose
	// end is unknown is an Unknown span that Began.
	Began bool
}

// History is a check's spans, oldest first, back to back, from the zero
// time (Unknown until the check was created) to the end it was made for.
type History []Span

// event is a change of state at a moment: a flip, the last pause or the
// last resume.
type event struct {
	at   time.Time
	flip *store.Flip
	to   State // for a pause or a resume
}

// mark is a state that begins at a moment.
type mark struct {
	at    time.Time
	state State
	began bool
}

// Of is the check's history until end.
func Of(c Check, end time.Time) History {
	c.Status = statusAt(c, end)
	events := eventsOf(c, end)
	state, since, began := initial(c, events, end)
	var marks []mark
	if since.After(c.Created) {
		marks = append(marks, mark{at: c.Created, state: Unknown})
	}
	marks = append(marks, mark{at: since, state: state, began: began})
	// down is the index of the mark where the current down began (-1: the
	// check is not down); heldUntil is when the maintenance window that
	// holds it ends (zero: none holds it).
	down := -1
	if state == Down {
		down = len(marks) - 1
	}
	var heldUntil time.Time
	set := func(at time.Time, s State, began bool) {
		if s != Down && s != Maintenance {
			down, heldUntil = -1, time.Time{}
		}
		marks = append(marks, mark{at: at, state: s, began: began})
	}
	endHold := func(before time.Time) {
		if !heldUntil.IsZero() && !heldUntil.After(before) {
			set(heldUntil, Down, true)
			heldUntil = time.Time{}
		}
	}
	for _, e := range events {
		endHold(e.at)
		f := e.flip
		switch {
		case f == nil && e.to == Paused && marks[len(marks)-1].state == Paused:
		case f == nil:
			set(e.at, e.to, false)
		case f.Up:
			set(e.at, Up, false)
		default:
			if down >= 0 {
				// A second down with no pause known between: when the
				// first one ended, the store cannot tell.
				for i := down; i < len(marks); i++ {
					marks[i].state = Unknown
				}
			}
			down = len(marks)
			if f.HeldBy() != "" && f.HeldUntil.After(f.At) {
				marks = append(marks, mark{at: e.at, state: Maintenance})
				heldUntil = f.HeldUntil
			} else {
				marks = append(marks, mark{at: e.at, state: Down, began: true})
			}
		}
	}
	endHold(end)
	if len(c.Flips) == 0 && c.Status == monitor.StatusDown && marks[len(marks)-1].state != Down {
		// Down since before the flips the store keeps, and paused and
		// resumed before that: down from the last thing known.
		marks = append(marks, mark{at: marks[len(marks)-1].at, state: Down})
	}
	return materialize(marks, c.Created, end)
}

// eventsOf is the check's flips (not its notices) and its last pause and
// resume before end, oldest first.
func eventsOf(c Check, end time.Time) []event {
	var events []event
	for i := range c.Flips {
		if f := &c.Flips[i]; f.Notice == "" && f.At.Before(end) {
			events = append(events, event{at: f.At, flip: f})
		}
	}
	if !c.PausedAt.IsZero() && c.PausedAt.Before(end) {
		events = append(events, event{at: c.PausedAt, to: Paused})
		if c.ResumedAt.After(c.PausedAt) && c.ResumedAt.Before(end) {
			events = append(events, event{at: c.ResumedAt, to: Up})
		}
	}
	slices.SortStableFunc(events, func(a, b event) int { return a.at.Compare(b.at) })
	return events
}

// statusAt is the check's status at end, which is what the rule takes for
// all of its history when nothing happened before end. A page asks at now,
// and the check's status is that; a report asks at its period's end, after
// it: then the status was what the oldest flip since end changed it from,
// or, with none, the status now, but for a pause since end (the check was
// not paused at end: up, as a check that never flipped counts).
func statusAt(c Check, end time.Time) monitor.Status {
	if f := oldestSince(c, end); f != nil {
		if f.From == monitor.StatusPaused && !c.PausedAt.Before(end) {
			return monitor.StatusUp
		}
		return f.From
	}
	if c.Status == monitor.StatusPaused && !c.PausedAt.Before(end) {
		return monitor.StatusUp
	}
	return c.Status
}

// oldestSince is the oldest flip (not a notice) at or after end, nil when
// there is none.
func oldestSince(c Check, end time.Time) *store.Flip {
	var oldest *store.Flip
	for i := range c.Flips {
		if f := &c.Flips[i]; f.Notice == "" && !f.At.Before(end) && (oldest == nil || f.At.Before(oldest.At)) {
			oldest = f
		}
	}
	return oldest
}

// initial is the state before the first event, when it is known from
// (zero: from the check's creation), and whether a down began then.
func initial(c Check, events []event, end time.Time) (State, time.Time, bool) {
	if len(events) == 0 {
		if f := oldestSince(c, end); f != nil && f.Up {
			// Down at end, and the flip after it that ended the down says
			// since when.
			return Down, f.Since, !f.Since.IsZero()
		}
		switch c.Status {
		case monitor.StatusDown:
			return Down, time.Time{}, false
		case monitor.StatusPaused:
			return Paused, time.Time{}, false
		}
		return Up, time.Time{}, false
	}
	first := events[0]
	f := first.flip
	switch {
	case f != nil && f.Up:
		// It ended a down, which began at its Since (when the store
		// knows it).
		return Down, f.Since, !f.Since.IsZero()
	case c.Truncated:
		return Unknown, time.Time{}, false
	case f == nil && first.to == Up: // a resume first: paused before it
		return Paused, time.Time{}, false
	case f != nil && f.From == monitor.StatusPaused:
		return Paused, time.Time{}, false
	}
	return Up, time.Time{}, false
}

// materialize turns the marks into back-to-back spans until end: unknown
// before created, each mark's state until the next mark, neighbours of
// one state merged (but a down that begins, so that downs can be
// counted).
func materialize(marks []mark, created, end time.Time) History {
	h := History{{State: Unknown, To: earliest(created, end)}}
	for i, m := range marks {
		from := latest(m.at, created)
		to := end
		if i+1 < len(marks) {
			to = earliest(latest(marks[i+1].at, created), end)
		}
		if !to.After(from) {
			continue
		}
		last := &h[len(h)-1]
		if last.State == m.state && !m.began && last.To.Equal(from) {
			last.To = to
			continue
		}
		h = append(h, Span{State: m.state, From: from, To: to, Began: m.began})
	}
	return h
}

// Figures are how long a check spent in each state over a stretch of
// time, and how many downs began in it.
type Figures struct {
	Up, Down, Maintenance, Paused, Unknown time.Duration
	Downs                                  int
}

// Uptime is the share of the up and down time that was up, in [0, 1]; ok
// is false when there was neither.
func (f Figures) Uptime() (share float64, ok bool) {
	if f.Up+f.Down <= 0 {
		return 0, false
	}
	return float64(f.Up) / float64(f.Up+f.Down), true
}

// Measure is the figures of [from, to).
func (h History) Measure(from, to time.Time) Figures {
	var f Figures
	for _, s := range h.Within(from, to) {
		d := s.To.Sub(s.From)
		switch s.State {
		case Up:
			f.Up += d
		case Down:
			f.Down += d
		case Maintenance:
			f.Maintenance += d
		case Paused:
			f.Paused += d
		default:
			f.Unknown += d
		}
		if s.Began {
			f.Downs++
		}
	}
	return f
}

// Within is the spans of [from, to), cut to it; a down that began before
// from is no down that began in it.
func (h History) Within(from, to time.Time) []Span {
	var out []Span
	for _, s := range h {
		if !s.To.After(from) || !s.From.Before(to) {
			continue
		}
		if s.From.Before(from) {
			s.From, s.Began = from, false
		}
		s.To = earliest(s.To, to)
		if s.To.After(s.From) {
			out = append(out, s)
		}
	}
	return out
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
