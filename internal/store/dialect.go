package store

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/pressly/goose/v3"
)

// dialect is what differs between the backends. The schema and the
// statements are written once, with ? placeholders; the rest is here.
type dialect struct {
	name  string
	goose goose.Dialect
	// dollar: placeholders are $1, $2, ... (PostgreSQL).
	dollar bool
	// lockRows: other processes write too (PostgreSQL replicas), so a
	// transaction locks the check rows it changes, all at once and in one
	// order, before it reads them.
	lockRows bool
	// writers is how many transactions a store runs at once. SQLite has
	// one writer; on PostgreSQL, where the row locks above already keep
	// concurrent writers (other replicas') apart, a few overlap one
	// transaction's round trips with another's commit.
	writers int
	// strictText: a TEXT value must be valid UTF-8 without NUL bytes
	// (PostgreSQL refuses the whole statement otherwise; SQLite stores any
	// bytes).
	strictText bool
	// lateral: one statement can read the first rows of each of several
	// namespaces (CROSS JOIN LATERAL), saving a round trip per namespace.
	// SQLite has no LATERAL; it reads them one prepared statement at a
	// time, in process.
	lateral bool
	// pipelined: the writer's transaction runs on pgx, its statements
	// sharing round trips (pipeline.go).
	pipelined bool
	// nowMicros is the database's clock, in microseconds since the Unix
	// epoch: one clock for what replicas on different machines compare.
	nowMicros string
}

var (
	sqliteDialect = dialect{name: "sqlite", goose: goose.DialectSQLite3, writers: 1,
		nowMicros: `CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)`}
	postgresDialect = dialect{name: "postgres", goose: goose.DialectPostgres, dollar: true, lockRows: true, writers: 2, strictText: true,
		lateral: true, pipelined: true, nowMicros: `CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)`}
)

// sql returns q in the dialect's placeholder style. The statements here
// have no ? inside string literals.
func (d dialect) sql(q string) string {
	if !d.dollar || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// text makes the string arguments of a statement storable: on PostgreSQL,
// invalid UTF-8 and NUL bytes become U+FFFD. Whatever reaches the store (a
// user agent, a webhook's error) must not fail the write, nor the other
// writes batched in its transaction. Byte slices (bodies) are left alone.
func (d dialect) text(args []any) []any {
	if !d.strictText {
		return args
	}
	for i, a := range args {
		if s, ok := a.(string); ok && (!utf8.ValidString(s) || strings.IndexByte(s, 0) >= 0) {
			args[i] = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", "\uFFFD"), "\uFFFD")
		}
	}
	return args
}
