package store

import (
	"context"
	"fmt"
)

// The outbox names a Channel by a number, channels.id, made the first
// time a delivery is queued for the Channel (flips.go, queue) and kept
// while any delivery names it: a delivery row holds 4 bytes in its table
// and in each index that keys it, not the Channel's name (migration 23).
// Callers never see the numbers: the store takes and returns names.

// channelID is the number of the Channel named by the statement's next
// argument, in the namespace of the delivery it is compared with (the
// deliveries table, not aliased).
const channelID = `(SELECT id FROM channels WHERE namespace = deliveries.namespace AND name = ?)`

// sweepChunk bounds the numbers one sweep looks at: the sweep runs each
// minute in the store's writer, and a pass over a fleet's every Channel
// at once would hold pings behind it.
const sweepChunk = 1000

// sweepChannels deletes, among the next sweepChunk Channel numbers after
// the last sweep's, those no delivery names any more (their deliveries
// were pruned, trimmed, or forgotten with their check), and moves on: a
// Channel deleted or renamed costs its row until the sweep comes round,
// however many there were. It runs with the minute's prune.
func (s *Store) sweepChannels(ctx context.Context) error {
	o := &sweepOp{after: s.channelSweep.Load(), result: newResult()}
	if err := s.submit(ctx, o, false); err != nil {
		return err
	}
	if o.err != nil {
		return o.err
	}
	s.channelSweep.Store(o.last)
	return nil
}

type sweepOp struct {
	after int64 // the last number the previous sweep looked at
	last  int64 // the last number this one looked at; 0: it reached the end
	result
}

func (o *sweepOp) apply(t *txn) error {
	if t.s.d.lockRows {
		// A writer of another replica may have made sure of a number and
		// not yet inserted the delivery that names it: the lock waits for
		// every transaction that queued deliveries to end, and keeps new
		// ones from starting theirs until this one ends (the writers'
		// inserts into channels take a lock that conflicts with it).
		if err := t.exec(`LOCK TABLE channels IN EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("sweeping Channel numbers: %w", err)
		}
	}
	span := `SELECT id FROM channels WHERE id > ? ORDER BY id LIMIT ?`
	o.last = 0
	err := t.ask(`SELECT MAX(id) FROM (`+span+`) span`, func(r rows) error {
		for r.Next() {
			var last *int64
			if err := r.Scan(&last); err != nil {
				return err
			}
			if last != nil {
				o.last = *last
			}
		}
		return r.Err()
	}, o.after, sweepChunk)
	if err != nil {
		return fmt.Errorf("sweeping Channel numbers: %w", err)
	}
	if err := t.exec(`DELETE FROM channels WHERE id IN (`+span+`) AND NOT EXISTS (
		SELECT 1 FROM deliveries d WHERE d.channel_id = channels.id)`, o.after, sweepChunk); err != nil {
		return fmt.Errorf("sweeping Channel numbers: %w", err)
	}
	return nil
}
