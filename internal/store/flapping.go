package store

import (
	"fmt"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/words"
)

// A check that changes state faster than anyone can act on is flapping. Its
// first Limit flips within a Window are notified one by one. The next one
// starts the flapping: it and every flip after it are recorded (the
// history, the API and the dashboard show them all) but held, as a
// maintenance window holds them, and a "flapping" notice tells the Channels
// once. When the check has kept one state for Steady, the flapping ends and
// the Channels are told what changed while they were not, as at a window's
// end (tellHeld): the down if it is down and they believe it up, the up if
// they were told of a down. Re-alerts, the escalation and failure notices
// wait meanwhile, as in a window.
//
// So a check queues at most Limit+2 notifications per Channel for a spell
// of flapping (the Limit flips, the notice, the state it settles in),
// however fast it flips, and a spell lasts at least Steady; each flip
// queued one per Channel before. The outbox's rows, the Channels' rate
// limits and the people paged are the budget. Once a spell ends, the next
// flips are told one by one again: a real down after it is not delayed.
// Flips a window held are not counted: nobody was told of them.

// FlapPolicy is when a check is flapping.
type FlapPolicy struct {
	// Limit is how many flips within Window are notified one by one
	// (default DefaultFlapLimit; less than 0: every flip is, always).
	Limit int
	// Window is how long the flips are counted from the first one
	// (default 1 h).
	Window time.Duration
	// Steady is how long a flapping check keeps one state before its
	// flapping ends (default 10 min).
	Steady time.Duration
}

// DefaultFlapLimit is how many flips an hour are notified one by one, by
// default: five downs and five ups.
const DefaultFlapLimit = 10

func (p *FlapPolicy) defaults() {
	if p.Limit == 0 {
		p.Limit = DefaultFlapLimit
	}
	if p.Window <= 0 {
		p.Window = time.Hour
	}
	if p.Steady <= 0 {
		p.Steady = 10 * time.Minute
	}
}

// flapping reports whether the check is flapping: its flips are held.
func (p FlapPolicy) flapping(r *row) bool { return p.Limit >= 0 && r.flapCount > p.Limit }

// countFlip counts a flip at at that would be notified, and reports whether
// it is held instead because the check flaps, and whether this flip is the
// one that started the flapping.
func (p FlapPolicy) countFlip(r *row, at time.Time) (held, started bool) {
	if p.Limit < 0 {
		return false, false
	}
	r.dirty = true
	if p.flapping(r) {
		r.flapSince = at
		return true, false
	}
	if r.flapSince.IsZero() || !at.Before(r.flapSince.Add(p.Window)) {
		r.flapSince, r.flapCount = at, 0
	}
	r.flapCount++
	if p.flapping(r) {
		r.flapSince = at
		return true, true
	}
	return false, false
}

// steadyAt is when a flapping check's flapping ends if it flips no more
// (zero: it is not flapping).
func (p FlapPolicy) steadyAt(r *row) time.Time {
	if !p.flapping(r) {
		return time.Time{}
	}
	return r.flapSince.Add(p.Steady)
}

// steady ends the check's flapping if it has kept one state for Steady by
// at; what its Channels were not told is told when nothing else holds it
// (release).
func (p FlapPolicy) steady(r *row, at time.Time) {
	if end := p.steadyAt(r); !end.IsZero() && !at.Before(end) {
		r.flapSince, r.flapCount, r.dirty = time.Time{}, 0, true
	}
}

// flappingNotice tells the Channels that would have been told of the
// check's flips that they are held from now.
func (t *txn) flappingNotice(r *row, tg *Target, at time.Time) error {
	p := t.s.opts.Flapping
	channels := union(routed(tg, tg.Channels, failedRunEvents(EventDown, r.Facts.FailReason)), routed(tg, tg.Channels, EventUp))
	if len(channels) == 0 {
		return nil
	}
	return t.insertFlip(r, &Flip{Notice: monitor.NoticeFlapping, At: at, From: r.Facts.State, To: r.Facts.State,
		Detail: fmt.Sprintf("%d state changes within %s; its notifications are held until it keeps one state for %s",
			r.flapCount, words.Duration(p.Window), words.Duration(p.Steady))}, channels)
}
