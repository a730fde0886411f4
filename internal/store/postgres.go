package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// maxConns bounds the connections a manager opens to PostgreSQL: the
// writer's and a few for reads. The hosted reference once ran out of file
// descriptors when its database went away; this bound holds then too.
const maxConns = 8

// openPostgres opens a pool on dsn (libpq's URL or key=value form: host,
// port, database, user, password, sslmode, sslrootcert, ...). A commit is
// acknowledged only once it is durable: synchronous_commit is on whatever
// the server's default. Connecting gives up after 5 s, so a database that
// does not answer is an error, not a hang.
func (s *Store) openPostgres(ctx context.Context, dsn string) error {
	if !splitsExactly(dsn) {
		// A DSN this package cannot split exactly, pgx might split
		// differently, and its errors would then show part of a password.
		return fmt.Errorf("--store: %s", Redact(dsn))
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return &parseError{dsn: dsn, err: err}
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > 5*time.Second {
		cfg.ConnectTimeout = 5 * time.Second
	}
	cfg.RuntimeParams["synchronous_commit"] = "on"
	// A row lock held by a replica cut off mid-transaction (its session
	// lives until TCP notices) must not stall every writer: waits for a
	// lock fail after 10 s, and such sessions end after 30 s.
	cfg.RuntimeParams["lock_timeout"] = "10s"
	cfg.RuntimeParams["idle_in_transaction_session_timeout"] = "30s"
	cfg.RuntimeParams["application_name"] = "vigil"
	// Every statement is planned for its own arguments. A prepared
	// statement's generic plan is made once per connection, and one made
	// while the checks table was still small scans it whole for the row
	// locks of every batch (measured: 3,000 pings/s against 5,100 with
	// custom plans, 10,000 checks), until an autovacuum's ANALYZE happens
	// to replace it. Planning these statements costs less than that scan.
	// The writer's inserts, whose plan never depends on the tables, ask
	// for generic plans in its transactions (genericPlans).
	cfg.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	s.d = postgresDialect
	s.db = stdlib.OpenDB(*cfg)
	s.db.SetMaxOpenConns(maxConns)
	s.db.SetMaxIdleConns(maxConns)
	s.db.SetConnMaxIdleTime(5 * time.Minute)
	s.ro = s.db
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.db.PingContext(pctx); err != nil {
		_ = s.db.Close()
		return fmt.Errorf("connecting to the store at %s: %w", Redact(dsn), err)
	}
	return nil
}

// parseError is a DSN pgx refused. Its text is this package's: pgx's own
// shows the DSN with a best-effort redaction, which misses a quoted
// password with an escaped quote (password='a b\'c'). Only the reason pgx
// gives after the DSN is kept.
type parseError struct {
	dsn string
	err error
}

func (e *parseError) Error() string {
	msg := "--store: " + Redact(e.dsn) + " is not a valid PostgreSQL DSN"
	var pe *pgconn.ParseConfigError
	if !errors.As(e.err, &pe) {
		return msg
	}
	// pgx writes "cannot parse `<DSN>`: <reason>": what follows the last
	// "`: " is past the DSN, whatever the DSN holds.
	full := pe.Error()
	if i := strings.LastIndex(full, "`: "); strings.HasPrefix(full, "cannot parse `") && i >= 0 {
		return msg + ": " + full[i+len("`: "):]
	}
	return msg
}

func (e *parseError) Unwrap() error { return e.err }

// conflicted reports whether PostgreSQL rolled a transaction back to
// break a deadlock (40P01) or for a serialization failure (40001): a
// transaction that can be tried again as it was.
func conflicted(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}
