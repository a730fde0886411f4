package store

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// maxConns bounds the connections a manager opens to PostgreSQL: the
// writer's and a few for reads. The hosted reference once ran out of file
// descriptors when its database went away; this bound holds then too.
const maxConns = 8

// openPostgres opens a pool on dsn (libpq's URL form: host, port,
// database, user, password, sslmode, sslrootcert, ...). A commit is
// acknowledged only once it is durable: synchronous_commit is on whatever
// the server's default. Connecting gives up after 5 s, so a database that
// does not answer is an error, not a hang.
func (s *Store) openPostgres(ctx context.Context, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("--store: %w", err)
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

// Redact is dsn with its password hidden, for messages: the URL's, and a
// password parameter.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(a URL that does not parse)" // where a password would be is unclear
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	} else if u.User == nil {
		return dsn
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
