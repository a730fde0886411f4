package monitor

import (
	"fmt"
	"time"

	"github.com/vigil-operator/vigil/internal/words"
)

// Vigil's own absence. A deadline that falls while no manager is running
// (a restart, an upgrade, a failover, a store that does not answer) is not
// the job's fault: its ping may have been sent to a monitor that was not
// there. The deadline loop, once back, tells Absent when it was away; a
// check whose next failed run time alone would count (a deadline, or a run
// in progress overrunning) fell within the absence is given a fresh grace
// from the return. The fact that says so is Facts.Reprieve; like every
// fact it only ever refines the derivation, and a ping after it (or a
// pause or resume) makes it moot.

// Absent records that Vigil was away from from until until (when it came
// back): if the next failed run that time alone would count fell in that
// span, the check is reprieved (Facts.Reprieve is until), so that run is
// expected by until plus Grace instead. Other checks are returned as they
// are: one already down, one whose next miss falls later, or one that
// time alone never brings down.
func (c Config) Absent(f Facts, from, until time.Time) Facts {
	miss, ok := c.nextMiss(f)
	if ok && !miss.Before(from) && !miss.After(until) && until.After(f.Reprieve) {
		f.Reprieve = until
	}
	return f
}

// Reprieved reports whether the check is in the fresh grace a return of
// Vigil gave it (see Absent) at now.
func (c Config) Reprieved(f Facts, now time.Time) bool {
	return c.derive(f, now).reprieved
}

// reprieves reports whether a failed run due at instant t, expected after
// the instant after, falls under the reprieve: the reprieve came after
// what the run was expected after (and after any pause or resume), and t
// is not after it.
func (f Facts) reprieves(t, after time.Time) bool {
	return !f.Reprieve.IsZero() && f.Reprieve.After(after) && f.Reprieve.After(f.epoch()) && !t.After(f.Reprieve)
}

// due returns when the run expected after anchor is due (e) and its
// deadline (dl, e plus Grace), with the reprieve applied, and whether the
// reprieve moved them. ok is false when no run is expected.
func (c Config) due(f Facts, anchor time.Time) (e, dl time.Time, reprieved, ok bool) {
	if e, ok = c.expected(anchor); !ok {
		return e, dl, false, false
	}
	dl = e.Add(c.Grace)
	if f.reprieves(dl, anchor) {
		return f.Reprieve, f.Reprieve.Add(c.Grace), true, true
	}
	return e, dl, false, true
}

// nextMiss is the instant time alone next counts a failed run: a run in
// progress overrunning its bound, or the next deadline (reprieves
// applied). false when time alone counts nothing (down, new, paused, or
// no run expected).
func (c Config) nextMiss(f Facts) (time.Time, bool) {
	b := c.basis(f)
	if b.phase == phaseDown {
		return time.Time{}, false
	}
	if f.running() {
		bound, _, _ := c.runBound(f, b)
		return bound, true
	}
	if b.phase != phaseUp || f.Failures >= c.failureThreshold() {
		return time.Time{}, false
	}
	_, dl, _, ok := c.due(f, b.anchor)
	return dl, ok
}

// explainAbsent is the plain words for a down that came at the end of the
// fresh grace a return of Vigil gave.
func (c Config) explainAbsent(f Facts) string {
	return fmt.Sprintf("it fell due while Vigil was away; no ping came in the %s of grace after Vigil was back at %s",
		words.Duration(c.Grace), f.Reprieve.UTC().Format("2006-01-02 15:04:05 UTC"))
}
