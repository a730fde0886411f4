package store

import (
	"context"
)

// The writer's queue: every write is an op, submitted by its caller and
// applied in batches by the writer goroutines (write, below; one on SQLite,
// dialect.writers on PostgreSQL), each batch in one transaction
// (commit.go), so that many pings share a transaction.

// op is one write. apply runs inside the writer's transaction and returns an
// error only when the database fails; what the write means to its caller
// (its result, or an error such as ErrNotPaused) the op keeps itself and
// hands over in finish, which runs once the transaction committed (nil) or
// failed.
type op interface {
	apply(t *txn) error
	finish(err error)
	// wait is closed when the op is finished.
	wait() <-chan struct{}
	// queuedBytes is what the op holds in memory while it waits (a body).
	queuedBytes() int64
}

// result is what every op hands back: the error that ended its transaction
// (or the op's own answer, such as ErrNotPaused), and when it is done.
type result struct {
	err  error
	done chan struct{}
}

func newResult() result { return result{done: make(chan struct{})} }

func (r *result) wait() <-chan struct{} { return r.done }

// finish records the transaction's error, keeping the op's own answer
// when the transaction succeeded, and releases the caller.
func (r *result) finish(err error) {
	if err != nil {
		r.err = err
	}
	close(r.done)
}

// queuedBytes: most writes hold no body.
func (r *result) queuedBytes() int64 { return 0 }

// submit queues o for the writer and waits for its transaction. Pings are
// refused at once when the queue is full (shed load, answer 503); other
// writes wait for room.
func (s *Store) submit(ctx context.Context, o op, shed bool) error {
	if b := o.queuedBytes(); b > 0 {
		if s.queuedBytes.Add(b) > s.opts.MaxQueuedBytes && shed {
			s.queuedBytes.Add(-b)
			return ErrOverloaded
		}
	}
	// Sends hold the read lock, so that none slips in after Close has
	// stopped the writer.
	s.closing.RLock()
	err := s.enqueue(ctx, o, shed)
	s.closing.RUnlock()
	if err != nil {
		s.queuedBytes.Add(-o.queuedBytes())
		return err
	}
	// Once queued, the write happens whether or not the caller still waits:
	// a client that gave up may still have its ping stored.
	select {
	case <-o.wait():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Store) enqueue(ctx context.Context, o op, shed bool) error {
	if s.closed {
		return ErrClosed
	}
	if err := s.Health(); err != nil {
		return err // the database is away: say so at once, not after a timeout
	}
	if shed {
		select {
		case s.ops <- o:
			return nil
		default:
			return ErrOverloaded
		}
	}
	select {
	case s.ops <- o:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// write is a writer: it takes whatever is queued, up to MaxBatch, and
// commits it in one transaction. While a commit waits for the disk, the
// next batch queues up, so the batch grows with the load and the cost of a
// commit (one fsync) is shared by everything in it. SQLite has one writer,
// PostgreSQL a few (dialect.writers).
func (s *Store) write() {
	for {
		var first op
		select {
		case first = <-s.ops:
		case <-s.stop:
			s.failQueued()
			return
		}
		batch := []op{first}
	fill:
		for len(batch) < s.opts.MaxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		s.commit(batch)
		for _, o := range batch {
			s.queuedBytes.Add(-o.queuedBytes())
		}
	}
}

func (s *Store) failQueued() {
	for {
		select {
		case o := <-s.ops:
			s.queuedBytes.Add(-o.queuedBytes())
			o.finish(ErrClosed)
		default:
			return
		}
	}
}
