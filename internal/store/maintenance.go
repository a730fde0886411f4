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

// hold is the window that holds a check's notifications at an instant, or
// when the next one starts.
type hold struct {
	window      string // "": none
	until, next time.Time
}

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
// at, and when one has ended with a notification held, tells the Channels
// now what changed while it was held.
func (t *txn) maintenance(r *row, tg *Target, h hold, at time.Time) error {
	if r.Maintenance != h.window || !r.MaintenanceUntil.Equal(h.until) {
		r.Maintenance, r.MaintenanceUntil, r.dirty = h.window, h.until, true
	}
	if h.window != "" || !r.held {
		return nil
	}
	r.held, r.dirty = false, true
	var channels []string
	told := !r.alertSince.IsZero()
	switch state := r.Facts.State; {
	case state == monitor.StatusDown && !told:
		channels = routed(tg, tg.Channels, EventDown)
		r.alertSince, r.lastNotice, r.escalated = at, at, false
	case state != monitor.StatusDown && told:
		if state == monitor.StatusUp || state == monitor.StatusGrace {
			channels = routed(tg, tg.Channels, EventUp)
			if r.escalated {
				channels = union(channels, routed(tg, tg.Escalation.Channels, EventUp))
			}
		}
		r.alertSince, r.lastNotice, r.escalated = time.Time{}, time.Time{}, false
	}
	if len(channels) == 0 {
		return nil
	}
	var n int64
	if err := t.queryRow(`SELECT n FROM flips WHERE check_uid = ? AND notice = '' ORDER BY n DESC LIMIT 1`,
		string(r.UID)).Scan(&n); err != nil {
		return fmt.Errorf("reading the held flip of %s/%s: %w", r.Namespace, r.Name, err)
	}
	for _, ch := range channels {
		if err := t.exec(sqlInsertDelivery, string(r.UID), n, ch, string(DeliveryPending), at.UnixMicro(), r.Namespace); err != nil {
			return fmt.Errorf("queueing a held notification of %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	t.nNotices++
	return nil
}
