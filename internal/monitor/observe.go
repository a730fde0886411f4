package monitor

import (
	"errors"
	"fmt"
	"time"
)

// Reason says why a check went down.
type Reason string

const (
	// ReasonFail: a fail ping (or non-zero exit status).
	ReasonFail Reason = "fail"
	// ReasonTimeout: a missed deadline, or a run that overran its grace.
	ReasonTimeout Reason = "timeout"
)

// Flip is a change of a check's status between up and down (the contract's
// flip: up→down or down→up, where up includes grace and "from" may also be
// new or paused for a down flip).
type Flip struct {
	// At is when the status changed: the fail ping, the missed deadline (not
	// when it was noticed), or the ping that brought the check back up.
	At time.Time
	// From is the status the reconciler had recorded (new, up, grace or
	// paused for a down flip; down for an up flip).
	From Status
	// To is the new status: down, or up or grace.
	To Status
	// Reason is why the check went down; empty for an up flip.
	Reason Reason
	// Detail is the policy's plain words for the reason ("ran longer than
	// 1 hour"), when it has any (see Config.Explain).
	Detail string
}

// Up reports whether the flip brought the check up (the API's "up": 1).
func (fl Flip) Up() bool { return fl.To != StatusDown }

// recorded returns the state the reconciler recorded, as it stands after any
// later pause or resume, and whether the record is still current. A record
// made at or before the epoch is superseded: the pause or resume moved the
// check to paused or new.
func (f Facts) recorded() (Status, bool) {
	if e := f.epoch(); !e.IsZero() && !f.StateSince.After(e) {
		if f.PausedAt.After(f.ResumedAt) {
			return StatusPaused, false
		}
		return StatusNew, false
	}
	if f.State == "" {
		return StatusNew, false
	}
	return f.State, true
}

// Observe is the reconciler's part: it derives the status at now, records it
// in State (with StateSince, when it began) if it changed, and returns the
// flip this change is, if any:
//
//   - into down from anything else: At is the fail ping (reason fail) or the
//     deadline (reason timeout), however long after it now is;
//   - from down into up or grace: At is the ping that ended the down.
//
// new→up, paused→up, pause and resume are not flips. Observe only changes
// State and StateSince, and observing the same facts again returns no flip.
// It sees only the latest facts: if a check went down and up again between
// two observations (a fail and then a success ping before the reconciler
// ran), no flip is recorded for it.
func (c Config) Observe(f Facts, now time.Time) (Facts, *Flip) {
	d := c.derive(f, now)
	st := d.status
	prev, current := f.recorded()
	var flip *Flip
	switch {
	case st == StatusDown && prev != StatusDown:
		flip = &Flip{At: d.since, From: prev, To: StatusDown, Reason: d.reason, Detail: c.Explain(d.reason, f)}
		if d.reprieved {
			flip.Detail = c.explainAbsent(f)
		}
	case prev == StatusDown && (st == StatusUp || st == StatusGrace):
		flip = &Flip{At: f.LastPing, From: StatusDown, To: st}
	}
	if !current || st != f.State {
		f.State, f.StateSince = st, d.since
	}
	f.Failures, f.MissedAt = d.failures, d.missedAt
	return f, flip
}

// EventKind is the kind of an Event.
type EventKind string

const (
	// EventPing is a ping of kind Event.Ping.
	EventPing EventKind = "ping"
	// EventExitStatus is a ping with an exit status (Event.ExitStatus).
	EventExitStatus EventKind = "exit"
	// EventPause is the API's pause.
	EventPause EventKind = "pause"
	// EventResume is the API's resume.
	EventResume EventKind = "resume"
	// EventTick is time passing: the reconciler observing at Event.At (for
	// example at a deadline).
	EventTick EventKind = "tick"
	// EventReturn is Vigil coming back at Event.At from an absence that
	// began at Event.AwayFrom (Absent), then observing.
	EventReturn EventKind = "return"
)

// Event is one thing that happens to a check, for Apply.
type Event struct {
	// Kind is what happened.
	Kind EventKind
	// At is when.
	At time.Time
	// Ping is the ping kind, for EventPing.
	Ping PingKind
	// ExitStatus is the exit status, for EventExitStatus.
	ExitStatus int
	// RID is the run id, for EventPing and EventExitStatus.
	RID string
	// AwayFrom is when Vigil's absence began, for EventReturn.
	AwayFrom time.Time
}

// ErrInvalidExitStatus is returned by Apply for an exit status outside 0..255.
var ErrInvalidExitStatus = errors.New("exit status out of range 0..255")

// Apply applies one event with the writer that owns it (RecordPing, Pause,
// Resume or Absent; nothing for a tick) and then observes at the event's instant, as
// the reconciler would. It returns the new facts and the flip, if any. On an
// error (ErrNotPaused, ErrInvalidExitStatus, an unknown event kind) the
// facts are returned unchanged and nothing is observed. Apply describes the
// whole state machine in one call; the real writers each call their own part.
func (c Config) Apply(f Facts, ev Event) (Facts, *Flip, error) {
	switch ev.Kind {
	case EventPing:
		f, _ = c.RecordPing(f, Ping{Kind: ev.Ping, At: ev.At, RID: ev.RID})
	case EventExitStatus:
		kind, ok := PingKindForExitStatus(ev.ExitStatus)
		if !ok {
			return f, nil, fmt.Errorf("%w: %d", ErrInvalidExitStatus, ev.ExitStatus)
		}
		f, _ = c.RecordPing(f, Ping{Kind: kind, At: ev.At, RID: ev.RID})
	case EventPause:
		f = c.Pause(f, ev.At)
	case EventResume:
		var err error
		if f, err = c.Resume(f, ev.At); err != nil {
			return f, nil, err
		}
	case EventReturn:
		f = c.Absent(f, ev.AwayFrom, ev.At)
	case EventTick:
	default:
		return f, nil, fmt.Errorf("monitor: unknown event kind %q", ev.Kind)
	}
	f, flip := c.Observe(f, ev.At)
	return f, flip, nil
}
