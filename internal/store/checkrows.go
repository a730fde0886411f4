package store

import (
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Check rows inside a transaction: locked, read once per batch and
// written once at its end.

// row is a check's row as the transaction sees it.
type row struct {
	Check
	nFlips    int64
	bodyBytes int64
	// bodyRead is bodyBytes as the transaction read it; bodyCap, when
	// positive, the lower budget the check pays a body past its
	// namespace's limit with (bodies.go).
	bodyRead, bodyCap int64
	// The current down's announcements (notices.go): when it was
	// announced (zero: not down), the last re-alert, and whether it has
	// been escalated.
	alertSince, lastNotice time.Time
	escalated              bool
	// held: the last flip's notification waits for the end of the
	// maintenance window that held it (maintenance.go).
	held bool
	// failuresSeen is the failure count last looked at for notices.
	failuresSeen int
	// flapCount notified flips since flapSince; while the check flaps,
	// flapSince is its last flip (flapping.go).
	flapSince time.Time
	flapCount int
	stored    bool // the row exists in the database
	dirty     bool // changed in this transaction
	// The trims the transaction's pings asked for (ops.go): the pings
	// and runs numbered up to these go at its end (0: none).
	trimPings, keepRuns, trimRuns int64
}

const checkColumns = `uid, namespace, name, n_pings, n_flips, last_ping, last_ping_failed, last_start, last_start_rid,
	last_duration, paused_at, resumed_at, state, state_since, next_change, body_bytes, version, failures, fail_reason,
	successes, missed_at, alert_since, last_notice, escalated, maintenance, maintenance_until, held, runs_succeeded,
	runs_failed, runs_missed, last_success, runs_dropped, flap_since, flap_count, reprieve, acked_at, acked_by, fail_detail,
	dependency, dependency_since`

// scanCheck reads a checks row selected with checkColumns.
func scanCheck(sc interface{ Scan(...any) error }) (*row, error) {
	r := &row{stored: true}
	var lastPing, lastStart, pausedAt, resumedAt, stateSince, nextChange, missedAt, alertSince, lastNotice, maintUntil,
		lastSuccess, runsDropped, flapSince, reprieve, ackedAt, dependencySince sql.NullInt64
	var lastDuration, failures, successes int64
	var state, failReason string
	err := sc.Scan(&r.UID, &r.Namespace, &r.Name, &r.NPings, &r.nFlips, &lastPing, &r.Facts.LastPingFailed, &lastStart,
		&r.Facts.LastStartRID, &lastDuration, &pausedAt, &resumedAt, &state, &stateSince, &nextChange, &r.bodyBytes, &r.Version,
		&failures, &failReason, &successes, &missedAt, &alertSince, &lastNotice, &r.escalated,
		&r.Maintenance, &maintUntil, &r.held, &r.RunCounts.Succeeded, &r.RunCounts.Failed, &r.RunCounts.Missed, &lastSuccess,
		&runsDropped, &flapSince, &r.flapCount, &reprieve, &ackedAt, &r.Ack.By, &r.Facts.FailDetail,
		&r.Dependency.Parent, &dependencySince)
	if err != nil {
		return nil, err
	}
	r.Facts.LastPing, r.Facts.LastStart = fromMicros(lastPing), fromMicros(lastStart)
	r.Facts.LastDuration = time.Duration(lastDuration) * time.Microsecond
	r.Facts.PausedAt, r.Facts.ResumedAt = fromMicros(pausedAt), fromMicros(resumedAt)
	r.Facts.State, r.Facts.StateSince = monitor.Status(state), fromMicros(stateSince)
	r.NextChange = fromMicros(nextChange)
	r.Facts.Failures, r.Facts.FailReason = int(failures), monitor.Reason(failReason)
	r.Facts.Successes, r.Facts.MissedAt = int(successes), fromMicros(missedAt)
	r.Facts.Reprieve = fromMicros(reprieve)
	r.Ack.At = fromMicros(ackedAt)
	r.Dependency.Since = fromMicros(dependencySince)
	r.alertSince, r.lastNotice = fromMicros(alertSince), fromMicros(lastNotice)
	r.MaintenanceUntil = fromMicros(maintUntil)
	r.RunCounts.LastSuccess, r.RunCounts.Dropped = fromMicros(lastSuccess), fromMicros(runsDropped)
	r.flapSince = fromMicros(flapSince)
	r.failuresSeen = r.Facts.Failures
	r.bodyRead = r.bodyBytes
	return r, nil
}

// rowWriter is an op that changes check rows: pings, observations, pauses.
type rowWriter interface {
	targets() []*Target
}

// lockRows locks, where other processes write too, every check row the
// batch changes before any is read: the rows that exist in the order of
// their UIDs, so two replicas' batches never wait for each other in a
// circle, then the missing ones as they are inserted. (Two replicas adding
// the same new checks at once in different orders can still deadlock;
// PostgreSQL then rolls one transaction back, and it is tried again:
// runTxAgain.) The change counter, locked at the end of every transaction
// (flush), comes after them all.
func (t *txn) lockRows(batch []op) error {
	byUID, uids := batchTargets(batch)
	if len(uids) == 0 {
		return nil
	}
	// The rows that exist are locked in one statement (the usual case);
	// those missing are inserted, which locks them, and read back.
	if err := t.lockExisting(uids, byUID); err != nil {
		return err
	}
	var missing []string
	for _, uid := range uids {
		if _, ok := t.rows[types.UID(uid)]; ok {
			continue
		}
		tg := byUID[types.UID(uid)]
		if err := t.exec(sqlInsertNewCheck, uid, tg.Namespace, tg.Name); err != nil {
			return fmt.Errorf("adding check %s/%s to the store: %w", tg.Namespace, tg.Name, err)
		}
		missing = append(missing, uid)
	}
	if len(missing) == 0 {
		return nil
	}
	return t.lockExisting(missing, byUID)
}

// batchTargets are the checks the batch's writes change, by UID, and their
// UIDs in order.
func batchTargets(batch []op) (map[types.UID]*Target, []string) {
	byUID := map[types.UID]*Target{}
	for _, o := range batch {
		if w, ok := o.(rowWriter); ok {
			for _, tg := range w.targets() {
				byUID[tg.UID] = tg
			}
		}
	}
	uids := make([]string, 0, len(byUID))
	for uid := range byUID {
		uids = append(uids, string(uid))
	}
	sort.Strings(uids)
	return byUID, uids
}

// preload reads the rows of every check the batch changes, a chunk of UIDs
// a statement, where this writer is the only one (SQLite: there is nothing
// to lock), so that no write asks for its check's row alone. A check the
// store does not hold yet gets a new row.
func (t *txn) preload(batch []op) error {
	byUID, uids := batchTargets(batch)
	for rest := uids; len(rest) > 0; {
		n := shape(min(len(rest), chunkRows))
		if err := t.readRows(checkSelects[n], anys(rest[:n]), byUID); err != nil {
			return fmt.Errorf("reading checks from the store: %w", err)
		}
		rest = rest[n:]
	}
	for _, uid := range uids {
		if _, ok := t.rows[types.UID(uid)]; !ok {
			tg := byUID[types.UID(uid)]
			t.rows[tg.UID] = &row{Check: Check{UID: tg.UID, Namespace: tg.Namespace, Name: tg.Name}, dirty: true}
		}
	}
	return nil
}

// readRows reads the check rows a query selects into the transaction,
// named as their targets name them.
func (t *txn) readRows(query string, args []any, byUID map[types.UID]*Target) error {
	rows, err := t.query(query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanCheck(rows)
		if err != nil {
			return err
		}
		tg := byUID[r.UID]
		r.Namespace, r.Name = tg.Namespace, tg.Name
		r.dirty = r.Version == 0 // inserted just now (lockRows)
		t.rows[r.UID] = r
	}
	return rows.Err()
}

// lockExisting locks and reads the rows of uids that exist.
func (t *txn) lockExisting(uids []string, byUID map[types.UID]*Target) error {
	if err := t.readRows(sqlLockChecks, []any{uids}, byUID); err != nil {
		return fmt.Errorf("locking checks in the store: %w", err)
	}
	return nil
}

// load returns the check's row, a new one when the store has none.
func (t *txn) load(tg *Target) (*row, error) {
	if r, ok := t.rows[tg.UID]; ok {
		return r, nil
	}
	r, err := scanCheck(t.queryRow(sqlSelectCheck, string(tg.UID)))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		r = &row{Check: Check{UID: tg.UID}, dirty: true}
	case err != nil:
		return nil, fmt.Errorf("reading check %s/%s from the store: %w", tg.Namespace, tg.Name, err)
	}
	r.Namespace, r.Name = tg.Namespace, tg.Name
	t.rows[tg.UID] = r
	return r, nil
}

// flush writes the rows the transaction changed, each with this
// transaction's change number. The number is taken under the counter row's
// lock, held to the commit, so change numbers follow commit order.
func (t *txn) flush() error {
	if err := t.flushPings(); err != nil {
		return err
	}
	var dirty []*row
	for _, r := range t.rows {
		if r.dirty {
			dirty = append(dirty, r)
		}
	}
	if len(dirty) == 0 {
		return nil
	}
	if err := t.exec(sqlNextChange); err != nil {
		return fmt.Errorf("numbering a store change: %w", err)
	}
	sort.Slice(dirty, func(i, j int) bool { return dirty[i].UID < dirty[j].UID })
	// Rows go in multi-row upserts: one statement for up to chunkRows
	// checks, not one each (each is a round trip to PostgreSQL).
	for len(dirty) > 0 {
		chunk := dirty[:shape(min(len(dirty), chunkRows))]
		dirty = dirty[len(chunk):]
		args := make([]any, 0, len(chunk)*39)
		for _, r := range chunk {
			f := r.Facts
			args = append(args, string(r.UID), r.Namespace, r.Name, r.NPings, r.nFlips, micros(f.LastPing), f.LastPingFailed,
				micros(f.LastStart), f.LastStartRID, f.LastDuration.Microseconds(), micros(f.PausedAt), micros(f.ResumedAt),
				string(f.State), micros(f.StateSince), micros(r.NextChange), r.bodyBytes,
				f.Failures, string(f.FailReason), f.Successes, micros(f.MissedAt), micros(r.alertSince), micros(r.lastNotice), r.escalated,
				r.Maintenance, micros(r.MaintenanceUntil), r.held, r.RunCounts.Succeeded, r.RunCounts.Failed, r.RunCounts.Missed,
				micros(r.RunCounts.LastSuccess), micros(r.RunCounts.Dropped), micros(r.flapSince), r.flapCount, micros(f.Reprieve),
				micros(r.Ack.At), r.Ack.By, f.FailDetail, r.Dependency.Parent, micros(r.Dependency.Since))
		}
		if err := t.exec(checkUpserts[len(chunk)], args...); err != nil {
			return fmt.Errorf("writing %d checks to the store: %w", len(chunk), err)
		}
		for _, r := range chunk {
			r.stored, r.dirty = true, false
		}
	}
	return nil
}
