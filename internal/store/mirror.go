package store

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// mirror holds the checks table as the store last showed it to a reader,
// each namespace's rows by UID, and moves it along the changes feed (every
// write gives the rows it changes the transaction's change number, and
// change numbers follow commit order) before each read: a project's list,
// board and Prometheus scrape read only what changed since the last one,
// instead of every row of the project each time (10,000 rows took most of
// a list's time).
//
// A namespace's map is never changed once handed out: a read that finds
// changes builds the namespace a new one. Rows forgotten since the mirror
// was built stay until it is built again from the table, every
// mirrorRebuild; readers look rows up by the UIDs of checks that exist, so
// a forgotten row costs memory only.
type mirror struct {
	mu     sync.Mutex
	built  time.Time
	cursor Cursor
	byNS   map[string]Observed
}

// mirrorRebuild is how often the mirror is read from the table afresh.
const mirrorRebuild = 10 * time.Minute

// mirrorPage bounds the rows one read of the feed takes.
const mirrorPage = 10_000

// Observed is what the store knows of a namespace's checks, by UID
// (without their flips). It never changes once handed out: a read that
// finds one of the namespace's rows changed gets a new Observed, and two
// reads between which none changed get the same one (Same), so a reader
// can keep what it made of the last.
type Observed struct{ rows *observedRows }

type observedRows struct{ byUID map[types.UID]*Check }

// Of is what the store knows of one check: the zero Check (new) when it has
// not seen it.
func (o Observed) Of(uid types.UID) Check {
	if c := o.Row(uid); c != nil {
		return *c
	}
	return Check{}
}

// Row is the check's row, shared (read it only), or nil when the store has
// not seen the check.
func (o Observed) Row(uid types.UID) *Check {
	if o.rows == nil {
		return nil
	}
	return o.rows.byUID[uid]
}

// Len is how many checks the store has seen in the namespace.
func (o Observed) Len() int {
	if o.rows == nil {
		return 0
	}
	return len(o.rows.byUID)
}

// All yields every row, in no order.
func (o Observed) All() iter.Seq2[types.UID, *Check] {
	return func(yield func(types.UID, *Check) bool) {
		if o.rows == nil {
			return
		}
		for uid, c := range o.rows.byUID {
			if !yield(uid, c) {
				return
			}
		}
	}
}

// Same reports whether o and p are one read of the same rows.
func (o Observed) Same(p Observed) bool { return o.rows == p.rows }

// ChecksIn returns what the store knows of the checks of a namespace.
// (The rows are kept by pointer: a project of 10,000 checks looked each up
// in a map of their whole rows, most of a list's time after rendering.)
func (s *Store) ChecksIn(ctx context.Context, namespace string) (Observed, error) {
	m := &s.mirror
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.byNS == nil || time.Since(m.built) > mirrorRebuild {
		m.byNS, m.cursor, m.built = map[string]Observed{}, Cursor{}, time.Now()
	}
	touched := map[string]bool{}
	for {
		rows, err := s.query(ctx, `SELECT `+checkColumns+` FROM checks WHERE (version, uid) > (?, ?) ORDER BY version, uid LIMIT ?`,
			m.cursor.Version, string(m.cursor.UID), mirrorPage)
		if err != nil {
			return Observed{}, fmt.Errorf("reading the checks of %s: %w", namespace, err)
		}
		n := 0
		for rows.Next() {
			r, err := scanCheck(rows)
			if err != nil {
				_ = rows.Close()
				return Observed{}, err
			}
			n++
			ns := m.byNS[r.Namespace]
			if !touched[r.Namespace] {
				rows := &observedRows{byUID: map[types.UID]*Check{}}
				if ns.rows != nil {
					rows.byUID = maps.Clone(ns.rows.byUID)
				}
				ns = Observed{rows: rows}
				m.byNS[r.Namespace] = ns
				touched[r.Namespace] = true
			}
			ns.rows.byUID[r.UID] = &r.Check
			m.cursor = Cursor{Version: r.Version, UID: r.UID}
		}
		if err := rows.Close(); err != nil {
			return Observed{}, err
		}
		if err := rows.Err(); err != nil {
			return Observed{}, err
		}
		if n < mirrorPage {
			break
		}
	}
	return m.byNS[namespace], nil
}
