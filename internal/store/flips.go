package store

import (
	"fmt"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/words"
)

// What a write does to a check's state: the flips it causes, the
// deliveries (the outbox) a flip queues, and the bounds on what a flip keeps.

// current is the check's row with what time has done to it by now: a
// write that acts on the check's state (a pause, an acknowledgement) acts
// on the state it has, a deadline that has just passed included.
func (t *txn) current(tg *Target, now time.Time) (*row, error) {
	r, err := t.load(tg)
	if err != nil {
		return nil, err
	}
	if _, err := t.observe(r, tg, now, now); err != nil {
		return nil, err
	}
	return r, nil
}

// observe records what time has done to the check by at (a missed deadline
// is a down flip at the deadline, however late it is noticed), then moves
// the check's next change. now is when the write happens (at or later):
// whether a maintenance window holds what it owes is decided as of now.
func (t *txn) observe(r *row, tg *Target, at, now time.Time) (*Flip, error) {
	facts, flip := tg.Config.Observe(t.s.absent(tg.Config, r.Facts, at), at)
	h := tg.holdAt(now)
	if h.window == "" {
		var err error
		if h.parent, err = t.parentDown(r, tg, facts); err != nil {
			return nil, err
		}
	}
	if !r.Dependency.same(h.parent) {
		r.Dependency, r.dirty = h.parent, true
	}
	t.s.opts.Flapping.steady(r, now)
	if err := t.maintenance(r, tg, h, now); err != nil {
		return nil, err
	}
	var downSince time.Time // the down an up flip ends began then
	if r.Facts.State == monitor.StatusDown {
		downSince = r.Facts.StateSince
	}
	if facts != r.Facts {
		r.Facts, r.dirty = facts, true
	}
	var recorded *Flip
	if flip != nil {
		var err error
		if recorded, err = t.addFlip(r, tg, flip, at, downSince, h); err != nil {
			return nil, err
		}
	}
	if err := t.notices(r, tg, now, h); err != nil {
		return nil, err
	}
	// The next change after the instant observed: a ping dated earlier
	// (a Job's end, read later) may have one already past, due at once.
	t.setNextChange(r, tg, at, h)
	return recorded, nil
}

// setNextChange moves the check's next change to the first of: what time
// does to its state, its next notice (none while a window holds them),
// and the start or end of a maintenance window.
func (t *txn) setNextChange(r *row, tg *Target, at time.Time, h hold) {
	next, ok := tg.Config.NextChange(r.Facts, at)
	if !ok {
		next = time.Time{}
	}
	earlier := func(n time.Time) {
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	earlier(t.s.opts.Flapping.steadyAt(r))
	switch {
	case h.window != "":
		earlier(h.until)
	case h.parent.Parent != "": // is it back? (dependency.go)
		earlier(at.Add(DependencyRecheck))
		earlier(h.next)
	case t.s.opts.Flapping.flapping(r):
		earlier(h.next)
	default:
		earlier(nextNotice(r, tg))
		earlier(h.next)
	}
	next = Truncate(next)
	if !next.Equal(r.NextChange) {
		r.NextChange, r.dirty = next, true
	}
}

// addFlip records a flip with one pending delivery per channel that takes
// it: the outbox is written in the same transaction as the flip. A down
// starts the down's announcements (notices.go); an up is told to the
// Channels the down was, escalation included, and says how long it was.
// A flip while a maintenance window or a parent holds notifications
// queues none (maintenance.go, dependency.go).
func (t *txn) addFlip(r *row, tg *Target, f *monitor.Flip, at, downSince time.Time, h hold) (*Flip, error) {
	fl := &Flip{At: Truncate(f.At), Up: f.Up(), From: f.From, To: f.To, Reason: f.Reason, Detail: bound(f.Detail, maxDetail)}
	var channels []string
	// A parent holds a down, never the up of a down the Channels were
	// told of (dependency.go).
	byParent := h.parent.Parent != "" && (!fl.Up || r.alertSince.IsZero())
	flapHeld, flapStarted := false, false
	if h.window == "" && !byParent {
		flapHeld, flapStarted = t.s.opts.Flapping.countFlip(r, fl.At)
	}
	switch {
	case h.window != "":
		fl.Held, fl.HeldUntil, r.held = h.window, h.until, true
		if fl.Up {
			fl.Since = downSince
		}
	case byParent:
		fl.Held, r.held = heldParent+bound(h.parent.Parent, maxWindowName), true
		if fl.Up {
			fl.Since = downSince
		}
	case flapHeld: // flapping.go
		fl.Held, r.held = HeldFlapping, true
		if fl.Up {
			fl.Since = downSince
		}
	case fl.Up:
		fl.Since = downSince
		channels = routed(tg, tg.Channels, EventUp)
		if r.escalated {
			channels = union(channels, routed(tg, tg.Escalation.Channels, EventUp))
		}
		r.alertSince, r.lastNotice, r.escalated = time.Time{}, time.Time{}, false
	default:
		channels = routed(tg, tg.Channels, failedRunEvents(EventDown, fl.Reason))
		r.alertSince, r.lastNotice, r.escalated = Truncate(at), Truncate(at), false
	}
	if err := t.insertFlip(r, fl, channels); err != nil {
		return nil, err
	}
	r.LastFlip = fl
	if flapStarted {
		if err := t.flappingNotice(r, tg, fl.At); err != nil {
			return nil, err
		}
	}
	return fl, nil
}

// insertFlip writes a flip or a notice, numbered in the check's sequence,
// and its deliveries.
func (t *txn) insertFlip(r *row, fl *Flip, channels []string) error {
	r.nFlips++
	r.dirty = true
	fl.N = r.nFlips
	// A miss held by a maintenance window is not counted: the statistics
	// (History) leave those out too.
	if fl.Notice == "" && !fl.Up && fl.Reason == monitor.ReasonTimeout && fl.HeldBy() == "" {
		r.RunCounts.Missed++
	}
	if err := t.exec(sqlInsertFlip, string(r.UID), fl.N, fl.At.UnixMicro(), fl.Up, string(fl.From), string(fl.To),
		string(fl.Reason), fl.Detail, string(fl.Notice), micros(fl.Since), fl.Held, micros(fl.HeldUntil)); err != nil {
		return fmt.Errorf("recording a flip of %s/%s: %w", r.Namespace, r.Name, err)
	}
	if err := t.queue(r, fl.N, fl.At, channels); err != nil {
		return err
	}
	if err := t.trimFlips(r); err != nil {
		return err
	}
	if fl.Notice == "" {
		t.flips = append(t.flips, CommittedFlip{Namespace: r.Namespace, Flip: *fl})
	} else {
		t.nNotices++
	}
	return nil
}

// DefaultFlipLimit is how many flips and notices a check keeps by default:
// 90 days of a few flips a day, while a check that flips every second
// keeps hours of them rather than millions of rows.
const DefaultFlipLimit = 10_000

// trimFlips deletes the check's oldest flips past FlipLimit, and their
// deliveries; a flip with a notification still pending stays until it is
// sent (the minute's prune takes it then). It runs once every sixteenth of
// the limit, so that a check keeps between the limit and a sixteenth more,
// and each flip does not pay for a delete.
func (t *txn) trimFlips(r *row) error {
	limit := t.s.opts.FlipLimit
	step := max(limit/16, 1)
	if r.nFlips <= limit || (r.nFlips-limit)%step != 0 {
		return nil
	}
	upto := r.nFlips - limit
	if err := t.exec(`DELETE FROM deliveries WHERE check_uid = ? AND flip_n <= ? AND state <> ?`,
		string(r.UID), upto, string(DeliveryPending)); err != nil {
		return fmt.Errorf("trimming the flips of %s/%s: %w", r.Namespace, r.Name, err)
	}
	if err := t.exec(`DELETE FROM flips WHERE check_uid = ? AND n <= ? AND NOT EXISTS (
		SELECT 1 FROM deliveries d WHERE d.check_uid = flips.check_uid AND d.flip_n = flips.n)`,
		string(r.UID), upto); err != nil {
		return fmt.Errorf("trimming the flips of %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}

// queue writes a pending delivery of flip n to each channel, due at.
func (t *txn) queue(r *row, n int64, at time.Time, channels []string) error {
	// Queued now, whatever instant the flip is dated (a deadline noticed
	// late): storm control counts what reached a Channel's queue lately.
	queued := t.s.now()
	for _, ch := range channels {
		if err := t.channel(r.Namespace, ch); err != nil {
			return fmt.Errorf("queueing a notification of %s/%s: %w", r.Namespace, r.Name, err)
		}
		if err := t.exec(sqlInsertDelivery, string(r.UID), n, string(DeliveryPending), at.UnixMicro(), queued.UnixMicro(),
			r.Namespace, ch); err != nil {
			return fmt.Errorf("queueing a notification of %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	return nil
}

// channel makes sure the Channel has a number, once a transaction.
func (t *txn) channel(namespace, name string) error {
	key := ChannelRef{Namespace: namespace, Name: name}
	if t.channels[key] {
		return nil
	}
	if err := t.exec(sqlInsertChannel, namespace, name); err != nil {
		return err
	}
	if t.channels == nil {
		t.channels = map[ChannelRef]bool{}
	}
	t.channels[key] = true
	return nil
}

// maxDetail bounds a flip's detail: the policy's own words, a sentence.
const maxDetail = 200

// bound cuts s to at most n bytes, on a rune boundary (words.Cut).
func bound(s string, n int) string {
	s, _ = words.Cut(s, n)
	return s
}
