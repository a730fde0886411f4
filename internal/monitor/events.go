package monitor

import (
	"errors"
	"time"
)

// PingKind is the kind of a ping, as logged ("type" in the API's ping list).
type PingKind string

const (
	// PingSuccess is a success signal.
	PingSuccess PingKind = "success"
	// PingStart is a start signal: a run began.
	PingStart PingKind = "start"
	// PingFail is a failure signal.
	PingFail PingKind = "fail"
	// PingLog is a log entry; it changes nothing.
	PingLog PingKind = "log"
	// PingIgnored is a ping the check does not act on: a method the check
	// does not accept, no keyword match, or a paused check with manual
	// resume.
	PingIgnored PingKind = "ign"
)

// PingKindForExitStatus maps the exit status in a /ping/<uuid>/<n> URL to a
// ping kind: 0 is a success and 1..255 a failure. ok is false outside 0..255
// (the HTTP layer answers those "invalid url format" and records nothing).
func PingKindForExitStatus(status int) (kind PingKind, ok bool) {
	switch {
	case status == 0:
		return PingSuccess, true
	case status > 0 && status <= 255:
		return PingFail, true
	}
	return "", false
}

// Ping is one ping as the ping path hands it to RecordPing.
type Ping struct {
	// Kind is the classified signal (after URL action, exit status, the
	// methods filter and keyword classification).
	Kind PingKind
	// At is when the ping arrived.
	At time.Time
	// RID is the run id ("" when the ping had none), lowercase.
	RID string
	// Usual is the check's usual range of run durations, learned by the
	// store from its last runs when Config.Anomaly is set (anomaly.go);
	// the zero Usual judges nothing.
	Usual Usual
}

// PingResult is what RecordPing did with a ping, for the ping log.
type PingResult struct {
	// Kind is the kind to log: the ping's kind, or "ign" when the check
	// ignored it (paused with manual resume, or an unknown kind).
	Kind PingKind
	// At is the instant recorded in the facts: the ping's At, moved forward
	// when needed to order it after facts already recorded (see the package
	// documentation). Log the ping with this instant so that the log and
	// last_ping agree.
	At time.Time
	// Duration is the run's duration when the ping ended a run it started
	// (same run id, or both without one); valid when HasDuration.
	Duration time.Duration
	// HasDuration reports whether Duration is set.
	HasDuration bool
}

// RecordPing applies one ping to the facts: the ping path's part (reference
// 8.5). It changes only the ping fields (LastPing, LastPingFailed,
// LastStart, LastStartRID, LastDuration), never the pause or reconciler
// fields, and does not decide flips: the reconciler derives them.
//
//   - A check that is paused at p.At with ManualResume ignores every ping:
//     the result is "ign" and nothing changes.
//   - start: LastStart and LastStartRID are set; the status is unchanged (a
//     paused check stays paused).
//   - success, fail: LastPing is set and LastPingFailed says which (a
//     success that ends a run sooner than MinRuntime is a fail, logged as
//     one, with FailReason ReasonShort);
//     LastDuration is cleared. If a run is outstanding and the ping has the
//     same run id (both empty counts as equal), the run ends: LastDuration is
//     its duration. Otherwise a fail, or a ping without a run id, ends the run
//     without a duration, and a success with another run id leaves it
//     outstanding.
//   - log, ign: nothing changes. Any other kind is treated as ign.
//
// It also keeps the alert policy's counts (policy.go): runs missed before
// the ping are counted first; a fail adds a failure; a success while down
// adds to the recovery streak, and otherwise clears the counts.
func (c Config) RecordPing(f Facts, p Ping) (Facts, PingResult) {
	res := PingResult{Kind: p.Kind, At: p.At}
	switch {
	case p.Kind != PingSuccess && p.Kind != PingFail && p.Kind != PingStart && p.Kind != PingLog:
		res.Kind = PingIgnored
		return f, res
	case c.ManualResume && c.Status(f, p.At) == StatusPaused:
		res.Kind = PingIgnored
		return f, res
	case p.Kind == PingLog:
		return f, res
	}
	at := f.orderPing(p.At, p.Kind != PingStart)
	res.At = at
	// Runs missed before this ping are counted first: a start would hide
	// them (a run in progress is not missing any).
	before := c.derive(f, at)
	if before.status != StatusDown {
		f.Failures, f.MissedAt = before.failures, before.missedAt
	}
	if p.Kind == PingStart {
		f.LastStart, f.LastStartRID = at, p.RID
		if f.Failures >= c.failureThreshold() && c.Status(f, at) != StatusDown {
			// It replaced the overrun run that kept the check down: the
			// down is over, and the count starts again.
			f = f.clearCounts()
		}
		return f, res
	}
	wasDown := before.status == StatusDown
	overran := f.Started() && !f.running() // a run already counted as overrun
	prevLast, prevFailed := f.LastPing, f.LastPingFailed
	failed := p.Kind == PingFail
	f.LastDuration = 0
	counted := overran && (f.LastStartRID == p.RID || failed || p.RID == "") // and this ping ends it
	switch {
	case !f.Started():
		f.LastStart, f.LastStartRID = time.Time{}, ""
	case f.LastStartRID == p.RID:
		res.Duration, res.HasDuration = at.Sub(f.LastStart), true
		f.LastDuration = res.Duration
		f.LastStart, f.LastStartRID = time.Time{}, ""
	case failed || p.RID == "":
		f.LastStart, f.LastStartRID = time.Time{}, ""
	}
	var reason Reason // a fail ping's own; failReason reads "" as ReasonFail
	detail := ""
	switch {
	case failed || !res.HasDuration:
	case c.MinRuntime > 0 && res.Duration < c.MinRuntime:
		failed, reason, res.Kind = true, ReasonShort, PingFail
	case c.Anomaly != nil && !p.Usual.Contains(res.Duration):
		failed, reason, res.Kind = true, ReasonAnomaly, PingFail
		detail = anomalyDetail(res.Duration, p.Usual)
	}
	f.LastPing, f.LastPingFailed = at, failed
	switch {
	case !wasDown && counted:
		// The overrun was this run's failure; its end changes no count.
	case failed:
		f.FailReason, f.FailDetail, f.Successes = reason, detail, 0
		f.Failures = min(f.Failures+1, MaxThreshold)
		if wasDown {
			f.Failures = max(f.Failures, c.failureThreshold())
		}
	case wasDown:
		streak := f.Successes + 1
		if f.Successes > 0 && !prevFailed {
			// The streak holds only while each success is on time for
			// the one before.
			if e, ok := c.expected(prevLast); ok && !at.Before(e.Add(c.Grace)) {
				streak = 1
			}
		}
		if streak < c.recoveryThreshold() {
			f.Successes = streak
		} else {
			f = f.clearCounts()
		}
	default:
		f = f.clearCounts()
	}
	return f, res
}

// clearCounts forgets the alert policy's counts.
func (f Facts) clearCounts() Facts {
	f.Failures, f.FailReason, f.FailDetail, f.Successes, f.MissedAt = 0, "", "", 0, time.Time{}
	return f
}

// orderPing returns the instant to record a ping or start that arrived at at:
// not before the last ping or start, strictly after the epoch (so that it
// counts), and for a success or fail (ending) not before a recorded down
// began (so that it ends the sticky down). Clocks of the replicas differ;
// the order in which facts are written is the truth.
func (f Facts) orderPing(at time.Time, ending bool) time.Time {
	at = latest(at, f.LastPing, f.LastStart)
	if e := f.epoch(); !e.IsZero() && !at.After(e) {
		at = e.Add(microsecond)
	}
	if ending && f.State == StatusDown && at.Before(f.StateSince) {
		at = f.StateSince
	}
	return at
}

// ErrNotPaused is returned by Resume for a check that is not paused. The API
// answers 409 with this message.
var ErrNotPaused = errors.New("check is not paused")

// Pause pauses the check at at: the API's part (reference 4.9). A check that
// is already paused is returned unchanged. Otherwise PausedAt is set, which
// ends a run in progress (Started becomes false) and stops monitoring; the
// last ping stays displayed. PausedAt changes, never set before a fact the
// API already sees, and the policy's counts start again. Pausing records no flip.
func (c Config) Pause(f Facts, at time.Time) Facts {
	if c.Status(f, at) == StatusPaused {
		return f
	}
	p := latest(at, f.LastPing, f.LastStart, f.StateSince, f.PausedAt)
	if !p.After(f.ResumedAt) {
		p = f.ResumedAt.Add(microsecond)
	}
	f.PausedAt = p
	return f.clearCounts()
}

// Resume resumes a paused check at at: the API's part (reference 4.10). The
// check becomes new: the last ping and any run in progress no longer count
// (n_pings and last_duration stay). ResumedAt changes, never set before a
// fact the API already sees, and the policy's counts start again. It returns ErrNotPaused, and the
// facts unchanged, when the check is not paused at at. Resuming records no
// flip.
func (c Config) Resume(f Facts, at time.Time) (Facts, error) {
	if c.Status(f, at) != StatusPaused {
		return f, ErrNotPaused
	}
	f.ResumedAt = latest(at, f.PausedAt, f.LastPing, f.LastStart, f.StateSince)
	return f.clearCounts(), nil
}
