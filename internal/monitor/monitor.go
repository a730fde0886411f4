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

// microsecond is the precision of instants in the ping store and a Check's
// status; it is the smallest step by which this package moves an instant to
// keep facts ordered.
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

	// The alert policy (see policy.go). The zero values are the reference's
	// behaviour.

	// FailureThreshold is how many failed runs in a row (fail pings, missed
	// deadlines, overruns, runs too short) make the check down; below 1, 1.
	FailureThreshold int
	// RecoveryThreshold is how many successes in a row bring a down check
	// back up; below 1, 1.
	RecoveryThreshold int
	// MaxRuntime, when positive, bounds a run from its start signal; grace
	// then bounds only a late start.
	MaxRuntime time.Duration
	// MinRuntime, when positive, makes a success that ends a run sooner a
	// failure.
	MinRuntime time.Duration
	// Anomaly, when set, makes a success that ends a run far outside the
	// check's usual range of durations (Ping.Usual) a failure
	// (anomaly.go).
	Anomaly *Anomaly
}

// Facts is what has happened to a check, as the ping store keeps it. Each
// group of fields has exactly one writer; the zero Facts is a brand-new
// check.
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

	// The alert policy's counts: written by RecordPing and Observe, cleared
	// by Pause and Resume (see policy.go).

	// Failures is how many failed runs in a row have been counted: fail
	// pings by RecordPing, missed deadlines and overruns by Observe. A
	// success that is not a recovery sets it to 0.
	Failures int
	// FailReason is why the last fail ping counts as a failure when it was
	// not a fail signal: ReasonShort for a success that ended a run under
	// MinRuntime, ReasonAnomaly for one outside its usual range ("" for a
	// fail signal).
	FailReason Reason
	// FailDetail words an anomalous run ("ran 4 seconds; usually 38
	// minutes to 45 minutes over its last 30 runs"): the range it was judged by, as it
	// was then.
	FailDetail string
	// Successes is a down check's recovery streak: the successes in a row
	// since it went down, while fewer than RecoveryThreshold (0 otherwise).
	Successes int
	// MissedAt is the due time of the last missed run Observe counted, or
	// the instant a run was counted as overrun: the next run is expected
	// after it (zero: none since the last ping).
	MissedAt time.Time

	// Written by the deadline loop after Vigil's own absence (Absent).

	// Reprieve is when Vigil came back from an absence during which the
	// check's next failed run fell: that run is expected by Reprieve plus
	// Grace instead (zero: none). A later ping, pause or resume makes it
	// moot.
	Reprieve time.Time
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
// epoch and nothing has ended the down since: no ping since the down began,
// or only the fail ping that began it (a new setting, such as a higher
// failure threshold, does not bring a down check up; a ping does).
func (f Facts) stickyDown() bool {
	if f.State != StatusDown || !f.StateSince.After(f.epoch()) {
		return false
	}
	return !f.pinged() || f.LastPing.Before(f.StateSince) || (f.LastPingFailed && f.LastPing.Equal(f.StateSince))
}

// recovering reports whether a down check has a recovery streak that has
// not reached its threshold yet: it is still down.
func (f Facts) recovering() bool {
	return f.Successes > 0 && f.pinged() && !f.LastPingFailed
}

// running reports whether a run is in progress and has not been counted as
// overrun (an overrun below the failure threshold is a failed run; the run
// stays started, as the API shows, but no longer bounds anything).
func (f Facts) running() bool {
	return f.Started() && f.MissedAt.Before(f.LastStart)
}

// phase is the part of the status that does not depend on the instant.
type phase int

const (
	phaseNew    phase = iota // no counting ping
	phasePaused              // paused
	phaseDown                // recorded down (sticky), failed at the threshold, or recovering
	phaseUp                  // up, grace, or down by a deadline or an overrun
)

// basis is everything derived from the facts alone.
type basis struct {
	phase phase
	// since and reason: when a phaseDown began and, when the facts say, why.
	since  time.Time
	reason Reason
	// anchor: phaseUp's instant the next run is expected after (the last
	// ping, or the last miss counted since).
	anchor time.Time
}

func (c Config) basis(f Facts) basis {
	switch {
	case f.stickyDown():
		return basis{phase: phaseDown, since: f.StateSince}
	case f.recovering():
		since := f.LastPing
		if f.State == StatusDown && f.StateSince.After(f.epoch()) {
			since = f.StateSince
		}
		return basis{phase: phaseDown, since: since}
	case f.pausedFact():
		return basis{phase: phasePaused}
	case !f.pinged():
		return basis{phase: phaseNew}
	case f.LastPingFailed && max(f.Failures, 1) >= c.failureThreshold():
		return basis{phase: phaseDown, since: f.LastPing, reason: f.failReason()}
	}
	return basis{phase: phaseUp, anchor: latest(f.LastPing, f.MissedAt)}
}

// expected returns the instant the next ping is due after a ping at last.
func (c Config) expected(last time.Time) (time.Time, bool) {
	if c.Schedule != nil {
		return c.Schedule.Next(last)
	}
	return last.Add(c.Timeout), true
}

// Status returns the check's status at now, derived from the facts.
func (c Config) Status(f Facts, now time.Time) Status {
	return c.derive(f, now).status
}

// NextPing returns the API's "next_ping": the instant the grace period starts
// (reference 7.2). For an up check (also in grace, or down by a deadline the
// reconciler has not recorded yet) it is the due time, or the outstanding
// start if that is earlier; for a new or paused check the outstanding start;
// otherwise (new or paused without a start, down) none. It depends only on
// the facts.
func (c Config) NextPing(f Facts) (time.Time, bool) {
	b := c.basis(f)
	var next time.Time
	var ok bool
	switch b.phase {
	case phaseDown:
		return time.Time{}, false
	case phaseUp:
		next, _, _, ok = c.due(f, b.anchor)
	}
	if f.running() && (!ok || f.LastStart.Before(next)) {
		next, ok = f.LastStart, true
	}
	return next, ok
}

// Deadline returns the instant the check goes down unless a fact changes
// first (reference 7.3, "alert_after"): with the default policy NextPing
// plus Grace, or the end of MaxRuntime for a run in progress; with a
// failure threshold, the deadline of the last run it tolerates. None when
// time alone never brings the check down. It may be in the past: the check
// is then down (see Status) and a down flip is due at exactly that instant.
func (c Config) Deadline(f Facts) (time.Time, bool) {
	if c.basis(f).phase == phaseDown {
		return time.Time{}, false
	}
	d := c.derive(f, endOfTime)
	if d.status != StatusDown {
		return time.Time{}, false
	}
	return d.since, true
}

// endOfTime is an instant after every deadline.
var endOfTime = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)

// NextChange returns the first instant strictly after now at which Status
// changes without a new fact (up→grace at the due time, →down at the
// deadline), or at which Observe counts a missed run below the failure
// threshold; false if time alone changes nothing. The reconciler requeues
// for exactly this instant.
func (c Config) NextChange(f Facts, now time.Time) (time.Time, bool) {
	d := c.derive(f, now)
	return d.next, !d.next.IsZero()
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
