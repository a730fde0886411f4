package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// People sign in to the dashboard (OpenID Connect) into sessions kept
// here rather than in their cookies, so that ending one (sign-out, or an
// administrator) ends it on every replica sharing the store at once. The
// cookie holds a random token; the store keeps only its SHA-256, so that
// a copy of the store opens no session.

// Session is a person's dashboard session, kept in the store so that
// ending it ends it on every replica.
type Session struct {
	// ID is the hex SHA-256 of the random token the browser's cookie holds
	// (SessionID); the token itself is never stored.
	ID string
	// Subject is the provider's stable name for the person (issuer and sub),
	// by which all of a person's sessions are found and ended.
	Subject string
	// Username and Groups are as Kubernetes RBAC is asked about them.
	Username string
	Groups   []string
	// CSRF is the token every form of the session carries.
	CSRF    string
	Created time.Time
	Expires time.Time
}

// The bounds of the sessions table. A subject keeps at most
// MaxSessionsPerSubject sessions: creating one more ends its oldest (by
// Created). The table holds at most MaxSessions: past it CreateSession
// deletes the expired ones, and if that frees no room it creates nothing
// and returns ErrTooManySessions. A session's ID, Subject, Username and
// CSRF are at most MaxSessionField bytes each, and it has at most
// MaxSessionGroups groups of at most MaxSessionGroupBytes bytes each:
// CreateSession refuses larger ones (ErrInvalidSession), so the caller
// bounds what the provider says first, and a row stays bounded whatever
// the provider says.
const (
	MaxSessionsPerSubject = 20
	MaxSessions           = 100_000
	MaxSessionField       = 1024
	MaxSessionGroups      = 200
	MaxSessionGroupBytes  = 256
)

// ErrTooManySessions means the store holds MaxSessions unexpired
// sessions: no one can sign in until some end or expire.
var ErrTooManySessions = errors.New("the store holds as many dashboard sessions as it may")

// ErrInvalidSession means CreateSession refused a session: a field empty,
// too large or not text, or its times out of order. The error says which,
// never the field's value.
var ErrInvalidSession = errors.New("invalid dashboard session")

// sessionPruneBatch bounds the rows one transaction of PruneSessions
// deletes, and maxSessionPruneBatches its transactions: what is left goes
// at the next call.
const (
	sessionPruneBatch      = 500
	maxSessionPruneBatches = 100
)

// SessionID is the ID of the session whose cookie holds token: its hex
// SHA-256.
func SessionID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// CreateSession stores sess, whose ID must be new. When its subject has
// MaxSessionsPerSubject sessions already, the oldest (expired or not) end
// in the same transaction. When the store holds MaxSessions, the sessions
// expired at sess.Created are deleted first; if none were, nothing is
// created or ended, and the error is ErrTooManySessions.
//
// It writes in a short transaction of its own, outside the writer's
// batches. On SQLite transactions take turns, so both bounds hold
// exactly. On PostgreSQL, replicas creating sessions at once (each reads
// the count or the subject's sessions before the other commits) may
// briefly exceed a bound, by one session for each create that raced: the
// subject's next create trims it back to its bound, and the table's is
// far from what would hurt. Locking the subject's rows (or the table)
// for an exact bound is not worth making sign-ins wait on each other.
func (s *Store) CreateSession(ctx context.Context, sess Session) error {
	if err := sess.check(); err != nil {
		return err
	}
	groups := sess.Groups
	if groups == nil {
		groups = []string{}
	}
	var groupsJSON strings.Builder
	enc := json.NewEncoder(&groupsJSON)
	enc.SetEscapeHTML(false) // a group's < > & stay one byte each
	if err := enc.Encode(groups); err != nil {
		return fmt.Errorf("creating a dashboard session: %w", err)
	}
	stored := strings.TrimSuffix(groupsJSON.String(), "\n")
	err := s.insertSession(ctx, sess, stored)
	if errors.Is(err, ErrTooManySessions) {
		if _, err := s.PruneSessions(ctx, sess.Created); err != nil {
			return fmt.Errorf("creating a dashboard session: %w", err)
		}
		err = s.insertSession(ctx, sess, stored)
	}
	if err != nil {
		return fmt.Errorf("creating a dashboard session: %w", err)
	}
	return nil
}

// insertSession counts the sessions, ends the oldest of sess's subject
// beyond its bound and inserts sess, in one transaction; it returns
// ErrTooManySessions, having done nothing, when the table is full.
func (s *Store) insertSession(ctx context.Context, sess Session, groups string) error {
	return s.shortTx(ctx, func(tx *sql.Tx) error {
		// The whole table is counted, once per sign-in: an index of
		// MaxSessions rows at most, counted in 2 ms on SQLite and 10 ms
		// on PostgreSQL (2 cores).
		var n int64
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM dashboard_sessions`).Scan(&n); err != nil {
			return err
		}
		if n >= MaxSessions {
			return ErrTooManySessions
		}
		// The subject's newest MaxSessionsPerSubject-1 stay (the index on
		// subject and created finds them); the LIMIT bounds the rows one
		// create ends, should a race have left a few more.
		if _, err := tx.ExecContext(ctx, s.d.sql(fmt.Sprintf(`DELETE FROM dashboard_sessions WHERE id IN (
			SELECT id FROM dashboard_sessions WHERE subject = ? ORDER BY created DESC, id DESC LIMIT %d OFFSET %d)`,
			sessionPruneBatch, MaxSessionsPerSubject-1)), sess.Subject); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.d.sql(`INSERT INTO dashboard_sessions (id, subject, username, groups_json, csrf, created, expires)
			VALUES (?, ?, ?, ?, ?, ?, ?)`), sess.ID, sess.Subject, sess.Username, groups, sess.CSRF,
			Truncate(sess.Created).UnixMicro(), Truncate(sess.Expires).UnixMicro())
		return err
	})
}

// check refuses a session the store does not keep: the same on both
// backends (PostgreSQL's TEXT takes no NUL bytes nor invalid UTF-8, and
// the store does not rewrite a name that sessions are found by).
func (sess Session) check() error {
	for _, f := range []struct{ name, value string }{
		{"ID", sess.ID}, {"subject", sess.Subject}, {"username", sess.Username}, {"CSRF token", sess.CSRF},
	} {
		switch {
		case f.value == "":
			return fmt.Errorf("%w: it has no %s", ErrInvalidSession, f.name)
		case len(f.value) > MaxSessionField:
			return fmt.Errorf("%w: its %s is %d bytes, more than %d", ErrInvalidSession, f.name, len(f.value), MaxSessionField)
		case !storableText(f.value):
			return fmt.Errorf("%w: its %s is not UTF-8 text without NUL bytes", ErrInvalidSession, f.name)
		}
	}
	if len(sess.Groups) > MaxSessionGroups {
		return fmt.Errorf("%w: it has %d groups, more than %d", ErrInvalidSession, len(sess.Groups), MaxSessionGroups)
	}
	for i, g := range sess.Groups {
		switch {
		case len(g) > MaxSessionGroupBytes:
			return fmt.Errorf("%w: its group %d is %d bytes, more than %d", ErrInvalidSession, i+1, len(g), MaxSessionGroupBytes)
		case !storableText(g):
			return fmt.Errorf("%w: its group %d is not UTF-8 text without NUL bytes", ErrInvalidSession, i+1)
		}
	}
	switch {
	case sess.Created.IsZero() || sess.Expires.IsZero():
		return fmt.Errorf("%w: it has no creation or expiry time", ErrInvalidSession)
	case !Truncate(sess.Expires).After(Truncate(sess.Created)):
		return fmt.Errorf("%w: it expires no later than it is created", ErrInvalidSession)
	}
	return nil
}

// storableText reports whether v is stored as it is on both backends.
func storableText(v string) bool {
	return utf8.ValidString(v) && strings.IndexByte(v, 0) < 0
}

// Session returns the session with id if it exists and has not expired at
// now (it expires at Expires). It reads one row by its primary key.
func (s *Store) Session(ctx context.Context, id string, now time.Time) (Session, bool, error) {
	if id == "" || len(id) > MaxSessionField || !storableText(id) {
		return Session{}, false, nil // never stored
	}
	var sess Session
	var groups string
	var created, expires int64
	err := s.queryRow(ctx, `SELECT id, subject, username, groups_json, csrf, created, expires FROM dashboard_sessions
		WHERE id = ? AND expires > ?`, id, Truncate(now).UnixMicro()).
		Scan(&sess.ID, &sess.Subject, &sess.Username, &groups, &sess.CSRF, &created, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Session{}, false, nil
	case err != nil:
		return Session{}, false, fmt.Errorf("reading a dashboard session: %w", err)
	}
	if err := json.Unmarshal([]byte(groups), &sess.Groups); err != nil {
		return Session{}, false, fmt.Errorf("reading a dashboard session's groups: %w", err)
	}
	if len(sess.Groups) == 0 {
		sess.Groups = nil
	}
	sess.Created, sess.Expires = time.UnixMicro(created).UTC(), time.UnixMicro(expires).UTC()
	return sess, true, nil
}

// EndSession ends the session with id, if there is one.
func (s *Store) EndSession(ctx context.Context, id string) error {
	if id == "" || len(id) > MaxSessionField || !storableText(id) {
		return nil
	}
	err := s.shortTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.d.sql(`DELETE FROM dashboard_sessions WHERE id = ?`), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("ending a dashboard session: %w", err)
	}
	return nil
}

// EndSessionsOf ends every session of subject, returning how many.
func (s *Store) EndSessionsOf(ctx context.Context, subject string) (int, error) {
	if subject == "" || len(subject) > MaxSessionField || !storableText(subject) {
		return 0, nil
	}
	var n int64
	err := s.shortTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, s.d.sql(`DELETE FROM dashboard_sessions WHERE subject = ?`), subject)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("ending the dashboard sessions of a subject: %w", err)
	}
	return int(n), nil
}

// PruneSessions deletes the sessions expired at now, returning how many. It
// works in transactions of at most sessionPruneBatch rows each, outside
// the writer's batches; a backlog larger than maxSessionPruneBatches of
// them is left for the next call.
func (s *Store) PruneSessions(ctx context.Context, now time.Time) (int, error) {
	cutoff := Truncate(now).UnixMicro()
	pruned := 0
	for range maxSessionPruneBatches {
		var n int64
		err := s.shortTx(ctx, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, s.d.sql(fmt.Sprintf(`DELETE FROM dashboard_sessions WHERE expires <= ? AND id IN (
				SELECT id FROM dashboard_sessions WHERE expires <= ? LIMIT %d)`, sessionPruneBatch)), cutoff, cutoff)
			if err != nil {
				return err
			}
			n, err = res.RowsAffected()
			return err
		})
		if err != nil {
			return pruned, fmt.Errorf("pruning expired dashboard sessions: %w", err)
		}
		pruned += int(n)
		if n < sessionPruneBatch {
			break
		}
	}
	return pruned, nil
}
