package store

import (
	"context"
	"maps"
	"sync"
	"time"
)

// Ping bodies are the one thing an anonymous caller makes the store keep
// in bulk: every other row is bounded per check by a count (the ping log,
// the runs, the flips), and a body by its check's BodyBudget. A namespace
// bounds what its checks keep together with its Target.BodyLimit, so that
// one project's pings cannot fill the volume every project writes to.
//
// Past the limit a body is kept only when its own check pays for it: the
// check drops its oldest bodies to make room, as it does at its own
// budget, and the namespace's total does not grow. A check that holds no
// body to give up has the new one refused: the ping is recorded (the job
// reported, and a monitor that dropped the ping would call it down), its
// body is not, and the ping log marks it as dropped (BodyDropped) with
// Recorded.BodyRefused telling the caller. Other namespaces keep their
// bodies as before.

// bodyTotals are the body bytes each namespace's checks keep, as this
// process knows them: read from the checks table when the store opens,
// then moved by each commit's change to its rows' body_bytes. Another
// replica's commits (PostgreSQL) are seen when the totals are read again,
// every bodyRecount: until then a namespace may keep what its pings
// through each replica were allowed.
type bodyTotals struct {
	mu sync.Mutex
	ns map[string]int64
}

// bodyRecount is how often a PostgreSQL store reads the totals afresh.
const bodyRecount = time.Minute

func (b *bodyTotals) of(namespace string) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ns[namespace]
}

// add moves the namespaces' totals by the changes of one commit.
func (b *bodyTotals) add(changes map[string]int64) {
	if len(changes) == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ns == nil {
		b.ns = map[string]int64{}
	}
	for ns, d := range changes {
		if n := b.ns[ns] + d; n > 0 {
			b.ns[ns] = n
		} else {
			delete(b.ns, ns)
		}
	}
}

// BodyBytes are the ping body bytes each namespace's checks keep, as this
// process knows them (see bodyTotals), for the metrics.
func (s *Store) BodyBytes() map[string]int64 {
	s.bodies.mu.Lock()
	defer s.bodies.mu.Unlock()
	return maps.Clone(s.bodies.ns)
}

// countBodies reads every namespace's total from the checks table: one
// aggregate over its rows, off the writer.
func (s *Store) countBodies(ctx context.Context) error {
	rows, err := s.ro.QueryContext(ctx, `SELECT namespace, SUM(body_bytes) FROM checks WHERE body_bytes > 0 GROUP BY namespace`)
	if err != nil {
		return err
	}
	defer rows.Close()
	totals := map[string]int64{}
	for rows.Next() {
		var (
			ns string
			n  int64
		)
		if err := rows.Scan(&ns, &n); err != nil {
			return err
		}
		totals[ns] = n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.bodies.mu.Lock()
	s.bodies.ns = totals
	s.bodies.mu.Unlock()
	return nil
}

// recountBodies reads the totals again every bodyRecount until the store
// closes, so that a replica learns what the others' commits kept. A failed
// read keeps the totals it had.
func (s *Store) recountBodies() {
	tick := time.NewTicker(bodyRecount)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
			ctx, cancel := context.WithTimeout(context.Background(), txTimeout)
			_ = s.countBodies(ctx)
			cancel()
		}
	}
}

// admitBody decides whether the check keeps a new body of size bytes
// under its namespace's limit, and, when the check pays for it, lowers the
// check's budget for this transaction so that the trim drops as many of
// its oldest bodies. It is called before the body is added to the row.
func (t *txn) admitBody(r *row, limit, size int64) bool {
	if limit <= 0 {
		return true
	}
	ns := r.Namespace
	if t.s.bodies.of(ns)+t.bodyAdded[ns]+size <= limit {
		if t.bodyAdded == nil {
			t.bodyAdded = map[string]int64{}
		}
		t.bodyAdded[ns] += size
		return true
	}
	if r.bodyBytes < size {
		return false
	}
	// The check gives up as many bytes of its oldest bodies as it adds:
	// its budget in this transaction is what it held before its first
	// body past the limit.
	cap := min(t.s.opts.BodyBudget, r.bodyBytes)
	if r.bodyCap > 0 {
		cap = min(cap, r.bodyCap)
	}
	r.bodyCap = cap
	return true
}

// bodyBudget is the body bytes the check may keep at the end of the
// transaction: its BodyBudget, or less when it paid for a body past its
// namespace's limit.
func (t *txn) bodyBudget(r *row) int64 {
	if r.bodyCap > 0 {
		return min(r.bodyCap, t.s.opts.BodyBudget)
	}
	return t.s.opts.BodyBudget
}

// bodyChanges are what the transaction did to each namespace's total:
// every row's body_bytes against what it read, and the rows it forgot.
func (t *txn) bodyChanges() map[string]int64 {
	var out map[string]int64
	note := func(ns string, d int64) {
		if d == 0 {
			return
		}
		if out == nil {
			out = map[string]int64{}
		}
		out[ns] += d
	}
	for _, r := range t.rows {
		note(r.Namespace, r.bodyBytes-r.bodyRead)
	}
	for ns, d := range t.bodyForgotten {
		note(ns, -d)
	}
	return out
}
