package monitor

import (
	"fmt"
	"time"

	"github.com/vigil-operator/vigil/internal/words"
)

// The alert policy: how many failed runs make a check down, how many
// successes bring it back, and how long a run may or must take.
//
// A failed run is a fail ping, a deadline missed, a run that overran (its
// start plus MaxRuntime, or plus Grace without MaxRuntime), or a success
// that ended a run sooner than MinRuntime (recorded as a fail). Below
// FailureThreshold a failed run is counted and tolerated: the check stays
// up, and the next run is expected after it (after the fail ping, the
// missed due time, or the overrun's bound). At the threshold the check is
// down, with the reason of the run that reached it. A down check needs
// RecoveryThreshold successes in a row, each on time for the one before, to
// be up again.
//
// The derivation stays pure: Status at any instant walks the runs missed
// since the last fact, at most FailureThreshold of them, so the API, the
// dashboard and the reconciler agree without anyone having counted yet.
// Observe then records the count (Failures, MissedAt), which is what makes
// the count survive a restart: the store writes it in the transaction that
// observes the deadline.

// MaxThreshold bounds FailureThreshold and RecoveryThreshold (the CRD's
// bound as well): a derivation walks at most this many missed runs.
const MaxThreshold = 100

// More reasons a check goes down (see Reason).
const (
	// ReasonRuntime: a run ran longer than MaxRuntime.
	ReasonRuntime Reason = "runtime"
	// ReasonShort: a success ended a run sooner than MinRuntime.
	ReasonShort Reason = "short"
)

func (c Config) failureThreshold() int { return clampThreshold(c.FailureThreshold) }

func (c Config) recoveryThreshold() int { return clampThreshold(c.RecoveryThreshold) }

func clampThreshold(n int) int { return min(max(n, 1), MaxThreshold) }

// failReason is why the last fail ping failed.
func (f Facts) failReason() Reason {
	if f.FailReason == "" {
		return ReasonFail
	}
	return f.FailReason
}

// derived is a check's state at an instant.
type derived struct {
	status Status
	// since is when status began; for down, the flip's instant.
	since  time.Time
	reason Reason
	// failures is the failed runs in a row at the instant, and missedAt the
	// due time of the last missed run counted (or the last overrun's bound):
	// what Observe records. A down by time counts the threshold, and leaves
	// missedAt as it was, so that the facts still say why it is down (a run
	// that overran stays the run in progress).
	failures int
	missedAt time.Time
	// next is the first instant after the one derived at when time alone
	// changes the status or the count (zero: none).
	next time.Time
	// reprieved: the status is a down at the end of, or the grace of, a
	// fresh grace a return of Vigil gave (absence.go).
	reprieved bool
}

// derive returns the status at now, when it began, for down why, and the
// failed runs counted by then.
func (c Config) derive(f Facts, now time.Time) derived {
	b := c.basis(f)
	d := derived{failures: f.Failures, missedAt: f.MissedAt}
	if b.phase == phaseDown {
		d.status, d.since, d.reason = StatusDown, b.since, b.reason
		return d
	}
	n := c.failureThreshold()
	anchor, walk := b.anchor, b.phase == phaseUp
	if walk && d.failures >= n {
		// Counted under a higher threshold than today's: down, as late
		// as it is noticed, from the last miss counted.
		since := f.LastPing
		if f.MissedAt.After(since) {
			since = f.MissedAt.Add(c.Grace)
		}
		d.status, d.since, d.reason = StatusDown, since, ReasonTimeout
		return d
	}
	if f.running() {
		bound, reason, reprieved := c.runBound(f, b)
		if now.Before(bound) {
			d.status, d.since = c.calm(f, b, now)
			d.next, d.reprieved = bound, reprieved
			if b.phase == phaseUp && c.MaxRuntime <= 0 {
				if e, _, _, ok := c.due(f, anchor); ok && e.After(now) && e.Before(bound) {
					d.next = e
				}
			}
			return d
		}
		if d.failures++; d.failures >= n {
			d.status, d.since, d.reason, d.failures, d.reprieved = StatusDown, bound, reason, max(f.Failures, n), reprieved
			return d
		}
		// The next run is expected after the overrun, or after a ping
		// that came later (as the facts will say once this is counted).
		d.missedAt, anchor = bound, latest(anchor, bound)
	}
	for walk && d.failures < n {
		e, dl, reprieved, ok := c.due(f, anchor)
		if !ok {
			break
		}
		if now.Before(dl) {
			if now.Before(e) {
				d.status, d.since, d.next = StatusUp, f.LastPing, e
			} else {
				d.status, d.since, d.next, d.reprieved = StatusGrace, e, dl, reprieved
			}
			return d
		}
		if d.failures++; d.failures >= n {
			d.status, d.since, d.reason, d.failures, d.reprieved = StatusDown, dl, ReasonTimeout, max(f.Failures, n), reprieved
			return d
		}
		d.missedAt, anchor = e, e
	}
	d.status, d.since = c.calm(f, b, now)
	return d
}

// runBound is the instant a run in progress overruns, and the reason it is
// then down: its start plus MaxRuntime; without MaxRuntime, as the
// reference has it, the earlier of the start and the due time, plus Grace.
// A bound that fell while Vigil was away is a fresh grace from its return
// (reprieved, a timeout: the run may have ended unheard).
func (c Config) runBound(f Facts, b basis) (bound time.Time, reason Reason, reprieved bool) {
	bound, reason = f.LastStart.Add(c.MaxRuntime), ReasonRuntime
	if c.MaxRuntime <= 0 {
		start := f.LastStart
		if b.phase == phaseUp {
			if e, ok := c.expected(b.anchor); ok && e.Before(start) {
				start = e
			}
		}
		bound, reason = start.Add(c.Grace), ReasonTimeout
	}
	if f.reprieves(bound, f.LastStart) {
		return f.Reprieve.Add(c.Grace), ReasonTimeout, true
	}
	return bound, reason, false
}

// calm is the status of a check that time has not brought down by now.
func (c Config) calm(f Facts, b basis, now time.Time) (Status, time.Time) {
	switch b.phase {
	case phasePaused:
		return StatusPaused, f.PausedAt
	case phaseNew:
		if !f.ResumedAt.IsZero() {
			return StatusNew, f.ResumedAt
		}
		return StatusNew, now
	}
	// Without MaxRuntime a run in progress does not hold off the grace
	// period (the reference); with it, a run in progress is on time.
	if !f.running() || c.MaxRuntime <= 0 {
		if e, _, _, ok := c.due(f, b.anchor); ok && !now.Before(e) {
			return StatusGrace, e
		}
	}
	return StatusUp, f.LastPing
}

// Failures returns the failed runs in a row at now and the threshold at
// which the check goes down, for "1 of 3 failures". For a down check the
// count is what it was when it went down.
func (c Config) Failures(f Facts, now time.Time) (count, threshold int) {
	return c.derive(f, now).failures, c.failureThreshold()
}

// Recovery returns a down check's recovery streak and the successes it
// needs, for "1 of 2 successes"; the streak is 0 when none is under way.
func (c Config) Recovery(f Facts) (streak, threshold int) {
	if !f.recovering() {
		return 0, c.recoveryThreshold()
	}
	return f.Successes, c.recoveryThreshold()
}

// Explain is the plain words for why a check went down, with the policy's
// figures: "ran longer than 1 hour", "finished in 3 seconds, expected at
// least 5 minutes". Empty for the reference's reasons, which their consumers word.
func (c Config) Explain(reason Reason, f Facts) string {
	switch reason {
	case ReasonRuntime:
		return "ran longer than " + words.Duration(c.MaxRuntime)
	case ReasonShort:
		return fmt.Sprintf("finished in %s, expected at least %s", words.Duration(f.LastDuration), words.Duration(c.MinRuntime))
	case ReasonAnomaly:
		return f.FailDetail
	}
	return ""
}
