package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A batch's transaction: run, and when it fails while the database
// answers, each write tried again alone; what it committed is handed to
// the store's followers.

// commit runs a batch in one transaction. If the transaction fails while
// the database answers, each write is tried again in a transaction of its
// own, so that one bad write fails alone; if the database does not answer,
// every write of the batch fails with ErrUnavailable, and so do new ones
// until it answers again.
func (s *Store) commit(batch []op) {
	c, err := s.runTxAgain(batch)
	// A full volume fails every write alike: trying them one by one would
	// only fail each again.
	if full := err != nil && isFull(err); full || err == nil {
		s.noteFull(full, err)
		if full {
			err = fmt.Errorf("%w: %w", ErrFull, err)
			for _, o := range batch {
				o.finish(err)
			}
			return
		}
	}
	// A commit that may have happened (a reply lost, a standby that
	// stalled) is not tried again either: that could store a ping twice.
	// Each caller hears that it failed, as with a crash before the answer.
	if err != nil && (!s.reachable() || errors.Is(err, errCommitUnknown)) {
		err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		for _, o := range batch {
			o.finish(err)
		}
		return
	}
	if err != nil && len(batch) > 1 {
		for _, o := range batch {
			c1, err := s.runTxAgain([]op{o})
			if full := err != nil && isFull(err); full || err == nil {
				s.noteFull(full, err)
				if full {
					err = fmt.Errorf("%w: %w", ErrFull, err)
				}
			}
			o.finish(err)
			if err == nil && s.opts.OnCommit != nil {
				s.opts.OnCommit(c1)
			}
		}
		return
	}
	for _, o := range batch {
		o.finish(err)
	}
	if err == nil && s.opts.OnCommit != nil {
		s.opts.OnCommit(c)
	}
}

// conflictRetries is how many times a transaction that PostgreSQL rolled
// back for a deadlock or a serialization failure is tried again.
const conflictRetries = 3

// runTxAgain is runTx, tried again when PostgreSQL rolled the transaction
// back to break a deadlock between replicas (two adding the same new
// checks in different batches) or a serialization failure: nothing of it
// was committed, and the next try usually finds the rows there.
func (s *Store) runTxAgain(batch []op) (Committed, error) {
	for try := 0; ; try++ {
		c, err := s.runTx(batch)
		if err == nil || try == conflictRetries || !conflicted(err) {
			return c, err
		}
	}
}

// errCommitUnknown: the commit failed, and whether it happened is unknown.
var errCommitUnknown = errors.New("the store's commit did not answer")

// txTimeout bounds a transaction: a connection that stops answering (a
// database behind a dead network path) fails the batch instead of holding
// the writer.
const txTimeout = 15 * time.Second

func (s *Store) runTx(batch []op) (Committed, error) {
	ctx, cancel := context.WithTimeout(context.Background(), txTimeout)
	defer cancel()
	if s.d.pipelined {
		return s.runPipelined(ctx, batch)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Committed{}, fmt.Errorf("beginning a store transaction: %w", err)
	}
	t := &txn{s: s, tx: tx, ctx: ctx, rows: map[types.UID]*row{}}
	if err := t.run(batch); err != nil {
		_ = tx.Rollback()
		return Committed{}, err
	}
	if err := tx.Commit(); err != nil {
		return Committed{}, fmt.Errorf("%w: %w", errCommitUnknown, err)
	}
	return s.committed(t, batch), nil
}

// run is the transaction up to its commit: it reads (or locks) the rows
// of the checks the batch changes, applies each write, and writes back
// the rows they changed.
func (t *txn) run(batch []op) error {
	read := t.preload
	if t.s.d.lockRows {
		read = t.lockRows
	}
	if err := read(batch); err != nil {
		return err
	}
	for _, o := range batch {
		if err := o.apply(t); err != nil {
			return err
		}
	}
	if err := t.trim(); err != nil {
		return err
	}
	return t.flush()
}

// committed counts a transaction that committed and says what it did.
func (s *Store) committed(t *txn, batch []op) Committed {
	s.commits.Add(1)
	s.writes.Add(int64(len(batch)))
	s.bodies.add(t.bodyChanges())
	return Committed{At: time.Now(), Writes: len(batch), Flips: t.flips, Notices: t.nNotices}
}

// txn is one transaction of the writer. It keeps the check rows it read, so
// that several writes for one check in a batch read it once and write it
