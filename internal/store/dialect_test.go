package store

import "testing"

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
