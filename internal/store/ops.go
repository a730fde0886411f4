package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// defaultPingLog is a check's ping log length when its Target does not say.
const defaultPingLog = 100

// pruneEvery is how often (in pings) a check's ping log is cut back to its
// limit: readers ask for at most the limit, so the log may run a few over.
const pruneEvery = 16

// RecordPing stores a ping and returns once it is durable: the ping in the
// check's log, the state transition it causes and the flip with its pending
// deliveries, in one transaction. A deadline the check missed before the
// ping arrived is recorded first, as the down it was.
func (s *Store) RecordPing(ctx context.Context, tg Target, p Ping) (Recorded, error) {
	o := &pingOp{target: tg, ping: p, result: newResult()}
	if err := s.submit(ctx, o, true); err != nil {
		return Recorded{}, err
	}
	if o.earlyMine && o.err == nil {
		s.early.give(tg.Namespace, int64(len(p.Body)))
	}
	return o.rec, o.err
}

type pingOp struct {
	target Target
	ping   Ping
	rec    Recorded
	// earlyMine: the early ping it recorded was this store's (early.go).
	earlyMine bool
	result
}

func (o *pingOp) queuedBytes() int64 { return int64(len(o.ping.Body)) }

func (o *pingOp) targets() []*Target { return []*Target{&o.target} }

func (o *pingOp) apply(t *txn) error {
	// A batch that fails is applied again, each op alone: nothing of the
	// first try is kept.
	o.rec, o.earlyMine = Recorded{}, false
	tg, p := &o.target, o.ping
	r, err := t.load(tg)
	if err != nil {
		return err
	}
	at := Truncate(p.At)
	if p.Early != "" {
		found, err := t.takeEarly(o, p.Early)
		if err != nil {
			return err
		}
		if !found {
			o.rec.Taken = true
			return nil
		}
		if at.Before(latest(r.Facts.LastPing, r.Facts.LastStart)) {
			// A newer ping of the check was recorded first: the state
			// says what came after this one, so it is logged only.
			o.rec.LogOnly = true
			o.log(t, r, tg, p.Kind, at, nil)
			return nil
		}
	}
	// A ping may be dated before it reached Vigil (a Job's end, read
	// later): its notifications are held or sent as of when it is
	// recorded, never as of a window that has already ended or not yet
	// begun then.
	now := at
	if n := Truncate(p.Noted); n.After(now) {
		now = n
	}
	if _, err := t.observe(r, tg, at, now); err != nil {
		return err
	}
	usual, err := t.usual(r, tg.Config, p)
	if err != nil {
		return err
	}
	facts, res := tg.Config.RecordPing(r.Facts, monitor.Ping{Kind: p.Kind, At: at, RID: p.RID, Usual: usual})
	r.Facts = facts
	// A run's duration is kept with the ping that ended it: the ping is the
	// run while the log holds it (runs.go).
	var duration any
	if res.HasDuration && (res.Kind == monitor.PingSuccess || res.Kind == monitor.PingFail) {
		duration = res.Duration.Microseconds()
	}
	o.log(t, r, tg, res.Kind, Truncate(res.At), duration)
	if resAt := Truncate(res.At); resAt.After(now) {
		now = resAt
	}
	if o.rec.Flip, err = t.observe(r, tg, Truncate(res.At), now); err != nil {
		return err
	}
	switch res.Kind {
	case monitor.PingSuccess:
		r.RunCounts.Succeeded++
		r.RunCounts.LastSuccess = Truncate(res.At)
	case monitor.PingFail:
		r.RunCounts.Failed++
	}
	// The log and the runs are cut back at the end of the transaction
	// (trim), once for all the check's pings in it.
	if r.NPings%pruneEvery == 0 {
		limit := int64(tg.PingLogLimit)
		if limit <= 0 {
			limit = defaultPingLog
		}
		runs := int64(t.s.opts.RunLimit)
		if r.NPings > limit {
			r.trimPings, r.keepRuns = r.NPings-limit, r.NPings-runs
		}
		if r.NPings > runs {
			r.trimRuns = r.NPings - runs
		}
	}
	return nil
}

// takeEarly deletes the early ping id, and reports whether it was there: a
// replica that finds it gone records nothing, another one has (early.go).
// The check's row is locked already, so the other's transaction has ended.
func (t *txn) takeEarly(o *pingOp, id string) (found bool, err error) {
	err = t.ask(`DELETE FROM early_pings WHERE id = ? RETURNING replica`, func(rows rows) error {
		for rows.Next() {
			var replica string
			if err := rows.Scan(&replica); err != nil {
				return err
			}
			found, o.earlyMine = true, replica == t.s.replica
		}
		return rows.Err()
	}, id)
	if err == nil {
		err = t.sync()
	}
	return found, err
}

// log adds the ping to the check's log as kind, at at, its body within
// the namespace's budget, with the duration of the run it ended (nil:
// none).
func (o *pingOp) log(t *txn, r *row, tg *Target, kind monitor.PingKind, at time.Time, duration any) {
	p := o.ping
	r.NPings++
	r.dirty = true
	o.rec.N, o.rec.Kind = r.NPings, kind
	var exit, body any
	if p.ExitStatus != nil {
		exit = *p.ExitStatus
	}
	dropped := false
	if len(p.Body) > 0 {
		if t.admitBody(r, tg.BodyLimit, int64(len(p.Body))) {
			body = p.Body
			r.bodyBytes += int64(len(p.Body))
		} else {
			dropped, o.rec.BodyRefused = true, true
		}
	}
	t.insertPing(string(r.UID), r.NPings, string(kind), at.UnixMicro(), p.Scheme, p.RemoteAddr, p.Method, p.UA, p.RID,
		exit, duration, dropped, body)
}

// latest is the latest of the instants.
func latest(ts ...time.Time) time.Time {
	var l time.Time
	for _, t := range ts {
		if t.After(l) {
			l = t
		}
	}
	return l
}

// trim cuts back the ping logs and the runs of the checks whose pings
// asked for it, then drops the oldest bodies of those over the body
// budget. It runs once at the end of the transaction, not at each ping:
// its statements' answers are waited for, and on PostgreSQL they share one
// round trip however many checks and pings the batch holds.
func (t *txn) trim() error {
	var trimmed []*row
	for _, r := range t.rows {
		if r.trimPings > 0 || r.trimRuns > 0 || (r.dirty && r.bodyBytes > t.bodyBudget(r)) {
			trimmed = append(trimmed, r)
		}
	}
	if len(trimmed) == 0 {
		return nil
	}
	sort.Slice(trimmed, func(i, j int) bool { return trimmed[i].UID < trimmed[j].UID })
	for _, r := range trimmed {
		if r.trimPings > 0 {
			if err := t.prunePings(r, r.trimPings, r.keepRuns); err != nil {
				return err
			}
		}
		if r.trimRuns > 0 {
			if err := t.pruneRuns(r); err != nil {
				return err
			}
		}
		r.trimPings, r.trimRuns = 0, 0
	}
	if err := t.sync(); err != nil {
		return fmt.Errorf("trimming ping logs and runs: %w", err)
	}
	for _, r := range trimmed {
		if r.bodyBytes > t.bodyBudget(r) {
			if err := t.dropBodies(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// prunePings deletes the pings numbered upto and below. The runs they
// ended move to the runs table, those numbered above keepRuns; the others
// are let go (a ping log longer than the runs kept).
func (t *txn) prunePings(r *row, upto, keepRuns int64) error {
	if keepRuns < upto {
		if err := t.exec(sqlMoveRuns, string(r.UID), max(keepRuns, 0), upto); err != nil {
			return fmt.Errorf("keeping the runs of %s/%s: %w", r.Namespace, r.Name, err)
		}
	}
	err := t.ask(sqlPrunePings, func(rows rows) error {
		for rows.Next() {
			var (
				size, n, created int64
				kind             string
			)
			if err := rows.Scan(&size, &n, &kind, &created); err != nil {
				return err
			}
			r.bodyBytes -= size
			if n <= keepRuns && (kind == string(monitor.PingSuccess) || kind == string(monitor.PingFail)) {
				r.RunCounts.Dropped = later(r.RunCounts.Dropped, time.UnixMicro(created).UTC())
			}
		}
		return rows.Err()
	}, string(r.UID), upto)
	if err != nil {
		return fmt.Errorf("trimming the ping log of %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}

// dropBodies drops the oldest bodies of the check's pings until the rest
// fit its body budget (bodyBudget); the pings stay, marked as having had
// one.
func (t *txn) dropBodies(r *row) error {
	rows, err := t.query(`SELECT n, length(body) FROM pings WHERE check_uid = ? AND body IS NOT NULL ORDER BY n`, string(r.UID))
	if err != nil {
		return err
	}
	var drop []int64
	excess := r.bodyBytes - t.bodyBudget(r)
	for rows.Next() && excess > 0 {
		var n, size int64
		if err := rows.Scan(&n, &size); err != nil {
			_ = rows.Close()
			return err
		}
		drop = append(drop, n)
		excess -= size
		r.bodyBytes -= size
	}
	if err := rows.Close(); err != nil {
		return err
	}
	for _, n := range drop {
		if err := t.exec(`UPDATE pings SET body = NULL, body_dropped = TRUE WHERE check_uid = ? AND n = ?`, string(r.UID), n); err != nil {
			return err
		}
	}
	r.dirty = len(drop) > 0 || r.dirty // its body_bytes changed
	return nil
}

// Observe records what time has done to each check by now: a deadline
// passed is a down flip (at the deadline), with its pending deliveries; a
// due time passed moves an up check to grace. It also creates the rows of
// checks the store has not seen. The deadline loop calls it for due checks,
// the check controller when a spec changes. It returns the flips recorded,
// by check.
func (s *Store) Observe(ctx context.Context, targets []Target, now time.Time) (map[types.UID]*Flip, error) {
	o := &observeOp{checks: targets, now: Truncate(now), flips: map[types.UID]*Flip{}, result: newResult()}
	if err := s.submit(ctx, o, false); err != nil {
		return nil, err
	}
	return o.flips, o.err
}

type observeOp struct {
	checks []Target
	now    time.Time
	flips  map[types.UID]*Flip
	result
}

func (o *observeOp) targets() []*Target {
	out := make([]*Target, len(o.checks))
	for i := range o.checks {
		out[i] = &o.checks[i]
	}
	return out
}

func (o *observeOp) apply(t *txn) error {
	waiting, err := t.earlyWaiting(o.checks)
	if err != nil {
		return err
	}
	for i := range o.checks {
		tg := &o.checks[i]
		if waiting[tg.UID] {
			// Its early pings are recorded first, and observe for it.
			continue
		}
		r, err := t.load(tg)
		if err != nil {
			return err
		}
		f, err := t.observe(r, tg, o.now, o.now)
		if err != nil {
			return err
		}
		if f != nil {
			o.flips[tg.UID] = f
		}
	}
	return nil
}

// earlyWaiting are the checks among targets whose early pings are not
// recorded yet (early.go). Mostly there are none at all, which one read
// finds.
func (t *txn) earlyWaiting(targets []Target) (map[types.UID]bool, error) {
	some := false
	err := t.ask(`SELECT 1 FROM early_pings LIMIT 1`, func(rows rows) error {
		some = rows.Next()
		return rows.Err()
	})
	if err == nil {
		err = t.sync()
	}
	if err != nil || !some {
		return nil, err
	}
	waiting := map[types.UID]bool{}
	for i := range targets {
		uid := targets[i].UID
		err := t.ask(`SELECT 1 FROM early_pings WHERE check_uid = ? LIMIT 1`, func(rows rows) error {
			if rows.Next() {
				waiting[uid] = true
			}
			return rows.Err()
		}, string(uid))
		if err != nil {
			return nil, err
		}
	}
	return waiting, t.sync()
}

// Pause pauses the check at now (a check already paused stays as it is) and
// returns what the store then knows of it. Pausing records no flip.
func (s *Store) Pause(ctx context.Context, tg Target, now time.Time) (Check, error) {
	return s.pauseOrResume(ctx, tg, now, false)
}

// Resume resumes a paused check at now; it returns monitor.ErrNotPaused
// for a check that is not paused. Resuming records no flip.
func (s *Store) Resume(ctx context.Context, tg Target, now time.Time) (Check, error) {
	return s.pauseOrResume(ctx, tg, now, true)
}

func (s *Store) pauseOrResume(ctx context.Context, tg Target, now time.Time, resume bool) (Check, error) {
	o := &pauseOp{target: tg, now: Truncate(now), resume: resume, result: newResult()}
	if err := s.submit(ctx, o, false); err != nil {
		return Check{}, err
	}
	return o.check, o.err
}

type pauseOp struct {
	target Target
	now    time.Time
	resume bool
	check  Check
	result
}

func (o *pauseOp) targets() []*Target { return []*Target{&o.target} }

func (o *pauseOp) apply(t *txn) error {
	tg := &o.target
	r, err := t.current(tg, o.now)
	if err != nil {
		return err
	}
	// Resuming a check that is not paused is refused (the caller's answer,
	// ErrNotPaused); the transaction goes on.
	var facts monitor.Facts
	if o.resume {
		facts, o.err = tg.Config.Resume(r.Facts, o.now)
	} else {
		facts = tg.Config.Pause(r.Facts, o.now)
	}
	if o.err == nil {
		r.Facts, r.dirty = facts, true
		if _, err := t.observe(r, tg, o.now, o.now); err != nil {
			return err
		}
	}
	o.check = r.Check
	return nil
}

// Forget deletes everything the store holds of the checks with these UIDs:
// their rows, pings, flips and deliveries. The UUIDs they held stay their
// projects' for UUIDHold from now.
func (s *Store) Forget(ctx context.Context, uids ...types.UID) error {
	if len(uids) == 0 {
		return nil
	}
	o := &forgetOp{uids: uids, now: time.Now(), result: newResult()}
	if err := s.submit(ctx, o, false); err != nil {
		return err
	}
	return o.err
}

type forgetOp struct {
	uids []types.UID
	now  time.Time
	result
}

func (o *forgetOp) apply(t *txn) error {
	for _, uid := range o.uids {
		delete(t.rows, uid)
		// The check's row first: on PostgreSQL that waits for a ping
		// another transaction is writing to it, so the deletes below see
		// that ping's rows too.
		err := t.ask(`DELETE FROM checks WHERE uid = ? RETURNING namespace, body_bytes`, func(rows rows) error {
			for rows.Next() {
				var (
					ns    string
					bytes int64
				)
				if err := rows.Scan(&ns, &bytes); err != nil {
					return err
				}
				if t.bodyForgotten == nil {
					t.bodyForgotten = map[string]int64{}
				}
				t.bodyForgotten[ns] += bytes
			}
			return rows.Err()
		}, string(uid))
		if err != nil {
			return fmt.Errorf("forgetting check %s: %w", uid, err)
		}
		for _, table := range []string{"pings", "runs", "flips", "deliveries", "sla_verdicts", "early_pings"} {
			if err := t.exec(`DELETE FROM `+table+` WHERE check_uid = ?`, string(uid)); err != nil {
				return fmt.Errorf("forgetting check %s: %w", uid, err)
			}
		}
		if err := t.releaseUUIDs(o.now, string(uid)); err != nil {
			return fmt.Errorf("releasing the UUID of check %s: %w", uid, err)
		}
	}
	return nil
}

// RecordOutcomes records the results of delivery attempts.
func (s *Store) RecordOutcomes(ctx context.Context, outcomes []Outcome) error {
	if len(outcomes) == 0 {
		return nil
	}
	o := &outcomeOp{outcomes: outcomes, result: newResult()}
	if err := s.submit(ctx, o, false); err != nil {
		return err
	}
	return o.err
}

type outcomeOp struct {
	outcomes []Outcome
	result
}

func (o *outcomeOp) apply(t *txn) error {
	for _, oc := range o.outcomes {
		attempted := 0
		if oc.Attempted {
			attempted = 1
		}
		if err := t.exec(`UPDATE deliveries SET state = ?, attempts = attempts + ?, next_attempt = ?, last_error = ?
			WHERE check_uid = ? AND flip_n = ? AND channel_id = `+channelID+` AND state = ?`,
			string(oc.State), attempted, oc.NextAttempt.UnixMicro(), oc.LastError,
			string(oc.CheckUID), oc.FlipN, oc.Channel, string(DeliveryPending)); err != nil {
			return fmt.Errorf("recording a delivery: %w", err)
		}
	}
	return nil
}

// Prune deletes flips recorded before cutoff, except those with
// notifications still pending, and their deliveries; then it sweeps a
// chunk of the Channel numbers no delivery names any more (channels.go).
func (s *Store) Prune(ctx context.Context, cutoff time.Time) error {
	for {
		o := &pruneOp{cutoff: cutoff, limit: pruneChunk, result: newResult()}
		if err := s.submit(ctx, o, false); err != nil {
			return err
		}
		if o.err != nil {
			return o.err
		}
		if o.pruned < pruneChunk {
			return s.sweepChannels(ctx)
		}
	}
}

// pruneChunk bounds the flips one prune transaction deletes, with their
// deliveries: the prune shares the store's writers with pings, and a
// fleet's 90-day boundary can pass a million delivery rows at once. In
// chunks, pings are committed between them: a chunk of 500 flips with 10
// deliveries each held a ping 36 ms at most, where one prune of 100,000
// held one 3 s (BenchmarkPrune).
const pruneChunk = 500

type pruneOp struct {
	cutoff time.Time
	limit  int
	pruned int // flips deleted
	result
}

// prunable selects the oldest flips before the cutoff that owe no
// notification, up to a limit: read through the flips' created index and
// the outbox's primary key, never a scan of either table.
const prunable = `SELECT check_uid, n FROM flips WHERE created < ? AND NOT EXISTS (
		SELECT 1 FROM deliveries d WHERE d.check_uid = flips.check_uid AND d.flip_n = flips.n AND d.state = ?)
		ORDER BY created, check_uid, n LIMIT ?`

// apply deletes a chunk of prunable flips and their deliveries (those
// sent or given up: a flip with one pending is not prunable). The
// deliveries go first, by their flips' keys; the flips then, the same
// chunk, which the deletes did not change.
func (o *pruneOp) apply(t *txn) error {
	args := []any{o.cutoff.UnixMicro(), string(DeliveryPending), o.limit}
	if err := t.exec(`DELETE FROM deliveries WHERE (check_uid, flip_n) IN (`+prunable+`)`, args...); err != nil {
		return fmt.Errorf("pruning deliveries: %w", err)
	}
	o.pruned = 0
	err := t.ask(`DELETE FROM flips WHERE (check_uid, n) IN (`+prunable+`) RETURNING n`, func(rows rows) error {
		for rows.Next() {
			o.pruned++
		}
		return rows.Err()
	}, args...)
	if err != nil {
		return fmt.Errorf("pruning flips: %w", err)
	}
	return nil
}
