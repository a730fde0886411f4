package store

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// mirror holds each namespace's rows of the checks table as the store last
// showed them to a reader, by UID, and moves them along the changes feed
// (every write gives the rows it changes the transaction's change number,
// and change numbers follow commit order): a project's list, board and
// Prometheus scrape read only what changed since the last one, instead of
// every row of the project each time (10,000 rows took most of a list's
// time).
//
// A read costs what changed in the cluster since the last read, plus its
// own namespace's rows when they changed, never the other namespaces': the
// feed's rows are set aside for their namespace, and folded into it when
// that namespace is read. A namespace is read whole from the table when it
// is first asked for, and again every mirrorRebuild, which drops the rows
// of checks forgotten meanwhile; readers look rows up by the UIDs of checks
// that exist, so until then a forgotten row costs memory only.
//
// A namespace's map is never changed once handed out: a read that finds
// changes builds the namespace a new one.
type mirror struct {
	mu sync.Mutex
	// cursor is how far the feed has been read; nil until the first read,
	// which starts it at the table's newest change.
	cursor *Cursor
	byNS   map[string]*mirrored
}

// mirrored is one namespace in the mirror.
type mirrored struct {
	handed  Observed             // what the last read handed out
	changed map[types.UID]*Check // rows the feed changed since
	read    time.Time            // when the namespace was read whole
}

// mirrorRebuild is how often a namespace is read from the table afresh.
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
	if err := s.followFeed(ctx); err != nil {
		return Observed{}, fmt.Errorf("reading the checks of %s: %w", namespace, err)
	}
	e := m.byNS[namespace]
	if e == nil || time.Since(e.read) > mirrorRebuild {
		rows, err := s.namespaceRows(ctx, namespace)
		if err != nil {
			return Observed{}, fmt.Errorf("reading the checks of %s: %w", namespace, err)
		}
		e = &mirrored{handed: Observed{rows: rows}, read: time.Now()}
		m.byNS[namespace] = e
	}
	if len(e.changed) > 0 {
		byUID := maps.Clone(e.handed.rows.byUID)
		maps.Copy(byUID, e.changed)
		e.handed, e.changed = Observed{rows: &observedRows{byUID: byUID}}, nil
	}
	return e.handed, nil
}

// followFeed reads the changes feed since the mirror's cursor and sets each
// changed row aside for its namespace; a namespace not yet mirrored reads
// its rows whole when it is first asked for. Called with the mirror locked.
func (s *Store) followFeed(ctx context.Context) error {
	m := &s.mirror
	if m.cursor == nil {
		// Start at the newest change: every namespace is read whole when
		// first asked for, so nothing before it is needed.
		var last sql.NullInt64
		if err := s.queryRow(ctx, `SELECT MAX(version) FROM checks`).Scan(&last); err != nil {
			return err
		}
		m.cursor, m.byNS = &Cursor{Version: last.Int64}, map[string]*mirrored{}
	}
	for {
		rows, err := s.query(ctx, `SELECT `+checkColumns+` FROM checks WHERE (version, uid) > (?, ?) ORDER BY version, uid LIMIT ?`,
			m.cursor.Version, string(m.cursor.UID), mirrorPage)
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			r, err := scanCheck(rows)
			if err != nil {
				_ = rows.Close()
				return err
			}
			n++
			m.cursor = &Cursor{Version: r.Version, UID: r.UID}
			e := m.byNS[r.Namespace]
			if e == nil {
				continue
			}
			if e.changed == nil {
				e.changed = map[types.UID]*Check{}
			}
			e.changed[r.UID] = &r.Check
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if n < mirrorPage {
			return nil
		}
	}
}

// namespaceRows reads every row of a namespace.
func (s *Store) namespaceRows(ctx context.Context, namespace string) (*observedRows, error) {
	rows, err := s.query(ctx, `SELECT `+checkColumns+` FROM checks WHERE namespace = ?`, namespace)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := &observedRows{byUID: map[types.UID]*Check{}}
	for rows.Next() {
		r, err := scanCheck(rows)
		if err != nil {
			return nil, err
		}
		out.byUID[r.UID] = &r.Check
	}
	return out, rows.Err()
}
