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
// a cache is ready, in the transaction that deletes it from here.
//
// On a store several replicas share, each early ping names the replica
// that took it: a starting replica records its own once its cache is
// ready, and the leader records the others' as soon as it sees them (a
// replica may die holding some, or take them while others serve). Two
// replicas may try to record the same one: the one whose transaction
// deletes it records it, and the other's records nothing. An early ping
// recorded after a newer ping of its check (taken by a replica that was
// starting while another served) is logged, and changes nothing: the
// check's state already says what came after it.

// EarlyPing is a ping kept until a cache is ready.
type EarlyPing struct {
	// ID is the row's, chosen by RecordEarly.
	ID string
	// Check is the check that held the UUID when the ping came.
	Check     types.UID
	Namespace string
	// Ping is the ping as it came: At when it came, Kind as its URL said.
	Ping Ping
	// Replica is the store that took it (Store.Replica; "" for one taken
	// before replicas were named).
	Replica string
}

// newReplicaID names a store among the replicas sharing it.
func newReplicaID() string {
	var id [8]byte
	_, _ = rand.Read(id[:])
	return hex.EncodeToString(id[:])
}

// Replica is this store's name among the replicas sharing it, chosen when
// it opened.
func (s *Store) Replica() string { return s.replica }

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
// hold, per namespace and in all. On a shared store another replica may
// record them (the leader), which this one does not see: a refusal first
// counts them again from the table, at most once per recountEvery.
type earlyUse struct {
	mu          sync.Mutex
	pings       int
	bytes       int64
	byNamespace map[string]earlyCount
	recounted   time.Time
}

// recountEvery bounds how often a refused early ping counts this
// replica's early pings again (a flood's refusals cost one read a second).
const recountEvery = time.Second

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

// recount sets the use to this replica's early pings in the table, unless
// it did less than recountEvery ago; it reports whether it counted.
func (s *Store) recount(ctx context.Context) (bool, error) {
	u := &s.early
	u.mu.Lock()
	if time.Since(u.recounted) < recountEvery {
		u.mu.Unlock()
		return false, nil
	}
	u.recounted = time.Now()
	u.mu.Unlock()
	rows, err := s.query(ctx, `SELECT namespace, count(*), coalesce(sum(length(body)), 0) FROM early_pings
		WHERE replica = ? GROUP BY namespace`, s.replica)
	if err != nil {
		return false, fmt.Errorf("counting early pings: %w", err)
	}
	defer rows.Close()
	counts := map[string]earlyCount{}
	var pings int
	var bytes int64
	for rows.Next() {
		var ns string
		var c earlyCount
		if err := rows.Scan(&ns, &c.pings, &c.bytes); err != nil {
			return false, fmt.Errorf("counting early pings: %w", err)
		}
		counts[ns] = c
		pings, bytes = pings+c.pings, bytes+c.bytes
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("counting early pings: %w", err)
	}
	u.mu.Lock()
	u.pings, u.bytes, u.byNamespace = pings, bytes, counts
	u.mu.Unlock()
	return true, nil
}

// RecordEarly keeps p until a cache is ready, and returns once that is
// durable. It shares the writer's transactions with the other writes.
func (s *Store) RecordEarly(ctx context.Context, p EarlyPing) error {
	size := int64(len(p.Ping.Body))
	if !s.early.take(p.Namespace, size) {
		// On a shared store, the leader may have recorded some.
		if !s.Shared() {
			return ErrOverloaded
		}
		if counted, err := s.recount(ctx); err != nil || !counted || !s.early.take(p.Namespace, size) {
			return ErrOverloaded
		}
	}
	var id [12]byte
	_, _ = rand.Read(id[:])
	p.ID, p.Replica = hex.EncodeToString(id[:]), s.replica
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
		method, ua, body, replica) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, o.ping.ID, string(o.ping.Check), o.ping.Namespace,
		Truncate(p.At).UnixMicro(), string(p.Kind), p.RID, exit, p.Scheme, p.RemoteAddr, p.Method, p.UA, body, o.ping.Replica)
}

// EarlyScope says whose early pings EarlyPings reads.
type EarlyScope int

const (
	// EveryReplica's: the embedded store's, whose one manager took them
	// all (some in an earlier run).
	EveryReplica EarlyScope = iota
	// ThisReplica's: the ones this store took.
	ThisReplica
	// OtherReplicas': the ones this store did not take.
	OtherReplicas
)

// EarlyQuery says which early pings EarlyPings reads.
type EarlyQuery struct {
	Scope EarlyScope
	// After is the last one read before (the zero EarlyPing: none): the
	// answer holds those that came after it, in the order they came.
	After EarlyPing
	// Limit is how many it reads at most.
	Limit int
}

// EarlyPings are the oldest early pings q names, in the order they came.
func (s *Store) EarlyPings(ctx context.Context, q EarlyQuery) ([]EarlyPing, error) {
	where, args := `(received, id) > (?, ?)`, []any{Truncate(q.After.Ping.At).UnixMicro(), q.After.ID}
	if q.After.ID == "" {
		where, args = `TRUE`, nil
	}
	switch q.Scope {
	case ThisReplica:
		where, args = where+` AND replica = ?`, append(args, s.replica)
	case OtherReplicas:
		where, args = where+` AND replica <> ?`, append(args, s.replica)
	}
	rows, err := s.query(ctx, `SELECT id, check_uid, namespace, received, kind, rid, exit_status, scheme, remote_addr, method,
		ua, body, replica FROM early_pings WHERE `+where+` ORDER BY received, id LIMIT ?`, append(args, q.Limit)...)
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
			&e.Ping.RemoteAddr, &e.Ping.Method, &e.Ping.UA, &e.Ping.Body, &e.Replica); err != nil {
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
		if e.Replica == s.replica {
			s.early.give(e.Namespace, int64(len(e.Ping.Body)))
		}
	}
	return nil
}

// wholeForgotten is how long a replica's last word that it was whole is
// kept: far longer than any wait for it.
const wholeForgotten = time.Hour

// SayWhole records that this replica has read every Check, now by the
// database's clock (replicas' clocks may differ), and forgets the words of
// replicas gone long ago.
func (s *Store) SayWhole(ctx context.Context) error {
	err := s.shortTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.d.sql(`INSERT INTO whole_replicas (id, seen) VALUES (?, `+s.d.nowMicros+`)
			ON CONFLICT (id) DO UPDATE SET seen = excluded.seen`), s.replica); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.d.sql(`DELETE FROM whole_replicas WHERE seen < `+s.d.nowMicros+` - ?`),
			wholeForgotten.Microseconds())
		return err
	})
	if err != nil {
		return fmt.Errorf("recording that this replica has read every Check: %w", err)
	}
	return nil
}

// WholeReplica reports whether another replica said it had read every
// Check within the last while, by the database's clock.
func (s *Store) WholeReplica(ctx context.Context, within time.Duration) (bool, error) {
	var one int
	err := s.queryRow(ctx, `SELECT 1 FROM whole_replicas WHERE id <> ? AND seen >= `+s.d.nowMicros+` - ? LIMIT 1`,
		s.replica, within.Microseconds()).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading whether another replica serves: %w", err)
	}
	return true, nil
}

// TakeBackWhole forgets that this replica said it had read every Check:
// it stops.
func (s *Store) TakeBackWhole(ctx context.Context) error {
	err := s.shortTx(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, s.d.sql(`DELETE FROM whole_replicas WHERE id = ?`), s.replica)
		return err
	})
	if err != nil {
		return fmt.Errorf("forgetting that this replica had read every Check: %w", err)
	}
	return nil
}
