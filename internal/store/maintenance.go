package store

import (
	"fmt"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Maintenance windows hold notifications, not monitoring: while one covers
// a check, its pings and flips are recorded as ever, but a flip queues no
// delivery (its row names the window, flips.held) and no notice is sent.
// What the Channels were last told stays on the row: alertSince is set
// while they believe the check is down. When the window ends, the first
// write of the check (the deadline loop wakes it then: the end is one of
// its next changes) tells them what changed while they were not told: the
// down, if the check is still down and they believe it up; the up, to the
// Channels the down went to, if it came up. A check that went down and up
// again inside the window tells nobody anything. Re-alerts and the
// escalation, held too, resume from the end: one catches up then if its
// time passed inside.

// hold is what holds a check's notifications at an instant: a window
// (and when the next one starts), or a parent that is down
// (dependency.go).
type hold struct {
	window      string // "": none
	until, next time.Time
	parent      Dependency // when no window holds them
}

// held reports whether anything holds the notifications.
func (h hold) held() bool { return h.window != "" || h.parent.Parent != "" }

// holdAt is the window holding the check's notifications at at.
func (tg *Target) holdAt(at time.Time) hold {
	if tg.Maintenance == nil {
		return hold{}
	}
	name, until, next := tg.Maintenance.Hold(at)
	return hold{window: bound(name, maxWindowName), until: Truncate(until), next: Truncate(next)}
}

// maxWindowName bounds a window's name on a row: a Kubernetes name.
const maxWindowName = 253

// maintenance records the window that holds the check's notifications at
// at, tells the Channels that take maintenance events when one starts or
// ends, and when nothing holds the check's notifications any more (no
// window, no flapping) but one was held, tells the Channels now what
// changed while it was held.
func (t *txn) maintenance(r *row, tg *Target, h hold, at time.Time) error {
	if r.Maintenance != h.window || !r.MaintenanceUntil.Equal(h.until) {
		var notice *Flip
		switch {
		case r.Maintenance == "" && h.window != "":
			notice = &Flip{Notice: monitor.NoticeMaintenanceStart, Held: h.window, HeldUntil: h.until}
		case r.Maintenance != "" && h.window == "":
			notice = &Flip{Notice: monitor.NoticeMaintenanceEnd, Held: r.Maintenance}
		}
		r.Maintenance, r.MaintenanceUntil, r.dirty = h.window, h.until, true
		if channels := routed(tg, tg.Channels, EventMaintenance); notice != nil && len(channels) > 0 {
			notice.At, notice.From, notice.To = at, r.Facts.State, r.Facts.State
			if err := t.insertFlip(r, notice, channels); err != nil {
				return err
			}
		}
	}
	if h.held() || !r.held || t.s.opts.Flapping.flapping(r) {
		return nil // still held: by the window, a parent, or flapping (flapping.go)
	}
	r.held, r.dirty = false, true
	return t.tellHeld(r, tg, at)
}

// tellHeld tells the Channels, when a window that held the check's last
// flip has ended, what they have not heard: the down, if the check is
// still down and they believe it up; the up, to the Channels the down went
// to, if it came up since they were told of the down (even if it has been
// paused since: a PagerDuty incident must still be resolved).
func (t *txn) tellHeld(r *row, tg *Target, at time.Time) error {
	told := !r.alertSince.IsZero()
	down := r.Facts.State == monitor.StatusDown
	if down == told {
		return nil // they believe what is so
	}
	var n int64
	var reason string
	var up bool
	if err := t.queryRow(`SELECT n, reason, up FROM flips WHERE check_uid = ? AND notice = '' ORDER BY n DESC LIMIT 1`,
		string(r.UID)).Scan(&n, &reason, &up); err != nil {
		return fmt.Errorf("reading the held flip of %s/%s: %w", r.Namespace, r.Name, err)
	}
	var channels []string
	switch {
	case down:
		channels = routed(tg, tg.Channels, failedRunEvents(EventDown, monitor.Reason(reason)))
		r.alertSince, r.lastNotice, r.escalated = at, at, false
	default: // told of a down, and not down now
		if up {
			channels = routed(tg, tg.Channels, EventUp)
			if r.escalated {
				channels = union(channels, routed(tg, tg.Escalation.Channels, EventUp))
			}
		}
		r.alertSince, r.lastNotice, r.escalated = time.Time{}, time.Time{}, false
	}
	if err := t.queue(r, n, at, channels); err != nil {
		return err
	}
	if len(channels) > 0 {
		t.nNotices++
	}
	return nil
}
