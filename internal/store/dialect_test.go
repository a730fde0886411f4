package store

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestPlaceholders(t *testing.T) {
	for _, tc := range []struct{ in, sqlite, postgres string }{
		{`SELECT 1`, `SELECT 1`, `SELECT 1`},
		{`SELECT a FROM t WHERE b = ? AND c IN (?, ?)`, `SELECT a FROM t WHERE b = ? AND c IN (?, ?)`, `SELECT a FROM t WHERE b = $1 AND c IN ($2, $3)`},
		{`VALUES (?,?)`, `VALUES (?,?)`, `VALUES ($1,$2)`},
	} {
		if got := sqliteDialect.sql(tc.in); got != tc.sqlite {
			t.Errorf("sqlite %q = %q", tc.in, got)
		}
		if got := postgresDialect.sql(tc.in); got != tc.postgres {
			t.Errorf("postgres %q = %q", tc.in, got)
		}
	}
}

func TestText(t *testing.T) {
	args := []any{"ok", "bad \xff byte", "nul \x00 byte", []byte("body \xff\x00 kept"), 7}
	got := postgresDialect.text(append([]any(nil), args...))
	want := []any{"ok", "bad \uFFFD byte", "nul \uFFFD byte", []byte("body \xff\x00 kept"), 7}
	for i := range want {
		if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
			t.Errorf("arg %d = %q, want %q", i, got[i], want[i])
		}
	}
	if kept := sqliteDialect.text(append([]any(nil), args...)); kept[1] != args[1] || kept[2] != args[2] {
		t.Errorf("SQLite's arguments changed: %q", kept)
	}
}

func TestConflicted(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("locking checks in the store: %w", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"}), true},
		{&pgconn.PgError{Code: "40001"}, true},
		{&pgconn.PgError{Code: "23505"}, false}, // a unique violation is the write's own fault
		{errors.New("deadlock detected"), false},
		{nil, false},
	} {
		if got := conflicted(tc.err); got != tc.want {
			t.Errorf("conflicted(%v) = %v", tc.err, got)
		}
	}
}
