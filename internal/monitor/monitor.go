package monitor

import (
	"time"

	"github.com/vigil-operator/vigil/internal/schedule"
)

// Status is a check's monitoring state as the API shows it.
type Status string

const (
	// StatusNew is a check that has not received a counting ping: created and
	// never pinged, or resumed and not pinged since. It never goes down
	// unless a run it started overruns.
	StatusNew Status = "new"
	// StatusUp is a check whose last ping was a success and is on time.
	StatusUp Status = "up"
	// StatusGrace is an up check whose next ping is due but that is still
	// within its grace period.
	StatusGrace Status = "grace"
	// StatusDown is a check whose last ping failed, that missed its deadline,
	// or whose run overran its grace period.
	StatusDown Status = "down"
	// StatusPaused is a check whose monitoring is paused.
	StatusPaused Status = "paused"
)

// microsecond is the precision of instants in a Check's status; it is the
// smallest step by which this package moves an instant to keep facts ordered.
const microsecond = time.Microsecond

// Config is what a check's spec says about monitoring.
type Config struct {
	// Timeout is the expected period of a Simple check: the next ping is due
	// Timeout after the last one. Used only when Schedule is nil.
	Timeout time.Duration
	// Schedule, when not nil, makes this a Cron or OnCalendar check: the next
	// ping is due at the schedule's first instant after the last ping. It
	// must already be bound to the check's time zone (see schedule.Parse).
	Schedule schedule.Schedule
	// Grace is how long after the due time the check is late (grace) before
	// it goes down; also how long a run may take after its start signal.
	Grace time.Duration
	// ManualResume makes a paused check ignore every ping (recorded as "ign")
	// until it is resumed.
	ManualResume bool
}

// Facts is what has happened to a check, as stored in its status. Each group
// of fields has exactly one writer; the zero Facts is a brand-new check.
type Facts struct {
	// Written by the ping path (RecordPing).

	// LastPing is when the last success or fail ping arrived (zero: none).
	LastPing time.Time
	// LastPingFailed is whether LastPing was a fail.
	LastPingFailed bool
	// LastStart is when the outstanding start signal arrived (zero: none).
	LastStart time.Time
	// LastStartRID is the run id of the outstanding start ("" when it had none).
	LastStartRID string
	// LastDuration is how long the last completed run took, from its start to
	// its success or fail ping (0: unknown, as after a ping without a start).
	LastDuration time.Duration

	// Written by the API (Pause, Resume).

	// PausedAt is when the check was last paused (zero: never).
	PausedAt time.Time
	// ResumedAt is when the check was last resumed (zero: never).
	ResumedAt time.Time

	// Written by the reconciler (Observe).

	// State is the status the reconciler recorded last ("" for a check it has
	// not observed yet, which counts as new).
	State Status
	// StateSince is when State began: for down the instant of the down flip,
	// for up the ping that made it up, for grace the due time, for paused the
	// pause, for new the resume (or the first observation).
	StateSince time.Time
}

// epoch is the latest pause or resume; pings and starts at or before it no
// longer count.
func (f Facts) epoch() time.Time {
	if f.ResumedAt.After(f.PausedAt) {
		return f.ResumedAt
	}
	return f.PausedAt
}

// counts reports whether an instant of a ping or start still counts: set, and
// after the epoch.
func (f Facts) counts(t time.Time) bool {
	return !t.IsZero() && t.After(f.epoch())
}

// pinged reports whether there is a counting success or fail ping.
func (f Facts) pinged() bool { return f.counts(f.LastPing) }

// Started reports whether a run is in progress: a start signal that no
// success, fail, pause or resume has ended. It is the API's "started" field.
// (A run that overran its grace period is still started; the check is down.)
func (f Facts) Started() bool { return f.counts(f.LastStart) }

// DisplayedLastPing is the API's "last_ping": LastPing, except after a resume
// that came later (a pause keeps last_ping, a resume clears it, as in the
// reference). The zero time means none.
func (f Facts) DisplayedLastPing() time.Time {
	if f.LastPing.IsZero() || !f.LastPing.After(f.ResumedAt) {
		return time.Time{}
	}
	return f.LastPing
}

// pausedFact reports whether the last pause is newer than the last resume and
// no ping has counted since.
func (f Facts) pausedFact() bool {
	return !f.PausedAt.IsZero() && f.PausedAt.After(f.ResumedAt) && !f.pinged()
}

// stickyDown reports whether the reconciler recorded the check down after the
// epoch and no ping has arrived since the down began.
func (f Facts) stickyDown() bool {
	if f.State != StatusDown || !f.StateSince.After(f.epoch()) {
		return false
	}
	return !f.pinged() || f.LastPing.Before(f.StateSince)
}

// phase is the part of the status that does not depend on the instant.
type phase int

const (
	phaseNew    phase = iota // no counting ping
	phasePaused              // paused
	phaseDown                // recorded down (sticky) or last ping failed
	phaseUp                  // last ping succeeded: up, grace or down by deadline
)

// basis is everything derived from the facts alone.
type basis struct {
	phase  phase
	failed bool // phaseDown because the last ping failed

	expected    time.Time // E, phaseUp only
	hasExpected bool

	nextPing    time.Time // grace start (the API's next_ping)
	hasNextPing bool
}

func (c Config) basis(f Facts) basis {
	var b basis
	switch {
	case f.stickyDown():
		b.phase = phaseDown
	case f.pausedFact():
		b.phase = phasePaused
	case !f.pinged():
		b.phase = phaseNew
	case f.LastPingFailed:
		b.phase, b.failed = phaseDown, true
	default:
		b.phase = phaseUp
		b.expected, b.hasExpected = c.expected(f.LastPing)
		b.nextPing, b.hasNextPing = b.expected, b.hasExpected
	}
	if b.phase != phaseDown && f.Started() {
		if !b.hasNextPing || f.LastStart.Before(b.nextPing) {
			b.nextPing, b.hasNextPing = f.LastStart, true
		}
	}
	return b
}

// expected returns the instant the next ping is due after a ping at last.
func (c Config) expected(last time.Time) (time.Time, bool) {
	if c.Schedule != nil {
		return c.Schedule.Next(last)
	}
	return last.Add(c.Timeout), true
}

func (b basis) deadline(grace time.Duration) (time.Time, bool) {
	if !b.hasNextPing {
		return time.Time{}, false
	}
	return b.nextPing.Add(grace), true
}

// Status returns the check's status at now, derived from the facts.
func (c Config) Status(f Facts, now time.Time) Status {
	st, _, _ := c.derive(f, now)
	return st
}

// derive returns the status at now, when it began, and for down why.
func (c Config) derive(f Facts, now time.Time) (Status, time.Time, Reason) {
	b := c.basis(f)
	if dl, ok := b.deadline(c.Grace); ok && !now.Before(dl) {
		return StatusDown, dl, ReasonTimeout
	}
	switch b.phase {
	case phaseDown:
		if b.failed {
			return StatusDown, f.LastPing, ReasonFail
		}
		return StatusDown, f.StateSince, ""
	case phasePaused:
		return StatusPaused, f.PausedAt, ""
	case phaseNew:
		if !f.ResumedAt.IsZero() {
			return StatusNew, f.ResumedAt, ""
		}
		return StatusNew, now, ""
	}
	if b.hasExpected && !now.Before(b.expected) {
		return StatusGrace, b.expected, ""
	}
	return StatusUp, f.LastPing, ""
}

// NextPing returns the API's "next_ping": the instant the grace period starts
// (reference 7.2). For an up check (also in grace, or down by a deadline the
// reconciler has not recorded yet) it is the due time, or the outstanding
// start if that is earlier; for a new or paused check the outstanding start;
// otherwise (new or paused without a start, down) none. It depends only on
// the facts.
func (c Config) NextPing(f Facts) (time.Time, bool) {
	b := c.basis(f)
	return b.nextPing, b.hasNextPing
}

// Deadline returns the instant the check goes down unless a fact changes
// first: NextPing plus Grace, or none (reference 7.3, "alert_after"). It may
// be in the past: the check is then down (see Status) and a down flip is due
// at exactly that instant.
func (c Config) Deadline(f Facts) (time.Time, bool) {
	return c.basis(f).deadline(c.Grace)
}

// NextChange returns the first instant strictly after now at which Status
// changes without a new fact (up→grace at the due time, →down at the
// deadline), or false if the status cannot change by time alone. The
// reconciler requeues for exactly this instant.
func (c Config) NextChange(f Facts, now time.Time) (time.Time, bool) {
	b := c.basis(f)
	dl, hasDl := b.deadline(c.Grace)
	if b.phase == phaseUp && b.hasExpected && b.expected.After(now) && (!hasDl || b.expected.Before(dl)) {
		return b.expected, true
	}
	if hasDl && dl.After(now) {
		return dl, true
	}
	return time.Time{}, false
}

// latest returns the latest of the instants.
func latest(t time.Time, more ...time.Time) time.Time {
	for _, m := range more {
		if m.After(t) {
			t = m
		}
	}
	return t
}
