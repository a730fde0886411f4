package store

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Notices are notifications about a check whose state has not changed:
// re-alerts while it stays down, its escalation, and failed runs counted
// below its failure threshold. Each is a row of flips (its kind in
// notice) with one delivery per Channel that takes it, written by the
// transaction that observes it, as a flip is: the deadline loop wakes the
// check at the next one (setNextChange), so they are at least once and
// survive a restart or a change of leader.
//
// The schedule of a down's announcements starts when the down is recorded
// (alertSince): the escalation at alertSince+After, and each Channel's
// re-alerts at alertSince plus whole multiples of its interval. A Channel
// is due when a multiple of its interval has passed since the last
// re-alert (lastNotice); one notice tells every Channel due then, and
// after an outage one notice catches up, not one per interval missed. An
// up flip, a pause or a resume (the recorded state leaving down) ends
// the schedule; an acknowledgement of the down stops it (ack.go).

// notices records the notices due by at. A maintenance window holds them
// all, as a parent that is down and flapping do: what the Channels believe
// stays as it was (maintenance.go, dependency.go, flapping.go).
func (t *txn) notices(r *row, tg *Target, at time.Time, h hold) error {
	at = Truncate(at)
	if h.held() || t.s.opts.Flapping.flapping(r) {
		r.failuresSeen = r.Facts.Failures
		return nil
	}
	if r.Facts.State != monitor.StatusDown {
		if !r.alertSince.IsZero() { // paused or resumed while down
			r.alertSince, r.lastNotice, r.escalated, r.dirty = time.Time{}, time.Time{}, false, true
		}
		return t.failureNotice(r, tg, at)
	}
	r.failuresSeen = r.Facts.Failures
	if r.alertSince.IsZero() {
		return nil // down since before notices existed: nothing scheduled
	}
	if _, ok := r.Acknowledged(); ok {
		return nil // someone has seen it (ack.go)
	}
	if esc := tg.Escalation; !r.escalated && esc.After > 0 && len(esc.Channels) > 0 && !at.Before(r.alertSince.Add(esc.After)) {
		if err := t.notice(r, monitor.NoticeEscalation, at, esc.Channels); err != nil {
			return err
		}
		r.escalated, r.dirty = true, true
	}
	var due []string
	for _, ch := range tg.Channels {
		if rt := tg.route(ch); rt.Events&EventRealert != 0 && rt.Realert > 0 && realertsBy(r, rt.Realert, at) > realertsBy(r, rt.Realert, r.lastNotice) {
			due = append(due, ch)
		}
	}
	if len(due) > 0 {
		if err := t.notice(r, monitor.NoticeRealert, at, due); err != nil {
			return err
		}
		r.lastNotice, r.dirty = at, true
	}
	return nil
}

// realertsBy is how many re-alert instants of the interval have come by
// at since the down was announced.
func realertsBy(r *row, interval time.Duration, at time.Time) int64 {
	if at.Before(r.alertSince) {
		return 0
	}
	return int64(at.Sub(r.alertSince) / interval)
}

// nextNotice is when the next notice of the check's down is due (zero:
// none).
func nextNotice(r *row, tg *Target) time.Time {
	if r.Facts.State != monitor.StatusDown || r.alertSince.IsZero() {
		return time.Time{}
	}
	if _, ok := r.Acknowledged(); ok {
		return time.Time{}
	}
	var next time.Time
	earlier := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	if esc := tg.Escalation; !r.escalated && esc.After > 0 && len(esc.Channels) > 0 {
		earlier(r.alertSince.Add(esc.After))
	}
	for _, ch := range tg.Channels {
		if rt := tg.route(ch); rt.Events&EventRealert != 0 && rt.Realert > 0 {
			earlier(r.alertSince.Add(time.Duration(realertsBy(r, rt.Realert, r.lastNotice)+1) * rt.Realert))
		}
	}
	return next
}

// failureNotice tells the Channels that take failures of a failed run
// counted below the threshold (the count grew and the check is not down).
func (t *txn) failureNotice(r *row, tg *Target, at time.Time) error {
	grew := r.Facts.Failures > r.failuresSeen
	r.failuresSeen = r.Facts.Failures
	if !grew {
		return nil
	}
	reason := failedRunReason(r.Facts)
	channels := routed(tg, tg.Channels, failedRunEvents(EventFailure, reason))
	if len(channels) == 0 {
		return nil
	}
	count, of := tg.Config.Failures(r.Facts, at)
	fl := &Flip{At: at, From: r.Facts.State, To: r.Facts.State, Notice: monitor.NoticeFailure,
		Reason: reason, Detail: fmt.Sprintf("%d of %d failures in a row", count, of)}
	return t.insertFlip(r, fl, channels)
}

// failedRunReason is why the last failed run counted failed, as near as
// the facts say: a fail ping (or one too short), or a missed run.
func failedRunReason(f monitor.Facts) monitor.Reason {
	if f.LastPingFailed && !f.MissedAt.After(f.LastPing) {
		if f.FailReason != "" {
			return f.FailReason
		}
		return monitor.ReasonFail
	}
	return monitor.ReasonTimeout
}

// notice records a notice of the down: its reason and words are the down
// flip's, and since is when the down began.
func (t *txn) notice(r *row, kind monitor.Notice, at time.Time, channels []string) error {
	fl := &Flip{At: at, From: monitor.StatusDown, To: monitor.StatusDown, Notice: kind, Since: r.Facts.StateSince}
	var reason string
	err := t.queryRow(`SELECT reason, detail FROM flips WHERE check_uid = ? AND notice = '' AND NOT up ORDER BY n DESC LIMIT 1`,
		string(r.UID)).Scan(&reason, &fl.Detail)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("reading the down of %s/%s: %w", r.Namespace, r.Name, err)
	}
	fl.Reason = monitor.Reason(reason)
	return t.insertFlip(r, fl, channels)
}

// routed are the channels that take the event.
func routed(tg *Target, channels []string, ev Event) []string {
	var out []string
	for _, ch := range channels {
		if tg.route(ch).Events&ev != 0 {
			out = append(out, ch)
		}
	}
	return out
}

// union is a with the names of b it lacks.
func union(a, b []string) []string {
	for _, n := range b {
		if !slices.Contains(a, n) {
			a = append(a, n)
		}
	}
	return a
}
