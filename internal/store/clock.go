package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Vigil's own absence. A deadline that falls while no manager runs (a
// restart, an upgrade, a failover with no leader for a while, a store that
// does not answer) is not the job's fault, and must not page anyone at the
// return: the store knows when Vigil was away, and every observation of a
// check applies it (monitor.Config.Absent), so a check whose next failed
// run fell in the absence gets a fresh grace from the return.
//
// How the store knows:
//   - The leader's deadline loop calls Alive before each pass. It writes
//     a heartbeat (clock.alive) every heartbeatEvery.
//   - An embedded store opened over a heartbeat was away since it: every
//     restart is an absence. Until the loop's first pass says when Vigil
//     is back, observations (pings that arrive first) take their own
//     instant as the return.
//   - On PostgreSQL other replicas may serve pings while the leader
//     changes, so only a heartbeat older than AbsentAfter (no leader for
//     that long) is an absence, when a replica opens the store or a new
//     leader first runs.
//   - While running, an absence is a store that failed the heartbeat's
//     write for longer than AbsentAfter. A clock that jumps (a fake clock
//     in a test, a machine woken from sleep) is not one by itself.
//   - The absence's start stays in clock.away_from until the loop has
//     observed every check due by the return (Swept): a manager that stops
//     in between finds it again.

// AbsentAfter is how long the store may fail the deadline loop, or
// (PostgreSQL) the cluster be without a leader, before that time is
// Vigil's absence.
const AbsentAfter = 15 * time.Second

// heartbeatEvery is how often the deadline loop's heartbeat is written.
const heartbeatEvery = 5 * time.Second

// returnPoll is how often a replica that opened the store during an
// absence reads the clock, to learn that a leader has applied it.
const returnPoll = 2 * time.Second

// Absence is a span during which Vigil was away.
type Absence struct {
	From time.Time
	// Until is when Vigil came back; zero while no deadline loop has run
	// since (an observation then takes its own instant).
	Until time.Time
}

// until is the absence's end as an observation at at sees it.
func (a *Absence) until(at time.Time) time.Time {
	if a.Until.IsZero() {
		return at
	}
	return a.Until
}

// clock is the store's account of Vigil's presence.
type clock struct {
	// away is the absence observations apply (nil: none). Read by the
	// writer; set by Open, Alive and Swept, and by watchReturn.
	away atomic.Pointer[Absence]

	// The loop's own state, under mu.
	mu      sync.Mutex
	started bool      // Alive has run in this process
	lastOK  time.Time // the last heartbeat written
	failed  bool      // the heartbeat's write failed since lastOK
}

// Away is the absence the store applies, if any.
func (s *Store) Away() (Absence, bool) {
	if a := s.clock.away.Load(); a != nil {
		return *a, true
	}
	return Absence{}, false
}

// absent applies the absence, if any, to a check's facts before they are
// observed at at.
func (s *Store) absent(cfg monitor.Config, f monitor.Facts, at time.Time) monitor.Facts {
	a := s.clock.away.Load()
	if a == nil || at.Before(a.From) {
		return f
	}
	return cfg.Absent(f, a.From, a.until(at))
}

// readClock reads the heartbeat and an absence not yet applied; found is
// false for a store no loop has run on.
func (s *Store) readClock(ctx context.Context) (alive, awayFrom time.Time, found bool, err error) {
	var a, from sql.NullInt64
	err = s.queryRow(ctx, `SELECT alive, away_from FROM clock WHERE id = 1`).Scan(&a, &from)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, time.Time{}, false, fmt.Errorf("reading Vigil's heartbeat from the store: %w", err)
	}
	return fromMicros(a), fromMicros(from), true, nil
}

// writeClock writes the heartbeat alive and the start of the absence not
// yet applied (none when zero).
func (s *Store) writeClock(ctx context.Context, alive, awayFrom time.Time) error {
	return s.shortTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.d.sql(`INSERT INTO clock (id, alive, away_from) VALUES (1, ?, ?)
			ON CONFLICT (id) DO UPDATE SET alive = excluded.alive, away_from = excluded.away_from`),
			alive.UnixMicro(), micros(awayFrom))
		return err
	})
}

// absentSince returns when an absence began, as the clock row tells it to
// a store opened, or a leader starting, at now: an absence not yet
// applied, or a heartbeat that stopped (on PostgreSQL, longer ago than
// AbsentAfter).
func (s *Store) absentSince(alive, awayFrom, now time.Time) (time.Time, bool) {
	switch {
	case !awayFrom.IsZero():
		return awayFrom, true
	case !s.d.lockRows || now.Sub(alive) > AbsentAfter:
		return alive, true
	}
	return time.Time{}, false
}

// openClock reads the clock when the store opens, and takes an absence it
// shows as still under way: the observations before the loop's first pass
// apply it.
func (s *Store) openClock(ctx context.Context) error {
	alive, awayFrom, found, err := s.readClock(ctx)
	if err != nil || !found {
		return err
	}
	from, away := s.absentSince(alive, awayFrom, s.now())
	if !away {
		return nil
	}
	a := &Absence{From: from}
	s.clock.away.Store(a)
	if s.d.lockRows {
		go s.watchReturn(a, alive)
	}
	return nil
}

// watchReturn drops the absence a replica opened under once a leader has
// applied it: the heartbeat moved past alive and no absence waits. A
// replica whose own loop leads drops it in Swept instead.
func (s *Store) watchReturn(a *Absence, alive time.Time) {
	tick := time.NewTicker(returnPoll)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		if s.clock.away.Load() != a {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), txTimeout)
		now, awayFrom, found, err := s.readClock(ctx)
		cancel()
		if err == nil && found && now.After(alive) && awayFrom.IsZero() {
			s.clock.away.CompareAndSwap(a, nil)
			return
		}
	}
}

// Alive is the deadline loop's heartbeat, before each pass at now. The
// first in this process ends an absence the store was opened under (or,
// on PostgreSQL, finds the time without a leader); later ones find a store
// that failed the heartbeat for longer than AbsentAfter. It writes the
// heartbeat every heartbeatEvery, and at once when an absence begins.
func (s *Store) Alive(ctx context.Context, now time.Time) error {
	c := &s.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	now = Truncate(now)
	a, changed := c.away.Load(), false
	first := !c.started
	switch {
	case first:
		if a == nil {
			alive, awayFrom, found, err := s.readClock(ctx)
			if err != nil {
				return err
			}
			if from, away := s.absentSince(alive, awayFrom, now); found && away {
				a = &Absence{From: from}
			}
		}
		if a != nil && a.Until.IsZero() {
			a, changed = &Absence{From: a.From, Until: now}, true
		}
		c.started = true
	case c.failed && now.Sub(c.lastOK) > AbsentAfter:
		from := c.lastOK
		if a != nil && a.From.Before(from) {
			from = a.From // the one before has not been applied yet
		}
		a, changed = &Absence{From: from, Until: now}, true
	}
	if changed {
		c.away.Store(a)
	}
	if !first && !changed && !c.failed && now.Sub(c.lastOK) < heartbeatEvery && !now.Before(c.lastOK) {
		return nil
	}
	var awayFrom time.Time
	if a != nil {
		awayFrom = a.From
	}
	err := s.writeClock(ctx, now, awayFrom)
	if err != nil && first {
		c.lastOK = now // the store's failure is timed from the first pass
	}
	return c.wrote(err, now)
}

// wrote records how the heartbeat's write at now went.
func (c *clock) wrote(err error, now time.Time) error {
	if err != nil {
		c.failed = true
		return fmt.Errorf("writing Vigil's heartbeat to the store: %w", err)
	}
	c.lastOK, c.failed = now, false
	return nil
}

// Swept tells the store that the deadline loop has observed, at now, every
// check due by then: an absence that ended by now has been applied to
// every check it reprieves, and is forgotten.
func (s *Store) Swept(ctx context.Context, now time.Time) error {
	c := &s.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	a := c.away.Load()
	if a == nil || a.Until.IsZero() || a.Until.After(now) {
		return nil
	}
	now = Truncate(now)
	if err := c.wrote(s.writeClock(ctx, now, time.Time{}), now); err != nil {
		return err
	}
	c.away.CompareAndSwap(a, nil)
	return nil
}
