package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/words"
)

// op is one write. apply runs inside the writer's transaction and returns an
// error only when the database fails; what the write means to its caller
// (its result, or an error such as ErrNotPaused) the op keeps itself and
// hands over in finish, which runs once the transaction committed (nil) or
// failed.
type op interface {
	apply(t *txn) error
	finish(err error)
	// wait is closed when the op is finished.
	wait() <-chan struct{}
	// queuedBytes is what the op holds in memory while it waits (a body).
	queuedBytes() int64
}

// result is what every op hands back: the error that ended its transaction
// (or the op's own answer, such as ErrNotPaused), and when it is done.
type result struct {
	err  error
	done chan struct{}
}

func newResult() result { return result{done: make(chan struct{})} }

func (r *result) wait() <-chan struct{} { return r.done }

// finish records the transaction's error, keeping the op's own answer
// when the transaction succeeded, and releases the caller.
func (r *result) finish(err error) {
	if err != nil {
		r.err = err
	}
	close(r.done)
}

// queuedBytes: most writes hold no body.
func (r *result) queuedBytes() int64 { return 0 }

// submit queues o for the writer and waits for its transaction. Pings are
// refused at once when the queue is full (shed load, answer 503); other
// writes wait for room.
func (s *Store) submit(ctx context.Context, o op, shed bool) error {
	if b := o.queuedBytes(); b > 0 {
		if s.queuedBytes.Add(b) > s.opts.MaxQueuedBytes && shed {
			s.queuedBytes.Add(-b)
			return ErrOverloaded
		}
	}
	// Sends hold the read lock, so that none slips in after Close has
	// stopped the writer.
	s.closing.RLock()
	err := s.enqueue(ctx, o, shed)
	s.closing.RUnlock()
	if err != nil {
		s.queuedBytes.Add(-o.queuedBytes())
		return err
	}
	// Once queued, the write happens whether or not the caller still waits:
	// a client that gave up may still have its ping stored.
	select {
	case <-o.wait():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) enqueue(ctx context.Context, o op, shed bool) error {
	if s.closed {
		return ErrClosed
	}
	if err := s.Health(); err != nil {
		return err // the database is away: say so at once, not after a timeout
	}
	if shed {
		select {
		case s.ops <- o:
			return nil
		default:
			return ErrOverloaded
		}
	}
	select {
	case s.ops <- o:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write is a writer: it takes whatever is queued, up to MaxBatch, and
// commits it in one transaction. While a commit waits for the disk, the
// next batch queues up, so the batch grows with the load and the cost of a
// commit (one fsync) is shared by everything in it. SQLite has one writer,
// PostgreSQL a few (dialect.writers).
func (s *Store) write() {
	for {
		var first op
		select {
		case first = <-s.ops:
		case <-s.stop:
			s.failQueued()
			return
		}
		batch := []op{first}
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		s.commit(batch)
		for _, o := range batch {
			s.queuedBytes.Add(-o.queuedBytes())
		}
	}
}

func (s *Store) failQueued() {
	for {
		select {
		case o := <-s.ops:
			s.queuedBytes.Add(-o.queuedBytes())
			o.finish(ErrClosed)
		default:
			return
		}
	}
}

// commit runs a batch in one transaction. If the transaction fails while
// the database answers, each write is tried again in a transaction of its
// own, so that one bad write fails alone; if the database does not answer,
// every write of the batch fails with ErrUnavailable, and so do new ones
// until it answers again.
func (s *Store) commit(batch []op) {
	c, err := s.runTxAgain(batch)
	// A full volume fails every write alike: trying them one by one would
	// only fail each again.
	if full := err != nil && isFull(err); full || err == nil {
		s.noteFull(full, err)
		if full {
			err = fmt.Errorf("%w: %w", ErrFull, err)
			for _, o := range batch {
				o.finish(err)
			}
			return
		}
	}
	// A commit that may have happened (a reply lost, a standby that
	// stalled) is not tried again either: that could store a ping twice.
	// Each caller hears that it failed, as with a crash before the answer.
	if err != nil && (!s.reachable() || errors.Is(err, errCommitUnknown)) {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		for _, o := range batch {
			o.finish(err)
		}
		return
	}
	if err != nil && len(batch) > 1 {
		for _, o := range batch {
			c1, err := s.runTxAgain([]op{o})
			if full := err != nil && isFull(err); full || err == nil {
				s.noteFull(full, err)
				if full {
					err = fmt.Errorf("%w: %w", ErrFull, err)
				}
			}
			o.finish(err)
			if err == nil && s.opts.OnCommit != nil {
				s.opts.OnCommit(c1)
			}
		}
		return
	}
	for _, o := range batch {
		o.finish(err)
	}
	if err == nil && s.opts.OnCommit != nil {
		s.opts.OnCommit(c)
	}
}

// conflictRetries is how many times a transaction that PostgreSQL rolled
// back for a deadlock or a serialization failure is tried again.
const conflictRetries = 3

// runTxAgain is runTx, tried again when PostgreSQL rolled the transaction
// back to break a deadlock between replicas (two adding the same new
// checks in different batches) or a serialization failure: nothing of it
// was committed, and the next try usually finds the rows there.
func (s *Store) runTxAgain(batch []op) (Committed, error) {
	for try := 0; ; try++ {
		c, err := s.runTx(batch)
		if err == nil || try == conflictRetries || !conflicted(err) {
			return c, err
		}
	}
}

// errCommitUnknown: the commit failed, and whether it happened is unknown.
var errCommitUnknown = errors.New("the store's commit did not answer")

// txTimeout bounds a transaction: a connection that stops answering (a
// database behind a dead network path) fails the batch instead of holding
// the writer.
const txTimeout = 15 * time.Second

func (s *Store) runTx(batch []op) (Committed, error) {
	ctx, cancel := context.WithTimeout(context.Background(), txTimeout)
	defer cancel()
	if s.d.pipelined {
		return s.runPipelined(ctx, batch)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Committed{}, fmt.Errorf("beginning a store transaction: %w", err)
	}
	t := &txn{s: s, tx: tx, ctx: ctx, rows: map[types.UID]*row{}}
	if err := t.run(batch); err != nil {
		_ = tx.Rollback()
		return Committed{}, err
	}
	if err := tx.Commit(); err != nil {
		return Committed{}, fmt.Errorf("%w: %w", errCommitUnknown, err)
	}
	return s.committed(t, batch), nil
}

// run is the transaction up to its commit: it reads (or locks) the rows
// of the checks the batch changes, applies each write, and writes back
// the rows they changed.
func (t *txn) run(batch []op) error {
	read := t.preload
	if t.s.d.lockRows {
		read = t.lockRows
	}
	if err := read(batch); err != nil {
		return err
	}
	for _, o := range batch {
		if err := o.apply(t); err != nil {
			return err
		}
	}
	if err := t.trim(); err != nil {
		return err
	}
	return t.flush()
}

// committed counts a transaction that committed and says what it did.
func (s *Store) committed(t *txn, batch []op) Committed {
	s.commits.Add(1)
	s.writes.Add(int64(len(batch)))
	s.bodies.add(t.bodyChanges())
	return Committed{At: time.Now(), Writes: len(batch), Flips: t.flips, Notices: t.nNotices}
}

// txn is one transaction of the writer. It keeps the check rows it read, so
// that several writes for one check in a batch read it once and write it
// once.
type txn struct {
	s        *Store
	tx       *sql.Tx   // SQLite
	pg       *pipeline // PostgreSQL
	ctx      context.Context
	rows     map[types.UID]*row
	byName   map[string]*row // rows by namespace/name, built when needed (dependency.go)
	flips    []CommittedFlip
	nNotices int // notices queued
	// channels are the Channels the transaction has made sure have a
	// number (queue).
	channels map[ChannelRef]bool
	// bodyAdded are the body bytes the transaction's pings added within
	// their namespaces' limits, and bodyForgotten those of the checks it
	// forgot, by namespace (bodies.go).
	bodyAdded, bodyForgotten map[string]int64
	// pings are the ping rows not yet inserted: they go in multi-row
	// inserts, before any other statement of the transaction runs (so
	// every statement sees them) and at its end.
	pings [][]any
}

// insertPing adds a ping row to the transaction.
func (t *txn) insertPing(args ...any) {
	t.pings = append(t.pings, args)
}

// flushPings inserts the pending ping rows, up to chunkRows or 4 MiB of
// bodies a statement.
func (t *txn) flushPings() error {
	for len(t.pings) > 0 {
		n, size := 0, 0
		for n < len(t.pings) && n < chunkRows && (n == 0 || size < 4<<20) {
			if body, ok := t.pings[n][len(t.pings[n])-1].([]byte); ok {
				size += len(body)
			}
			n++
		}
		n = shape(n)
		args := make([]any, 0, n*len(t.pings[0]))
		for _, p := range t.pings[:n] {
			args = append(args, p...)
		}
		t.pings = t.pings[n:]
		if err := t.execNow(pingInserts[n], args...); err != nil {
			return fmt.Errorf("logging %d pings: %w", n, err)
		}
	}
	t.pings = nil
	return nil
}

// chunkRows bounds the rows of one multi-row statement.
const chunkRows = 64

// Multi-row statements go in chunks of a power of two rows, so that there
// are few of them (seven: 1, 2, 4 ... 64 rows) and each is prepared once
// when the store opens: parsing a statement of hundreds of placeholders for
// every transaction was most of the writer's time in SQL.
var (
	pingInserts  = shapes(sqlInsertPing)
	checkUpserts = shapes(sqlUpsertCheck)
	checkSelects = func() map[int]string {
		out := map[int]string{}
		for n := 1; n <= chunkRows; n *= 2 {
			out[n] = `SELECT ` + checkColumns + ` FROM checks WHERE uid IN (` + placeholders(n) + `)`
		}
		return out
	}()
)

// shape is the number of rows of the statement that takes the first of n
// rows: the largest power of two not above n.
func shape(n int) int {
	s := 1
	for s*2 <= n {
		s *= 2
	}
	return s
}

// shapes is stmt with each power of two of rows up to chunkRows, by rows.
func shapes(stmt string) map[int]string {
	out := map[int]string{}
	for n := 1; n <= chunkRows; n *= 2 {
		out[n] = manyRows(stmt, n)
	}
	return out
}

// manyRows is stmt, whose VALUES holds one row of placeholders, with n
// rows.
func manyRows(stmt string, n int) string {
	if n == 1 {
		return stmt
	}
	start := strings.Index(stmt, "VALUES (") + len("VALUES ")
	end, depth := start, 0
	for ; ; end++ { // to the row's closing parenthesis, past those of a subquery
		if stmt[end] == '(' {
			depth++
		} else if stmt[end] == ')' {
			if depth--; depth == 0 {
				break
			}
		}
	}
	end++
	row := stmt[start:end]
	return stmt[:end] + strings.Repeat(", "+row, n-1) + stmt[end:]
}

// exec, query and queryRow run a statement in the transaction, after the
// pending ping rows, prepared for the writer's connection when it is one
// the writer runs often (see prepare): parsing SQL is most of the cost of
// a small statement.
func (t *txn) exec(query string, args ...any) error {
	if err := t.flushPings(); err != nil {
		return err
	}
	return t.execNow(query, args...)
}

func (t *txn) execNow(query string, args ...any) error {
	args = t.s.d.text(args)
	if t.pg != nil {
		t.pg.queue(query, args)
		return nil
	}
	var err error
	if st := t.s.stmts[query]; st != nil {
		_, err = t.tx.StmtContext(t.ctx, st).ExecContext(t.ctx, args...)
	} else {
		_, err = t.tx.ExecContext(t.ctx, t.s.d.sql(query), args...)
	}
	return err
}

// rows are a query's rows, from database/sql or from the pipeline.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

func (t *txn) query(query string, args ...any) (rows, error) {
	if err := t.flushPings(); err != nil {
		return nil, err
	}
	args = t.s.d.text(args)
	var (
		r   rows
		err error
	)
	switch st := t.s.stmts[query]; {
	case t.pg != nil:
		r, err = t.pg.send(query, args)
	case st != nil:
		r, err = t.tx.StmtContext(t.ctx, st).QueryContext(t.ctx, args...)
	default:
		r, err = t.tx.QueryContext(t.ctx, t.s.d.sql(query), args...)
	}
	if err != nil {
		return nil, err // an untyped nil: a *sql.Rows nil is not a nil rows
	}
	return r, nil
}

// ask runs a statement whose answer read takes, after the pending ping
// rows. On PostgreSQL the answer comes with the next round trip (sync):
// the statements asked for in a row share one.
func (t *txn) ask(query string, read func(rows) error, args ...any) error {
	if err := t.flushPings(); err != nil {
		return err
	}
	if t.pg != nil {
		t.pg.ask(query, t.s.d.text(args), read)
		return nil
	}
	r, err := t.query(query, args...)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := read(r); err != nil {
		return err
	}
	return r.Close()
}

// sync waits for the answers asked for.
func (t *txn) sync() error {
	if t.pg != nil {
		return t.pg.sync()
	}
	return nil
}

// queryRow does not insert the pending ping rows first: its statements
// read and number check rows (load, flush), never pings, and flushing for
// each check loaded would undo the multi-row inserts.
func (t *txn) queryRow(query string, args ...any) interface{ Scan(dest ...any) error } {
	args = t.s.d.text(args)
	if t.pg != nil {
		return pipelineRow{p: t.pg, query: query, args: args}
	}
	if st := t.s.stmts[query]; st != nil {
		return t.tx.StmtContext(t.ctx, st).QueryRowContext(t.ctx, args...)
	}
	return t.tx.QueryRowContext(t.ctx, t.s.d.sql(query), args...)
}

// The statements of the ping path, prepared when the store opens.
const (
	sqlSelectCheck = `SELECT ` + checkColumns + ` FROM checks WHERE uid = ?`
	sqlNextChange  = `UPDATE changes SET value = value + 1 WHERE id = 1`
	// A row's version is the number sqlNextChange took earlier in the
	// transaction, read by the statement itself: the writer need not wait
	// for it (pipeline.go).
	sqlUpsertCheck = `INSERT INTO checks (` + checkColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT value FROM changes WHERE id = 1), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (uid) DO UPDATE SET namespace = excluded.namespace, name = excluded.name,
			n_pings = excluded.n_pings, n_flips = excluded.n_flips, last_ping = excluded.last_ping,
			last_ping_failed = excluded.last_ping_failed, last_start = excluded.last_start,
			last_start_rid = excluded.last_start_rid, last_duration = excluded.last_duration,
			paused_at = excluded.paused_at, resumed_at = excluded.resumed_at, state = excluded.state,
			state_since = excluded.state_since, next_change = excluded.next_change,
			body_bytes = excluded.body_bytes, version = excluded.version, failures = excluded.failures,
			fail_reason = excluded.fail_reason, successes = excluded.successes, missed_at = excluded.missed_at,
			alert_since = excluded.alert_since, last_notice = excluded.last_notice, escalated = excluded.escalated,
			maintenance = excluded.maintenance, maintenance_until = excluded.maintenance_until, held = excluded.held,
			runs_succeeded = excluded.runs_succeeded, runs_failed = excluded.runs_failed, runs_missed = excluded.runs_missed,
			last_success = excluded.last_success, runs_dropped = excluded.runs_dropped,
			flap_since = excluded.flap_since, flap_count = excluded.flap_count, reprieve = excluded.reprieve,
			acked_at = excluded.acked_at, acked_by = excluded.acked_by, fail_detail = excluded.fail_detail,
			dependency = excluded.dependency, dependency_since = excluded.dependency_since`
	// body is the last column: flushPings sizes statements by it.
	sqlInsertPing = `INSERT INTO pings (check_uid, n, kind, created, scheme, remote_addr, method, ua, rid, exit_status, duration,
		body_dropped, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqlInsertFlip = `INSERT INTO flips (check_uid, n, created, up, from_state, to_state, reason, detail, notice, since, held, held_until)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	// A delivery names its Channel by number (channels.go): the number is
	// made if the Channel has none, then read by the insert itself, so the
	// writer need not wait for it (pipeline.go).
	sqlInsertChannel  = `INSERT INTO channels (namespace, name) VALUES (?, ?) ON CONFLICT (namespace, name) DO NOTHING`
	sqlInsertDelivery = `INSERT INTO deliveries (check_uid, flip_n, channel_id, state, next_attempt, namespace, queued)
		SELECT ?, ?, id, ?, ?, namespace, ? FROM channels WHERE namespace = ? AND name = ?`
	sqlPrunePings = `DELETE FROM pings WHERE check_uid = ? AND n <= ? RETURNING COALESCE(length(body), 0), n, kind, created`
	// PostgreSQL only (lockRows).
	sqlInsertNewCheck = `INSERT INTO checks (uid, namespace, name, version) VALUES (?, ?, ?, 0) ON CONFLICT (uid) DO NOTHING`
	sqlLockChecks     = `SELECT ` + checkColumns + ` FROM checks WHERE uid = ANY(?) ORDER BY uid FOR UPDATE`
)

// prepare prepares the writer's frequent statements, before the writer
// starts (it holds the one connection while it writes).
func (s *Store) prepare(ctx context.Context) error {
	s.stmts = map[string]*sql.Stmt{}
	var statements []string
	if !s.d.pipelined { // the pipeline's are pgx's to prepare
		statements = []string{sqlSelectCheck, sqlNextChange, sqlInsertFlip, sqlInsertChannel, sqlInsertDelivery}
		for n := 1; n <= chunkRows; n *= 2 {
			statements = append(statements, pingInserts[n], checkUpserts[n], checkSelects[n])
		}
		statements = append(statements, sqlPrunePings, sqlMoveRuns, sqlPruneRuns)
	}
	for _, q := range statements {
		st, err := s.db.PrepareContext(ctx, s.d.sql(q))
		if err != nil {
			return fmt.Errorf("preparing a store statement: %w", err)
		}
		s.stmts[q] = st
	}
	// Every ping's lookup may ask who owns its UUID.
	var err error
	s.ownerStmt, err = s.ro.PrepareContext(ctx, s.d.sql(`SELECT namespace, released FROM uuid_owners WHERE uuid = ?`))
	if err != nil {
		return fmt.Errorf("preparing a store statement: %w", err)
	}
	return nil
}

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
