package store

import (
	"context"
	"fmt"
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
// (without their flips). It is shared: read it only.
type Observed map[types.UID]*Check

// Of is what the store knows of one check: the zero Check (new) when it has
// not seen it.
func (o Observed) Of(uid types.UID) Check {
	if c := o[uid]; c != nil {
		return *c
	}
	return Check{}
}

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
			return nil, fmt.Errorf("reading the checks of %s: %w", namespace, err)
		}
		n := 0
		for rows.Next() {
			r, err := scanCheck(rows)
			if err != nil {
				_ = rows.Close()
				return nil, err
			}
			n++
			ns := m.byNS[r.Namespace]
			if !touched[r.Namespace] {
				ns = maps.Clone(ns)
				if ns == nil {
					ns = Observed{}
				}
				m.byNS[r.Namespace] = ns
				touched[r.Namespace] = true
			}
			ns[r.UID] = &r.Check
			m.cursor = Cursor{Version: r.Version, UID: r.UID}
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if n < mirrorPage {
			break
		}
	}
	return m.byNS[namespace], nil
}
