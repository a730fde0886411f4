package store

import (
	"context"
	"errors"
	"testing"

	"github.com/vigil-operator/vigil/internal/testenv"
)

// rawOp runs its statements in the writer's transaction as they are.
type rawOp struct {
	result
	run func(t *txn) error
}

func (o *rawOp) apply(t *txn) error { return o.run(t) }

// TestPipelineNeverAcknowledgesWhatDidNotCommit: on PostgreSQL, whatever
// fails in a pipelined transaction fails the transaction, and is said to
// have failed for sure (so that each write is tried again alone) rather
// than perhaps committed; nothing of it is stored.
func TestPipelineNeverAcknowledgesWhatDidNotCommit(t *testing.T) {
	ctx := context.Background()
	dsn := testenv.PostgresDatabase(t)
	s, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	insert := func(t *txn, uuid string) error {
		return t.exec(`INSERT INTO uuid_owners (uuid, namespace) VALUES (?, 'ns')`, uuid)
	}
	for _, tc := range []struct {
		name  string
		apply func(t *txn) error
	}{{
		// The second insert is refused with the COMMIT on its way: the
		// server skips the COMMIT.
		name:  "a queued statement refused",
		apply: func(t *txn) error { _ = insert(t, "u1"); return insert(t, "u1") },
	}, {
		// A failed read whose error the write let go: the server answers
		// the COMMIT with ROLLBACK.
		name: "an error let go",
		apply: func(t *txn) error {
			_ = insert(t, "u2")
			if rows, err := t.query(`SELECT 1 / 0`); err == nil {
				_ = rows.Close()
			}
			return nil
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.runTx([]op{&rawOp{result: newResult(), run: tc.apply}})
			if err == nil {
				t.Fatal("the transaction was acknowledged")
			}
			if errors.Is(err, errCommitUnknown) {
				t.Fatalf("%v: said to be perhaps committed", err)
			}
			var n int
			if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM uuid_owners`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("%d owners stored (%v), want none", n, err)
			}
			// The connection went back to the pool usable.
			if _, err := s.runTx([]op{&rawOp{result: newResult(), run: func(t *txn) error { return insert(t, "ok-"+tc.name) }}}); err != nil {
				t.Fatalf("the next transaction: %v", err)
			}
			if _, err := s.db.ExecContext(ctx, `DELETE FROM uuid_owners`); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPipelinePlansInsertsOnce: in the writer's transaction on PostgreSQL,
// the statements of genericPlans are planned once per connection, and the
// others (here the row locks, whose best plan depends on the table) for
// their arguments each time they run.
func TestPipelinePlansInsertsOnce(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, testenv.PostgresDatabase(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	type plans struct{ generic, custom int64 }
	got := map[string]plans{}
	// session reads the connection's pid and, before the transaction
	// changed it, its plan_cache_mode.
	session := func(t *txn, pid *int, mode *string) error {
		rows, err := t.query(`SELECT pg_backend_pid(), current_setting('plan_cache_mode')`)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			return errors.New("no row")
		}
		return rows.Scan(pid, mode)
	}
	var pid int
	var mode string
	_, err = s.runTx([]op{&rawOp{result: newResult(), run: func(t *txn) error {
		if err := session(t, &pid, &mode); err != nil {
			return err
		}
		for range 8 { // past the five custom plans PostgreSQL makes before it may settle on a generic one
			if err := t.exec(sqlInsertNewCheck, "a", "ns", "a"); err != nil {
				return err
			}
			rows, err := t.query(sqlLockChecks, []string{"a", "b"})
			if err != nil {
				return err
			}
			if err := rows.Close(); err != nil {
				return err
			}
		}
		rows, err := t.query(`SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var q string
			var p plans
			if err := rows.Scan(&q, &p.generic, &p.custom); err != nil {
				return err
			}
			got[q] = p
		}
		if err := rows.Err(); err != nil {
			return err
		}
		// The transaction ends with generic plans.
		return t.exec(sqlInsertNewCheck, "a", "ns", "a")
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if p := got[s.d.sql(sqlInsertNewCheck)]; p.generic == 0 || p.custom != 0 {
		t.Errorf("a new check's insert: %+v plans, want generic ones only", p)
	}
	if p := got[s.d.sql(sqlLockChecks)]; p.generic != 0 || p.custom < 8 {
		t.Errorf("the row locks: %+v plans, want one custom plan each time", p)
	}
	// The switch lasts for the transaction only: the connection goes back
	// to the pool, which the readers share, as it came.
	for try := 0; ; try++ {
		var again int
		_, err := s.runTx([]op{&rawOp{result: newResult(), run: func(t *txn) error { return session(t, &again, &mode) }}})
		if err != nil {
			t.Fatal(err)
		}
		if again == pid {
			break
		}
		if try == 50 {
			t.Fatalf("the pool never gave connection %d back", pid)
		}
	}
	if mode != "force_custom_plan" {
		t.Errorf("after the transaction, plan_cache_mode = %s, want force_custom_plan", mode)
	}
}
