package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// ChannelRef names a channel: its namespace and name.
type ChannelRef struct{ Namespace, Name string }

// DueQuery says which of the due deliveries DueDeliveries returns.
type DueQuery struct {
	// Limit is how many it returns at most.
	Limit int
	// PerNamespace, when positive, is how many deliveries of one namespace
	// it returns at most.
	PerNamespace int
	// BusyNamespaces and BusyChannels are left out: they have as many
	// deliveries in flight as they may.
	BusyNamespaces []string
	BusyChannels   []ChannelRef
	// After is the namespace served last. When more namespaces owe due
	// deliveries than the answer holds, it holds those first in name order
	// after After, round and round, so that each namespace's turn comes,
	// however old the others' backlogs.
	After string
}

// pendingSQL is DeliveryPending as an SQL literal: the partial indexes on
// pending deliveries serve a statement that names it, not a parameter.
const pendingSQL = `'` + string(DeliveryPending) + `'`

// DueDeliveries returns pending deliveries whose next attempt has come, at
// most q.Limit. Namespaces take turns: the answer holds each namespace's
// earliest due delivery, then each one's second, and so on, earliest first
// within a turn, so that however many deliveries one namespace owes,
// another's come in the same answer. A channel hears of a check's flips in
// order: a delivery waits while an older one of the same check to the same
// channel is pending.
//
// Nothing here reads a namespace's whole backlog. The namespaces that owe
// due deliveries are found by stepping through an index of pending
// deliveries from one namespace to the next (a loose index scan: one seek
// per namespace, however many deliveries each owes), and each namespace's
// deliveries are read from it earliest first, no further than the answer
// can use. So the query's cost grows with the number of namespaces it
// visits and the answer's size, not with the backlog: a tenant that owes
// thousands of notifications does not slow every dispatch.
//
// Namespaces are compared byte by byte, as Go compares strings (the
// dispatcher's turns, package fairshare, are in that order): SQLite's
// default collation does, and on PostgreSQL deliveries.namespace has the
// "C" collation (migration 8), whatever the database's.
func (s *Store) DueDeliveries(ctx context.Context, now time.Time, q DueQuery) ([]Delivery, error) {
	if q.Limit <= 0 {
		return nil, nil
	}
	if q.PerNamespace <= 0 || q.PerNamespace > q.Limit {
		q.PerNamespace = q.Limit
	}
	read := s.dueOneByOne
	if s.d.lateral {
		read = s.dueAtOnce
	}
	due, err := read(ctx, now, q)
	if err != nil {
		return nil, fmt.Errorf("finding due notifications: %w", err)
	}
	return takeTurns(due, q.Limit), nil
}

// dueColumns and dueWhere read a namespace's due deliveries (d) with their
// flips (f) and checks (c), those that no older flip of the same check
// waits before on the same channel.
const (
	dueColumns = `f.n, f.created, f.up, f.from_state, f.to_state, f.reason, f.detail, f.notice, f.since, f.held, f.held_until,
		d.check_uid, c.namespace, c.name, ch.name, d.state, d.attempts, d.next_attempt, d.last_error`
	// dueJoins are the tables dueColumns reads besides d.
	dueJoins = `JOIN flips f ON f.check_uid = d.check_uid AND f.n = d.flip_n
		JOIN checks c ON c.uid = d.check_uid
		JOIN channels ch ON ch.id = d.channel_id`
	dueWhere = `d.state = ` + pendingSQL + ` AND d.next_attempt <= ? AND NOT EXISTS (
		SELECT 1 FROM deliveries o WHERE o.check_uid = d.check_uid AND o.channel_id = d.channel_id
			AND o.state = ` + pendingSQL + ` AND o.flip_n < d.flip_n)`
	dueOrder = `ORDER BY d.next_attempt, d.check_uid, d.flip_n, d.channel_id`
)

// dueOneByOne lists the namespaces that owe due deliveries, then reads
// each one's first, with a prepared statement (preparing would cost more
// than the read).
func (s *Store) dueOneByOne(ctx context.Context, now time.Time, q DueQuery) ([]Delivery, error) {
	namespaces, err := s.dueNamespaces(ctx, now, q)
	if err != nil {
		return nil, err
	}
	busy := map[string][]any{}
	for _, b := range q.BusyChannels {
		busy[b.Namespace] = append(busy[b.Namespace], b.Name)
	}
	var due []Delivery
	for _, ns := range namespaces {
		st, err := s.due.statement(ctx, s, len(busy[ns]))
		if err != nil {
			return nil, err
		}
		args := append([]any{ns, now.UnixMicro()}, busy[ns]...)
		// Unused places in the list of busy channels hold "", which no
		// channel is named.
		for range st.places - len(busy[ns]) {
			args = append(args, "")
		}
		rows, err := st.stmt.QueryContext(ctx, append(args, q.PerNamespace)...)
		if err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
		if due, err = scanDue(rows, due); err != nil {
			return nil, fmt.Errorf("namespace %s: %w", ns, err)
		}
	}
	return due, nil
}

// dueAtOnce reads the namespaces that owe due deliveries and each one's
// first in one statement.
func (s *Store) dueAtOnce(ctx context.Context, now time.Time, q DueQuery) ([]Delivery, error) {
	// Empty arrays, not NULL: "x = ANY(NULL)" is NULL, which would leave
	// everything out.
	busyNamespaces, busyChannels := append([]string{}, q.BusyNamespaces...), []string{}
	for _, b := range q.BusyChannels {
		busyChannels = append(busyChannels, b.Namespace+"/"+b.Name)
	}
	namespaces, args := dueNamespacesSQL(now, q, func(ns string) string { return `NOT (` + ns + ` = ANY(?))` }, any(busyNamespaces))
	rows, err := s.query(ctx, namespaces+`
		SELECT `+dueColumns+`
		FROM (SELECT namespace FROM due_namespaces ORDER BY namespace <= ?, namespace LIMIT ?) n
		CROSS JOIN LATERAL (SELECT d.* FROM deliveries d JOIN channels busy ON busy.id = d.channel_id
			WHERE d.namespace = n.namespace AND `+dueWhere+` AND NOT (d.namespace || '/' || busy.name = ANY(?))
			`+dueOrder+` LIMIT ?) d
		`+dueJoins,
		append(args, q.After, q.Limit, now.UnixMicro(), busyChannels, q.PerNamespace)...)
	if err != nil {
		return nil, err
	}
	return scanDue(rows, nil)
}

// dueNamespaces lists the namespaces, other than the busy ones, that owe
// due deliveries: at most q.Limit, in name order from the first after
// q.After, round and round.
func (s *Store) dueNamespaces(ctx context.Context, now time.Time, q DueQuery) ([]string, error) {
	var busy []any
	for _, ns := range q.BusyNamespaces {
		busy = append(busy, ns)
	}
	notBusy := func(string) string { return "TRUE" }
	if len(busy) > 0 {
		notBusy = func(ns string) string { return ns + ` NOT IN (?` + strings.Repeat(", ?", len(busy)-1) + `)` }
	}
	namespaces, args := dueNamespacesSQL(now, q, notBusy, busy...)
	rows, err := s.query(ctx, namespaces+` SELECT namespace FROM due_namespaces`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, err
		}
		out = append(out, ns)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Those after q.After first, then from the start round to it.
	round := func(ns string) int {
		if ns <= q.After {
			return 1
		}
		return 0
	}
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(cmp.Compare(round(a), round(b)), cmp.Compare(a, b)) })
	return out[:min(len(out), q.Limit)], nil
}

// dueNamespacesSQL is a WITH clause that defines due_namespaces: up to
// q.Limit namespaces, other than the busy ones, that owe deliveries due
// at now and come after q.After in name order, and up to q.Limit that
// owe some and come from the first up to q.After (a caller that wants
// q.Limit of them in turn order sorts the two lists, those after q.After
// first, and keeps the first q.Limit). notBusy(ns) is the condition that
// ns (a column) is not a busy namespace, with placeholders for busy,
// which may be empty.
//
// It steps through the index of pending deliveries from one namespace to
// the next (WITH RECURSIVE, one seek per step), asks whether each owes a
// due delivery (another seek: the index holds a namespace's deliveries
// earliest first), and stops when it has q.Limit: however many deliveries
// a namespace owes, it costs two seeks. GROUP BY namespace over the
// pending deliveries, which this replaces, read every one.
func dueNamespacesSQL(now time.Time, q DueQuery, notBusy func(ns string) string, busy ...any) (string, []any) {
	next := func(after string) string {
		return `(SELECT namespace FROM deliveries WHERE state = ` + pendingSQL + after + ` ORDER BY namespace LIMIT 1)`
	}
	owes := func(ns string) string {
		return `EXISTS (SELECT 1 FROM deliveries d WHERE d.state = ` + pendingSQL + ` AND d.namespace = ` + ns +
			` AND d.next_attempt <= ?) AND ` + notBusy(ns)
	}
	sql := `WITH RECURSIVE
		later(namespace) AS (SELECT ` + next(` AND namespace > ?`) + `
			UNION ALL SELECT ` + next(` AND namespace > later.namespace`) + ` FROM later WHERE later.namespace IS NOT NULL),
		earlier(namespace) AS (SELECT ` + next(``) + `
			UNION ALL SELECT ` + next(` AND namespace > earlier.namespace`) + ` FROM earlier WHERE earlier.namespace < ?),
		due_namespaces(namespace) AS (
			SELECT namespace FROM (SELECT namespace FROM later
				WHERE later.namespace IS NOT NULL AND ` + owes("later.namespace") + ` LIMIT ?) l
			UNION ALL
			SELECT namespace FROM (SELECT namespace FROM earlier
				WHERE earlier.namespace <= ? AND ` + owes("earlier.namespace") + ` LIMIT ?) e)`
	args := []any{q.After, q.After, now.UnixMicro()}
	args = append(args, busy...)
	args = append(args, q.Limit, q.After, now.UnixMicro())
	args = append(args, busy...)
	return sql, append(args, q.Limit)
}

// scanDue appends the deliveries rows hold to due, and closes rows.
func scanDue(rows *sql.Rows, due []Delivery) ([]Delivery, error) {
	defer rows.Close()
	for rows.Next() {
		var d Delivery
		var state string
		var next int64
		f, err := scanFlip(rows, &d.CheckUID, &d.Namespace, &d.Name, &d.Channel, &state, &d.Attempts, &next, &d.LastError)
		if err != nil {
			return nil, err
		}
		d.Flip, d.State, d.NextAttempt = f, DeliveryState(state), time.UnixMicro(next).UTC()
		due = append(due, d)
	}
	return due, rows.Err()
}

// takeTurns orders deliveries by their turn in their namespace's queue
// (its earliest first), then earliest first, and keeps the first limit.
func takeTurns(due []Delivery, limit int) []Delivery {
	earliest := func(a, b Delivery) int {
		return cmp.Or(a.NextAttempt.Compare(b.NextAttempt), cmp.Compare(a.Namespace, b.Namespace),
			cmp.Compare(a.CheckUID, b.CheckUID), cmp.Compare(a.Flip.N, b.Flip.N), cmp.Compare(a.Channel, b.Channel))
	}
	slices.SortFunc(due, func(a, b Delivery) int { return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), earliest(a, b)) })
	type turned struct {
		turn int
		d    Delivery
	}
	all := make([]turned, len(due))
	for i, d := range due {
		all[i].d = d
		if i > 0 && d.Namespace == due[i-1].Namespace {
			all[i].turn = all[i-1].turn + 1
		}
	}
	slices.SortFunc(all, func(a, b turned) int { return cmp.Or(cmp.Compare(a.turn, b.turn), earliest(a.d, b.d)) })
	out := make([]Delivery, 0, min(len(all), limit))
	for _, t := range all[:min(len(all), limit)] {
		out = append(out, t.d)
	}
	return out
}

// dueStatements are the prepared statements that read one namespace's
// due deliveries, by how many busy channels they leave out (rounded up to
// a power of two, at least 4): preparing is most of the cost of these
// small reads.
type dueStatements struct {
	mu    sync.Mutex
	stmts map[int]*dueStatement
}

type dueStatement struct {
	stmt   *sql.Stmt
	places int // for busy channels
}

func (ds *dueStatements) statement(ctx context.Context, s *Store, busy int) (*dueStatement, error) {
	places := 4
	for places < busy {
		places *= 2
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if st := ds.stmts[places]; st != nil {
		return st, nil
	}
	stmt, err := s.ro.PrepareContext(ctx, s.d.sql(`SELECT `+dueColumns+`
		FROM deliveries d `+dueJoins+`
		WHERE d.namespace = ? AND `+dueWhere+` AND ch.name NOT IN (?`+strings.Repeat(", ?", places-1)+`)
		`+dueOrder+` LIMIT ?`))
	if err != nil {
		return nil, err
	}
	if ds.stmts == nil {
		ds.stmts = map[int]*dueStatement{}
	}
	ds.stmts[places] = &dueStatement{stmt: stmt, places: places}
	return ds.stmts[places], nil
}

func (ds *dueStatements) close() error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	var errs []error
	for _, st := range ds.stmts {
		errs = append(errs, st.stmt.Close())
	}
	ds.stmts = nil
	return errors.Join(errs...)
}
