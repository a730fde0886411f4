package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"k8s.io/apimachinery/pkg/types"
)

// pipeline is the writer's transaction on PostgreSQL, run on pgx itself
// rather than through database/sql, so that its statements share round
// trips. A statement whose answer the writer does not need (a ping row, a
// flip, a delivery, a check's row) waits, and goes with the next one whose
// answer it does need, or with the COMMIT. A batch of pings to checks the
// store holds is then two round trips, BEGIN with the row locks and the
// writes with COMMIT, where it was one a statement (about ten), and the
// change counter's lock, taken among the last writes, is held by the
// server for the commit alone rather than across the network.
//
// pgx prepares each statement once per connection (its statement cache),
// as the SQLite writer's prepared statements do.
type pipeline struct {
	conn    *pgx.Conn
	ctx     context.Context
	pending *pgx.Batch // sent with the next round trip
	begun   bool       // BEGIN has been sent
	generic bool       // the statements queued next use generic plans
}

// statement is the store's statement q as the pipeline sends it, its
// placeholders numbered. It first queues the change of plan_cache_mode, for
// the rest of the transaction, that q needs, if any (see genericPlans).
func (p *pipeline) statement(q string) string {
	st := pgStatementOf(q)
	if st.generic != p.generic {
		p.generic = st.generic
		if st.generic {
			p.pending.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
		} else {
			p.pending.Queue("SET LOCAL plan_cache_mode = force_custom_plan")
		}
	}
	return st.sql
}

// pgStatement is a writer statement as PostgreSQL takes it, and whether it
// is planned once (genericPlans).
type pgStatement struct {
	sql     string
	generic bool
}

// pgStatements memoizes pgStatementOf: the writer's statements are a
// bounded set of texts (the multi-row ones come in seven shapes), each
// converted and looked up once rather than once a statement.
var pgStatements sync.Map

func pgStatementOf(q string) pgStatement {
	if v, ok := pgStatements.Load(q); ok {
		return v.(pgStatement)
	}
	st := pgStatement{sql: postgresDialect.sql(q), generic: genericPlans[q]}
	pgStatements.Store(q, st)
	return st
}

// genericPlans are the writer's statements whose best plan does not depend
// on what the tables hold: rows inserted from their arguments (a check's
// row by its key, on conflict; a delivery with its Channel's number read by
// the unique key). The change counter's update has no
// arguments, so PostgreSQL plans it once anyway; it is listed so that it
// does not switch the mode back between the inserts around it.
// PostgreSQL plans them once per connection, a generic plan, where the
// connection's plan_cache_mode (postgres.go) has every other statement
// planned again for its arguments each time it runs. Planning a batch's
// multi-row inserts and upserts anew was a third of the server's CPU per
// ping (perf, BenchmarkRecordPing/postgres).
var genericPlans = func() map[string]bool {
	out := map[string]bool{}
	for _, q := range []string{sqlNextChange, sqlInsertFlip, sqlInsertChannel, sqlInsertDelivery, sqlInsertNewCheck} {
		out[q] = true
	}
	for n := 1; n <= chunkRows; n *= 2 {
		out[pingInserts[n]], out[checkUpserts[n]] = true, true
	}
	return out
}()

// runPipelined is runTx on PostgreSQL.
func (s *Store) runPipelined(ctx context.Context, batch []op) (Committed, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return Committed{}, fmt.Errorf("beginning a store transaction: %w", err)
	}
	defer func() { _ = conn.Close() }()
	var t *txn
	err = conn.Raw(func(dc any) error {
		p := &pipeline{conn: dc.(*stdlib.Conn).Conn(), ctx: ctx, pending: &pgx.Batch{}}
		p.pending.Queue("BEGIN")
		t = &txn{s: s, pg: p, ctx: ctx, rows: map[types.UID]*row{}}
		if err := t.run(batch); err != nil {
			p.rollback()
			return err
		}
		if err := p.commit(); err != nil {
			p.rollback()
			return err
		}
		return nil
	})
	if err != nil {
		return Committed{}, err
	}
	return s.committed(t, batch), nil
}

// queue adds a statement whose answer is not needed to the next round trip.
func (p *pipeline) queue(query string, args []any) {
	p.pending.Queue(p.statement(query), args...)
}

// ask adds a statement whose answer the writer needs to the next round
// trip; read is given its rows when that trip comes back. Several answers
// then share one round trip. The writer syncs before it uses what the
// readers learned (txn.trim, before flush writes the rows).
func (p *pipeline) ask(query string, args []any, read func(rows) error) {
	p.pending.Queue(p.statement(query), args...).Query(func(r pgx.Rows) error { return read(askedRows{r}) })
}

// askedRows are an asked statement's rows, which pgx closes.
type askedRows struct{ pgx.Rows }

func (r askedRows) Close() error { return nil }

// sync sends the pending statements and reads their answers, if one of
// them was asked for (the others can wait for the next round trip).
func (p *pipeline) sync() error {
	if !slices.ContainsFunc(p.pending.QueuedQueries, func(qq *pgx.QueuedQuery) bool { return qq.Fn != nil }) {
		return nil
	}
	br := p.conn.SendBatch(p.ctx, p.pending)
	p.pending, p.begun = &pgx.Batch{}, true
	return br.Close()
}

// readPending reads the answers of the n statements sent before the last
// one, giving those asked for to their readers.
func readPending(br pgx.BatchResults, b *pgx.Batch, n int) error {
	for _, qq := range b.QueuedQueries[:n] {
		var err error
		if qq.Fn != nil {
			err = qq.Fn(br)
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			_ = br.Close()
			return err
		}
	}
	return nil
}

// send sends the pending statements and query, reads the pending ones'
// answers, and returns query's rows. The caller closes them.
func (p *pipeline) send(query string, args []any) (*pipelineRows, error) {
	sql := p.statement(query)
	n := p.pending.Len()
	p.pending.Queue(sql, args...)
	sent := p.pending
	br := p.conn.SendBatch(p.ctx, sent)
	p.pending, p.begun = &pgx.Batch{}, true // br reads the one sent
	if err := readPending(br, sent, n); err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &pipelineRows{Rows: rows, br: br}, nil
}

// commit sends the pending statements with COMMIT. Only a failure of the
// COMMIT itself, or of the connection while it was on its way, leaves
// unknown whether the transaction happened: a statement the server refused
// ended the transaction there (the COMMIT was skipped), and a batch that
// never left (an argument pgx could not encode, a statement it could not
// prepare) committed nothing.
func (p *pipeline) commit() error {
	n := p.pending.Len()
	p.pending.Queue("COMMIT")
	sent := p.pending
	br := p.conn.SendBatch(p.ctx, sent)
	p.pending, p.begun = &pgx.Batch{}, true // br reads the one sent
	if err := readPending(br, sent, n); err != nil {
		if notCommitted(err) {
			return err
		}
		return fmt.Errorf("%w: %w", errCommitUnknown, err)
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%w: %w", errCommitUnknown, err)
	}
	// A transaction that failed earlier without the writer hearing of it
	// answers COMMIT with ROLLBACK: nothing of it is stored.
	if tag.String() != "COMMIT" {
		return fmt.Errorf("the store rolled the transaction back (%s)", tag)
	}
	return nil
}

// notCommitted reports whether err, met before the COMMIT's answer, says
// the transaction did not commit: the server refused a statement, or the
// batch never reached it.
func notCommitted(err error) bool {
	var pe *pgconn.PgError
	var pre pgx.ErrPreprocessingBatch
	return errors.As(err, &pe) || errors.As(err, &pre) || pgconn.SafeToRetry(err)
}

// rollback ends a transaction that failed. A connection that cannot is
// closed, so that the pool does not hand it out again mid-transaction.
func (p *pipeline) rollback() {
	if !p.begun {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := p.conn.Exec(ctx, "ROLLBACK"); err != nil {
		_ = p.conn.Close(ctx)
	}
}

// pipelineRows are a statement's rows, read before the round trip's
// results are closed.
type pipelineRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *pipelineRows) Close() error {
	r.Rows.Close()
	return r.br.Close()
}

// pipelineRow is queryRow's answer: the round trip happens when it is
// scanned, so it is scanned at once (as every caller does), before any
// other statement of the transaction is queued.
type pipelineRow struct {
	p     *pipeline
	query string
	args  []any
}

func (r pipelineRow) Scan(dest ...any) error {
	rows, err := r.p.send(r.query, r.args)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows // wraps sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}
