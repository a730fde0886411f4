package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// An early ping is one a starting manager acknowledged before its cache of
// Checks was ready: what a ping needs (its check's schedule, Channels and
// rules) is in the cache, and a fleet's cache takes seconds to fill, while
// the store is open at once. The store knows which check holds a UUID
// (uuid_owners), so a ping to it is kept whole here, durable before it is
// acknowledged, and recorded as an ordinary ping (dated when it came) once
// the cache is ready, in the transaction that deletes it from here.

// EarlyPing is a ping kept until the cache is ready.
type EarlyPing struct {
	// ID is the row's, chosen by RecordEarly.
	ID string
	// Check is the check that held the UUID when the ping came.
	Check     types.UID
	Namespace string
	// Ping is the ping as it came: At when it came, Kind as its URL said.
	Ping Ping
}

// The budgets of early pings, per namespace and in all: past one, a ping
// is refused with ErrOverloaded (its client tries again), so that one
// namespace's pings (or an anonymous flood at its UUIDs) cannot fill the
// store, nor the others' room, while the cache is read.
const (
	MaxEarlyPings                       = 200_000
	MaxEarlyPingsPerNamespace           = 10_000
	MaxEarlyBodyBytesPerNamespace       = 16 << 20
	MaxEarlyBodyBytes             int64 = 256 << 20
)

// earlyUse is what the early pings this store kept and has not recorded
// hold, per namespace and in all.
type earlyUse struct {
	mu          sync.Mutex
	pings       int
	bytes       int64
	byNamespace map[string]earlyCount
}

type earlyCount struct {
	pings int
	bytes int64
}

// take reserves room for one early ping of the namespace, false when a
// budget has none.
func (u *earlyUse) take(namespace string, bytes int64) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.byNamespace[namespace]
	if u.pings >= MaxEarlyPings || u.bytes+bytes > MaxEarlyBodyBytes ||
		c.pings >= MaxEarlyPingsPerNamespace || c.bytes+bytes > MaxEarlyBodyBytesPerNamespace {
		return false
	}
	if u.byNamespace == nil {
		u.byNamespace = map[string]earlyCount{}
	}
	u.pings, u.bytes = u.pings+1, u.bytes+bytes
	u.byNamespace[namespace] = earlyCount{pings: c.pings + 1, bytes: c.bytes + bytes}
	return true
}

// give returns the room of an early ping recorded, dropped or refused.
func (u *earlyUse) give(namespace string, bytes int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	c := u.byNamespace[namespace]
	if c.pings <= 0 {
		return // kept by an earlier run of the manager
	}
	u.pings, u.bytes = u.pings-1, u.bytes-bytes
	if c.pings == 1 {
		delete(u.byNamespace, namespace)
		return
	}
	u.byNamespace[namespace] = earlyCount{pings: c.pings - 1, bytes: c.bytes - bytes}
}

// Holder is the check that holds uuid as the store last knew it, and its
// namespace: ok is false when no check does (no project claims the UUID,
// or its last holder was forgotten).
func (s *Store) Holder(ctx context.Context, uuid string) (uid types.UID, namespace string, ok bool, err error) {
	err = s.queryRow(ctx, `SELECT check_uid, namespace FROM uuid_owners WHERE uuid = ? AND check_uid <> '' AND released IS NULL`, uuid).
		Scan(&uid, &namespace)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return "", "", false, nil
	case err != nil:
		return "", "", false, fmt.Errorf("reading the holder of UUID %s: %w", uuid, err)
	}
	return uid, namespace, true, nil
}

// RecordEarly keeps p until the cache is ready, and returns once that is
// durable. It shares the writer's transactions with the other writes.
func (s *Store) RecordEarly(ctx context.Context, p EarlyPing) error {
	size := int64(len(p.Ping.Body))
	if !s.early.take(p.Namespace, size) {
		return ErrOverloaded
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	p.ID = hex.EncodeToString(id[:])
	o := &earlyOp{ping: p, result: newResult()}
	err := s.submit(ctx, o, true)
	if err == nil {
		err = o.err
	}
	if err != nil {
		s.early.give(p.Namespace, size)
	}
	return err
}

type earlyOp struct {
	ping EarlyPing
	result
}

func (o *earlyOp) queuedBytes() int64 { return int64(len(o.ping.Ping.Body)) }

func (o *earlyOp) apply(t *txn) error {
	p := o.ping.Ping
	var exit, body any
	if p.ExitStatus != nil {
		exit = *p.ExitStatus
	}
	if len(p.Body) > 0 {
		body = p.Body
	}
	return t.exec(`INSERT INTO early_pings (id, check_uid, namespace, received, kind, rid, exit_status, scheme, remote_addr,
		method, ua, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, o.ping.ID, string(o.ping.Check), o.ping.Namespace,
		Truncate(p.At).UnixMicro(), string(p.Kind), p.RID, exit, p.Scheme, p.RemoteAddr, p.Method, p.UA, body)
}

// EarlyPings are the oldest pings kept until the cache was ready, at most
// limit of them, in the order they came.
func (s *Store) EarlyPings(ctx context.Context, limit int) ([]EarlyPing, error) {
	rows, err := s.query(ctx, `SELECT id, check_uid, namespace, received, kind, rid, exit_status, scheme, remote_addr, method,
		ua, body FROM early_pings ORDER BY received, id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("reading early pings: %w", err)
	}
	defer rows.Close()
	var out []EarlyPing
	for rows.Next() {
		var e EarlyPing
		var received int64
		var kind string
		var exit sql.NullInt64
		if err := rows.Scan(&e.ID, &e.Check, &e.Namespace, &received, &kind, &e.Ping.RID, &exit, &e.Ping.Scheme,
			&e.Ping.RemoteAddr, &e.Ping.Method, &e.Ping.UA, &e.Ping.Body); err != nil {
			return nil, fmt.Errorf("reading early pings: %w", err)
		}
		e.Ping.At, e.Ping.Kind = time.UnixMicro(received).UTC(), monitor.PingKind(kind)
		if exit.Valid {
			status := int(exit.Int64)
			e.Ping.ExitStatus = &status
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// DropEarly deletes early pings that will not be recorded (their check is
// gone).
func (s *Store) DropEarly(ctx context.Context, pings ...EarlyPing) error {
	err := s.shortTx(ctx, func(tx *sql.Tx) error {
		for _, e := range pings {
			if _, err := tx.ExecContext(ctx, s.d.sql(`DELETE FROM early_pings WHERE id = ?`), e.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("dropping early pings: %w", err)
	}
	for _, e := range pings {
		s.early.give(e.Namespace, int64(len(e.Ping.Body)))
	}
	return nil
}
