package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Acknowledging a down. An on-call engineer who has seen a down says so;
// the re-alerts and the escalation of that down stop (notices.go), while
// monitoring goes on: pings are recorded, the check comes up as ever, and
// its up is told. The acknowledgement belongs to the down it was made in
// (Check.Acknowledged): when the check comes up, or goes down again, it
// no longer holds, and nothing has to remember to clear it. The history
// keeps it as a notice (monitor.NoticeAck, who in Detail), queued for the
// Channels that were told of the down and carry an acknowledgement to the
// incident they opened (PagerDuty, Opsgenie: the caller names them).

// ErrNotDown is returned by Acknowledge for a check that is not down.
var ErrNotDown = errors.New("the check is not down: only a down can be acknowledged")

// maxAckBy bounds who acknowledged, as stored.
const maxAckBy = 200

// Acknowledge acknowledges the check's current down at now, by who. A down
// already acknowledged keeps its first acknowledgement. carriers are the
// check's Channels that carry an acknowledgement to their incident: those
// of them that were told of the down are told of it. It returns what the
// store then knows of the check, or ErrNotDown.
func (s *Store) Acknowledge(ctx context.Context, tg Target, by string, now time.Time, carriers []string) (Check, error) {
	o := &ackOp{target: tg, by: bound(by, maxAckBy), now: Truncate(now), carriers: carriers, result: newResult()}
	if err := s.submit(ctx, o, false); err != nil {
		return Check{}, err
	}
	return o.check, o.err
}

type ackOp struct {
	target   Target
	by       string
	now      time.Time
	carriers []string
	check    Check
	result
}

func (o *ackOp) targets() []*Target { return []*Target{&o.target} }

func (o *ackOp) apply(t *txn) error {
	tg := &o.target
	// A down whose deadline has just passed is a down to acknowledge.
	r, err := t.current(tg, o.now)
	if err != nil {
		return err
	}
	_, acked := r.Acknowledged()
	switch {
	case r.Facts.State != monitor.StatusDown:
		o.err = ErrNotDown // the caller's answer; the transaction goes on
	case !acked:
		r.Ack, r.dirty = Ack{At: o.now, By: o.by}, true
		fl := &Flip{At: o.now, From: monitor.StatusDown, To: monitor.StatusDown, Notice: monitor.NoticeAck,
			Since: r.Facts.StateSince, Detail: o.by}
		if err := t.insertFlip(r, fl, toldOfDown(r, tg, o.carriers)); err != nil {
			return err
		}
		// Its notices are no longer due: the next change moves.
		if _, err := t.observe(r, tg, o.now, o.now); err != nil {
			return err
		}
	}
	o.check = r.Check
	return nil
}

// toldOfDown are those of channels that were told of the check's current
// down: none while it was never told (a window or a parent held it), the
// Channels that take its downs, and the escalation's once it escalated.
func toldOfDown(r *row, tg *Target, channels []string) []string {
	if r.alertSince.IsZero() || len(channels) == 0 {
		return nil
	}
	told := routed(tg, tg.Channels, failedRunEvents(EventDown, r.Facts.FailReason))
	if r.escalated {
		told = union(told, tg.Escalation.Channels)
	}
	var out []string
	for _, ch := range told {
		if slices.Contains(channels, ch) {
			out = append(out, ch)
		}
	}
	return out
}
