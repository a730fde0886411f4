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
// Each namespace's deliveries are read from an index, earliest first, no
// further than the answer can use: however long one namespace's backlog,
// the query reads a few rows of it.
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
	dueColumns = `f.n, f.created, f.up, f.from_state, f.to_state, f.reason,
		d.check_uid, c.namespace, c.name, d.channel, d.state, d.attempts, d.next_attempt, d.last_error`
	dueWhere = `d.state = ` + pendingSQL + ` AND d.next_attempt <= ? AND NOT EXISTS (
		SELECT 1 FROM deliveries o WHERE o.check_uid = d.check_uid AND o.channel = d.channel
			AND o.state = ` + pendingSQL + ` AND o.flip_n < d.flip_n)`
	dueOrder = `ORDER BY d.next_attempt, d.check_uid, d.flip_n, d.channel`
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
	rows, err := s.query(ctx, `SELECT `+dueColumns+`
		FROM (SELECT namespace FROM deliveries
			WHERE state = `+pendingSQL+` AND next_attempt <= ? AND NOT (namespace = ANY(?))
			GROUP BY namespace ORDER BY namespace <= ?, namespace LIMIT ?) n
		CROSS JOIN LATERAL (SELECT d.* FROM deliveries d
			WHERE d.namespace = n.namespace AND `+dueWhere+` AND NOT (d.namespace || '/' || d.channel = ANY(?))
			`+dueOrder+` LIMIT ?) d
		JOIN flips f ON f.check_uid = d.check_uid AND f.n = d.flip_n
		JOIN checks c ON c.uid = d.check_uid`,
		now.UnixMicro(), busyNamespaces, q.After, q.Limit, now.UnixMicro(), busyChannels, q.PerNamespace)
	if err != nil {
		return nil, err
	}
	return scanDue(rows, nil)
}

// dueNamespaces lists the namespaces, other than the busy ones, that owe
// due deliveries: at most q.Limit, in name order from the first after
// q.After, round and round.
func (s *Store) dueNamespaces(ctx context.Context, now time.Time, q DueQuery) ([]string, error) {
	args := []any{now.UnixMicro()}
	except := ""
	if len(q.BusyNamespaces) > 0 {
		except = " AND namespace NOT IN (?" + strings.Repeat(", ?", len(q.BusyNamespaces)-1) + ")"
		for _, ns := range q.BusyNamespaces {
			args = append(args, ns)
		}
	}
	rows, err := s.query(ctx, `SELECT namespace FROM deliveries
		WHERE state = `+pendingSQL+` AND next_attempt <= ?`+except+`
		GROUP BY namespace ORDER BY namespace <= ?, namespace LIMIT ?`, append(args, q.After, q.Limit)...)
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
	return out, rows.Err()
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
		FROM deliveries d
		JOIN flips f ON f.check_uid = d.check_uid AND f.n = d.flip_n
		JOIN checks c ON c.uid = d.check_uid
		WHERE d.namespace = ? AND `+dueWhere+` AND d.channel NOT IN (?`+strings.Repeat(", ?", places-1)+`)
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
