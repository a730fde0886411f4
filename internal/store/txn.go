package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// The transaction the writer's ops run in: its statements, batched inserts
// and the SQLite and PostgreSQL (pipelined) ways to run them.

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
