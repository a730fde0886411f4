package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// copiedTable is a table Copy copies: every column, and its primary key,
// in whose order the rows are read (a stable order, and the index's).
type copiedTable struct {
	name    string
	key     string
	columns []string
}

// copiedTables are the store's tables with every column, in one place: Copy
// copies these columns, and refuses a store whose tables have any other (a
// migration added it and this list missed it), so nothing is silently left
// behind. The column types come from the schema, not from here.
var copiedTables = []copiedTable{
	{name: "checks", key: "uid", columns: []string{"uid", "namespace", "name", "n_pings", "n_flips", "last_ping",
		"last_ping_failed", "last_start", "last_start_rid", "last_duration", "paused_at", "resumed_at", "state",
		"state_since", "next_change", "body_bytes", "version", "failures", "fail_reason", "successes", "missed_at", "alert_since", "last_notice", "escalated",
		"maintenance", "maintenance_until", "held", "runs_succeeded", "runs_failed", "runs_missed", "last_success", "runs_dropped",
		"flap_since", "flap_count", "reprieve", "acked_at", "acked_by", "fail_detail", "dependency", "dependency_since"}},
	{name: "pings", key: "check_uid, n", columns: []string{"check_uid", "n", "kind", "created", "scheme", "remote_addr",
		"method", "ua", "rid", "exit_status", "body", "body_dropped", "duration"}},
	{name: "runs", key: "check_uid, n", columns: []string{"check_uid", "n", "ended", "failed", "duration"}},
	{name: "flips", key: "check_uid, n", columns: []string{"check_uid", "n", "created", "up", "from_state", "to_state",
		"reason", "detail", "notice", "since", "held", "held_until"}},
	{name: "channels", key: "id", columns: []string{"id", "namespace", "name"}},
	{name: "deliveries", key: "check_uid, flip_n, channel_id", columns: []string{"check_uid", "flip_n", "channel_id", "state",
		"attempts", "next_attempt", "last_error", "namespace", "queued"}},
	{name: "uuid_owners", key: "uuid", columns: []string{"uuid", "namespace", "check_uid", "released"}},
	{name: "project_creates", key: "namespace", columns: []string{"namespace", "resource_version"}},
	{name: "key_owners", key: "key_id", columns: []string{"key_id", "namespace", "released"}},
	{name: "reports", key: "namespace, channel, period", columns: []string{"namespace", "channel", "period", "sent",
		"attempts", "next_attempt", "error", "created"}},
	{name: "sla_verdicts", key: "check_uid", columns: []string{"check_uid", "reason", "detail", "since"}},
	{name: "cronjob_suspensions", key: "cronjob_uid", columns: []string{"cronjob_uid", "namespace", "suspended", "seen_until"}},
	{name: "early_pings", key: "id", columns: []string{"id", "check_uid", "namespace", "received", "kind", "rid",
		"exit_status", "scheme", "remote_addr", "method", "ua", "body", "replica"}},
	{name: "whole_replicas", key: "id", columns: []string{"id", "seen"}},
	{name: "dashboard_sessions", key: "id", columns: []string{"id", "subject", "username", "groups_json", "csrf", "created",
		"expires"}},
	{name: "clock", key: "id", columns: []string{"id", "alive", "away_from"}},
}

// counterTable is the change counter, one row that every store has from
// its first migration: Copy raises the destination's value to the
// source's rather than copying the row.
var counterTable = copiedTable{name: "changes", key: "id", columns: []string{"id", "value"}}

// gooseTable is where goose records the schema's version (not copied: both
// stores are migrated by Open).
const gooseTable = "goose_db_version"

// Copy batches rows into multi-row INSERTs of at most copyBatchRows rows
// and copyBatchBytes bytes of values (ping bodies, mostly), and at most
// copyMaxParams placeholders (SQLite allows 32,766 in one statement,
// PostgreSQL 65,535): what it holds in memory at once.
const (
	copyBatchRows  = 500
	copyBatchBytes = 4 << 20
	copyMaxParams  = 30_000
)

// ErrNotEmpty means the destination of a copy already holds data: Copy
// writes only into a new, empty store, so that running it twice cannot
// double anything.
var ErrNotEmpty = errors.New("the destination store is not empty")

// CopyStats is what Copy copied.
type CopyStats struct {
	Checks, Pings, Flips, Deliveries int64
	// BodyBytes is the size of the ping bodies copied.
	BodyBytes int64
	// Changes is the destination's change counter after the copy: at least
	// the source's, so that change numbers keep increasing.
	Changes int64
}

// Copy copies everything src holds into dst, which must hold nothing yet
// (ErrNotEmpty otherwise): every check's row, its pings with their bodies,
// flips and deliveries, and the change counter. It is how `vigil store
// migrate` moves the embedded store to PostgreSQL, and works between any
// two stores (PostgreSQL to SQLite, SQLite to SQLite).
//
// It takes two open stores rather than two DSNs: Open alone knows DSNs and
// migrates both to this binary's schema, which Copy checks they share. It
// is a function rather than a method because neither store is the obvious
// receiver; dst comes first, as in io.Copy.
//
// src is read in one read transaction, a consistent snapshot; dst is
// written in one transaction, committed only once everything is in it, so a
// failed or interrupted copy leaves dst as it was. Rows are streamed from
// one to the other in batches, so memory does not grow with the store.
// Copy writes neither store through its writer and does not stop writes to
// src: what src records after the snapshot is not copied, so stop whatever
// writes it first (`vigil store migrate` opens an embedded source with
// Options.Exclusive, which also keeps a manager from opening it meanwhile).
// A PostgreSQL destination's tables are locked against other writers until
// the commit.
func Copy(ctx context.Context, dst, src *Store) (CopyStats, error) {
	if dst == src {
		return CopyStats{}, errors.New("copying a store into itself")
	}
	from, err := src.ro.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return CopyStats{}, fmt.Errorf("reading the source store: %w", err)
	}
	defer func() { _ = from.Rollback() }() // read only: nothing to commit
	to, err := dst.db.BeginTx(ctx, nil)
	if err != nil {
		return CopyStats{}, fmt.Errorf("writing the destination store: %w", err)
	}
	stats, err := copyTx(ctx, dst.d, to, src.d, from)
	if err != nil {
		_ = to.Rollback()
		return CopyStats{}, err
	}
	if err := to.Commit(); err != nil {
		return CopyStats{}, fmt.Errorf("committing the copy: %w", err)
	}
	return stats, nil
}

func copyTx(ctx context.Context, dd dialect, to *sql.Tx, sd dialect, from *sql.Tx) (CopyStats, error) {
	var stats CopyStats
	if dd.lockRows {
		// Other processes may write a PostgreSQL store: none may add a check
		// between the test for emptiness below and the commit.
		names := []string{counterTable.name}
		for _, t := range copiedTables {
			names = append(names, t.name)
		}
		if _, err := to.ExecContext(ctx, `LOCK TABLE `+strings.Join(names, ", ")+` IN EXCLUSIVE MODE`); err != nil {
			return stats, fmt.Errorf("locking the destination store: %w", err)
		}
	}
	sv, err := schemaVersion(ctx, from)
	if err != nil {
		return stats, fmt.Errorf("the source store: %w", err)
	}
	dv, err := schemaVersion(ctx, to)
	if err != nil {
		return stats, fmt.Errorf("the destination store: %w", err)
	}
	if sv != dv {
		return stats, fmt.Errorf("the source store's schema is version %d, the destination's %d: open both with the same vigil", sv, dv)
	}
	booleans, err := verifySchema(ctx, sd, from)
	if err != nil {
		return stats, fmt.Errorf("the source store: %w", err)
	}
	if _, err := verifySchema(ctx, dd, to); err != nil {
		return stats, fmt.Errorf("the destination store: %w", err)
	}
	if err := checkEmpty(ctx, to); err != nil {
		return stats, err
	}

	for _, t := range copiedTables {
		n, bytes, err := copyRows(ctx, t, booleans[t.name], dd, to, from)
		if err != nil {
			return stats, fmt.Errorf("copying %s: %w", t.name, err)
		}
		switch t.name {
		case "checks":
			stats.Checks = n
		case "pings":
			stats.Pings, stats.BodyBytes = n, bytes
		case "flips":
			stats.Flips = n
		case "deliveries":
			stats.Deliveries = n
		}
	}
	if dd.name == postgresDialect.name {
		// The Channel numbers came with their rows: the next one made
		// must come after them (SQLite's rowid does by itself).
		if _, err := to.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence('channels', 'id'),
			(SELECT COALESCE(MAX(id), 0) + 1 FROM channels), false)`); err != nil {
			return stats, fmt.Errorf("numbering the destination's Channels: %w", err)
		}
	}

	var counter int64
	if err := from.QueryRowContext(ctx, `SELECT value FROM changes WHERE id = 1`).Scan(&counter); err != nil {
		return stats, fmt.Errorf("reading the source's change counter: %w", err)
	}
	if _, err := to.ExecContext(ctx, dd.sql(`UPDATE changes SET value = ? WHERE id = 1 AND value < ?`), counter, counter); err != nil {
		return stats, fmt.Errorf("setting the destination's change counter: %w", err)
	}
	if err := to.QueryRowContext(ctx, `SELECT value FROM changes WHERE id = 1`).Scan(&stats.Changes); err != nil {
		return stats, fmt.Errorf("reading the destination's change counter: %w", err)
	}
	return stats, nil
}

// schemaVersion is the newest migration applied to a store.
func schemaVersion(ctx context.Context, tx *sql.Tx) (int64, error) {
	var v sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT MAX(version_id) FROM `+gooseTable).Scan(&v); err != nil {
		return 0, fmt.Errorf("reading its schema version: %w", err)
	}
	return v.Int64, nil
}

// schemaColumns lists the table, column and declared type of every column
// of the store's tables.
func (d dialect) schemaColumns() string {
	if d.name == postgresDialect.name {
		return `SELECT table_name, column_name, data_type FROM information_schema.columns
			WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`
	}
	return `SELECT m.name, p.name, p.type FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY m.name, p.cid`
}

// verifySchema compares the store's tables and columns with those Copy
// knows (copiedTables), and returns the boolean columns by table: SQLite
// keeps booleans as 0 and 1, which PostgreSQL does not take for one. A
// table Copy does not know is an error in an SQLite file, which is the
// store's alone; a PostgreSQL database may hold other tables beside it
// (both stores have the same schema, so a table a migration added and Copy
// missed is found whenever one of them is SQLite).
func verifySchema(ctx context.Context, d dialect, tx *sql.Tx) (map[string]map[string]bool, error) {
	known := map[string]map[string]bool{gooseTable: nil}
	for _, t := range append([]copiedTable{counterTable}, copiedTables...) {
		known[t.name] = map[string]bool{}
		for _, c := range t.columns {
			known[t.name][c] = true
		}
	}
	rows, err := tx.QueryContext(ctx, d.schemaColumns())
	if err != nil {
		return nil, fmt.Errorf("reading its schema: %w", err)
	}
	defer rows.Close()
	booleans := map[string]map[string]bool{}
	var unknown []string
	seen := map[string]int{}
	for rows.Next() {
		var table, column, typ string
		if err := rows.Scan(&table, &column, &typ); err != nil {
			return nil, err
		}
		columns, ok := known[table]
		switch {
		case !ok && d.name == sqliteDialect.name:
			unknown = append(unknown, "table "+table)
		case !ok:
		case table == gooseTable:
		case !columns[column]:
			unknown = append(unknown, "column "+table+"."+column)
		default:
			seen[table]++
			if strings.EqualFold(typ, "boolean") {
				if booleans[table] == nil {
					booleans[table] = map[string]bool{}
				}
				booleans[table][column] = true
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading its schema: %w", err)
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("it has %s, which this vigil does not know how to copy (a newer schema?)", strings.Join(unknown, ", "))
	}
	for _, table := range sortedKeys(known) {
		if columns := known[table]; table != gooseTable && seen[table] != len(columns) {
			return nil, fmt.Errorf("its table %s has %d of the %d columns this vigil copies (an older schema?)", table, seen[table], len(columns))
		}
	}
	return booleans, nil
}

// checkEmpty refuses a destination that holds any row of a copied table.
func checkEmpty(ctx context.Context, tx *sql.Tx) error {
	var checks int64
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM checks`).Scan(&checks); err != nil {
		return fmt.Errorf("counting the destination's checks: %w", err)
	}
	if checks > 0 {
		return fmt.Errorf("%w: it holds %d checks; copy only into a new, empty database", ErrNotEmpty, checks)
	}
	for _, t := range copiedTables[1:] {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+t.name+`)`).Scan(&exists); err != nil {
			return fmt.Errorf("reading the destination's %s: %w", t.name, err)
		}
		if exists {
			return fmt.Errorf("%w: it holds %s of checks it does not have; copy only into a new, empty database", ErrNotEmpty, t.name)
		}
	}
	return nil
}

// copyRows streams table t from one transaction into the other, batched,
// and returns how many rows it copied and the bytes of their []byte
// values (ping bodies).
func copyRows(ctx context.Context, t copiedTable, booleans map[string]bool, dd dialect, to, from *sql.Tx) (n, blobBytes int64, err error) {
	cols := strings.Join(t.columns, ", ")
	rows, err := from.QueryContext(ctx, `SELECT `+cols+` FROM `+t.name+` ORDER BY `+t.key)
	if err != nil {
		return 0, 0, err
	}
	defer rows.Close()

	width := len(t.columns)
	isBool := make([]bool, width)
	for i, c := range t.columns {
		isBool[i] = booleans[c]
	}
	perBatch := min(copyBatchRows, copyMaxParams/width)
	insert := func(rows int) string {
		row := "(" + strings.TrimSuffix(strings.Repeat("?, ", width), ", ") + ")"
		return dd.sql(`INSERT INTO ` + t.name + ` (` + cols + `) VALUES ` + strings.TrimSuffix(strings.Repeat(row+", ", rows), ", "))
	}
	var full *sql.Stmt // the statement of a full batch, prepared once it is needed
	defer func() {
		if full != nil {
			_ = full.Close()
		}
	}()
	args := make([]any, 0, perBatch*width)
	var batchBytes int
	flush := func() error {
		if len(args) == 0 {
			return nil
		}
		// What an older SQLite store kept as any bytes PostgreSQL takes
		// only as UTF-8.
		args = dd.text(args)
		var err error
		if len(args) == perBatch*width {
			if full == nil {
				if full, err = to.PrepareContext(ctx, insert(perBatch)); err != nil {
					return err
				}
			}
			_, err = full.ExecContext(ctx, args...)
		} else {
			_, err = to.ExecContext(ctx, insert(len(args)/width), args...)
		}
		clear(args)
		args, batchBytes = args[:0], 0
		return err
	}

	vals := make([]any, width)
	ptrs := make([]any, width)
	for rows.Next() {
		for i := range vals {
			vals[i] = nil
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return n, blobBytes, err
		}
		for i, v := range vals {
			switch v := v.(type) {
			case int64:
				if isBool[i] {
					vals[i] = v != 0
				}
			case []byte:
				blobBytes += int64(len(v))
				batchBytes += len(v)
			case string:
				batchBytes += len(v)
			}
		}
		args = append(args, vals...)
		n++
		if len(args) == perBatch*width || batchBytes >= copyBatchBytes {
			if err := flush(); err != nil {
				return n, blobBytes, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return n, blobBytes, err
	}
	return n, blobBytes, flush()
}

// sortedKeys is for messages in a stable order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
