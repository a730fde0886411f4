package store

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ProjectLock is held while one check is created in a project: creations
// in a project, through the API or ?create=1, on any replica, happen one at
// a time, so the check limit counts each one's predecessor. It is a lock,
// not observed state: what it records (the last creation's
// resourceVersion) only tells the next holder how far its cache must have
// caught up before it counts.
type ProjectLock struct {
	// LastCreate is the resourceVersion of the last Check created under
	// this project's lock, "" when unknown (none since the store opened, on
	// SQLite, where this process is the only one).
	LastCreate string
	// Local: this process is the only one that creates checks in the
	// project (SQLite), so the lock is its own turns alone, and a holder
	// may count what this process is creating instead of holding the lock
	// until its check exists.
	Local bool

	release func(created string) error
}

// Release releases the lock, recording the resourceVersion of the Check
// created under it ("" for none). Release it on every path.
func (l *ProjectLock) Release(created string) error { return l.release(created) }

// LockProject takes namespace's creation lock, waiting for another
// holder (on this replica or another) until ctx ends.
//
// The turn is taken in this process first, and on PostgreSQL at most
// maxRowLocks of them then hold a connection for the project's row lock:
// waiters must not take the pool's few connections, which every ping
// needs, however many creates a tenant sends at once.
func (s *Store) LockProject(ctx context.Context, namespace string) (*ProjectLock, error) {
	local, err := s.projects.lock(ctx, namespace)
	if err != nil || !s.d.lockRows {
		if local != nil {
			local.Local = true
		}
		return local, err
	}
	select {
	case s.rowLocks <- struct{}{}:
	case <-ctx.Done():
		_ = local.Release("")
		return nil, fmt.Errorf("locking project %s: %w", namespace, ctx.Err())
	}
	row, err := s.lockProjectRow(ctx, namespace)
	if err != nil {
		<-s.rowLocks
		_ = local.Release("")
		return nil, err
	}
	return &ProjectLock{LastCreate: row.LastCreate, release: func(created string) error {
		defer func() { _ = local.Release(created) }()
		defer func() { <-s.rowLocks }()
		return row.Release(created)
	}}, nil
}

// maxRowLocks bounds the connections a replica holds for project locks.
const maxRowLocks = 2

// lockProjectRow holds the project's row in project_creates locked in a
// transaction of its own connection, outside the writer: the lock may be
// held for an API server round trip, which the writer must not wait for.
// A replica that dies holding it releases it with its connection.
func (s *Store) lockProjectRow(ctx context.Context, namespace string) (*ProjectLock, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("locking project %s: %w", namespace, err)
	}
	// The transaction is the lock: it must end at Release, not when the
	// request's context does (database/sql rolls a transaction back when
	// the context it began with ends). Only the wait for the row is the
	// request's.
	tx, err := conn.BeginTx(context.WithoutCancel(ctx), nil)
	if err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("locking project %s: %w", namespace, err)
	}
	fail := func(err error) (*ProjectLock, error) {
		_ = tx.Rollback()
		_ = conn.Close()
		return nil, fmt.Errorf("locking project %s: %w", namespace, err)
	}
	if _, err := tx.ExecContext(ctx, s.d.sql(`INSERT INTO project_creates (namespace) VALUES (?) ON CONFLICT (namespace) DO NOTHING`), namespace); err != nil {
		return fail(err)
	}
	l := &ProjectLock{}
	if err := tx.QueryRowContext(ctx, s.d.sql(`SELECT resource_version FROM project_creates WHERE namespace = ? FOR UPDATE`), namespace).Scan(&l.LastCreate); err != nil {
		return fail(err)
	}
	l.release = func(created string) error {
		defer conn.Close()
		if created != "" {
			// The record is kept even if the client that created the
			// check has gone.
			if _, err := tx.ExecContext(context.WithoutCancel(ctx), s.d.sql(`UPDATE project_creates SET resource_version = ? WHERE namespace = ?`), created, namespace); err != nil {
				_ = tx.Rollback()
				return err
			}
		}
		return tx.Commit()
	}
	return l, nil
}

// projectLocks are the turns of this process, one per namespace: on
// SQLite, the only process that writes the store, they are the whole lock.
type projectLocks struct {
	mu    sync.Mutex
	locks map[string]chan struct{} // holds a token while free
	last  map[string]string
}

func (p *projectLocks) lock(ctx context.Context, namespace string) (*ProjectLock, error) {
	p.mu.Lock()
	if p.locks == nil {
		p.locks, p.last = map[string]chan struct{}{}, map[string]string{}
	}
	ch := p.locks[namespace]
	if ch == nil {
		ch = make(chan struct{}, 1)
		ch <- struct{}{}
		p.locks[namespace] = ch
	}
	p.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil, fmt.Errorf("locking project %s: %w", namespace, errors.Join(ctx.Err(), context.Cause(ctx)))
	}
	p.mu.Lock()
	l := &ProjectLock{LastCreate: p.last[namespace]}
	p.mu.Unlock()
	var once sync.Once
	l.release = func(created string) error {
		once.Do(func() {
			if created != "" {
				p.mu.Lock()
				p.last[namespace] = created
				p.mu.Unlock()
			}
			ch <- struct{}{}
		})
		return nil
	}
	return l, nil
}
