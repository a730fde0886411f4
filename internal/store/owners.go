package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// UUIDHold is how long a UUID stays its project's after the project's last
// check with it is deleted: a GitOps tool that deletes and re-creates a
// Check, or a namespace restored from a backup, gets it back; another
// project gets it only after that.
const UUIDHold = 24 * time.Hour

// ownerMemo is how long UUIDOwner trusts an owner it read. An owner
// changes only after UUIDHold, so ten minutes' staleness costs nothing (a
// hold that passed is kept a little longer), and the ping path does not ask
// the database for every ping. That no project owns a UUID it trusts for
// unclaimedMemo: a new check's project claims it within moments, on any
// replica.
const (
	ownerMemo     = 10 * time.Minute
	unclaimedMemo = time.Minute
)

// ClaimUUID claims uuid for the check uid in namespace, at now, and returns
// the namespace that owns it afterwards: namespace when the UUID was free
// (never claimed, or released more than UUIDHold ago) or already
// namespace's, another when another project holds it. With create false, an
// unclaimed UUID is left unclaimed and "" is returned (the caller knows of
// an older claimant that has not claimed yet).
func (s *Store) ClaimUUID(ctx context.Context, uuid, namespace string, uid types.UID, now time.Time, create bool) (string, error) {
	o := &claimOp{uuid: uuid, namespace: namespace, uid: string(uid), now: Truncate(now), create: create, result: newResult()}
	if err := s.submit(ctx, o, false); err != nil {
		return "", err
	}
	if o.err == nil && o.owner != "" {
		s.owners.remember(uuid, o.owner, time.Now())
	}
	return o.owner, o.err
}

type claimOp struct {
	uuid, namespace, uid string
	now                  time.Time
	create               bool
	owner                string
	result
}

func (o *claimOp) apply(t *txn) error {
	lock := ""
	if t.s.d.lockRows {
		lock = " FOR UPDATE"
	}
	var ns, holder string
	var released sql.NullInt64
	err := t.queryRow(`SELECT namespace, check_uid, released FROM uuid_owners WHERE uuid = ?`+lock, o.uuid).Scan(&ns, &holder, &released)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if !o.create {
			o.owner = ""
			return nil
		}
		// ON CONFLICT: on PostgreSQL another replica's leader (one that
		// lost the lease a moment ago) may insert it first; the owner is
		// whoever's row is there after.
		if err := t.exec(`INSERT INTO uuid_owners (uuid, namespace, check_uid) VALUES (?, ?, ?) ON CONFLICT (uuid) DO NOTHING`,
			o.uuid, o.namespace, o.uid); err != nil {
			return err
		}
		return t.queryRow(`SELECT namespace FROM uuid_owners WHERE uuid = ?`, o.uuid).Scan(&o.owner)
	case err != nil:
		return fmt.Errorf("reading the owner of UUID %s: %w", o.uuid, err)
	}
	free := holdPassed(released, o.now)
	if ns != o.namespace && !free {
		o.owner = ns
		return nil
	}
	o.owner = o.namespace
	if ns == o.namespace && holder == o.uid && !released.Valid {
		return nil
	}
	return t.exec(`UPDATE uuid_owners SET namespace = ?, check_uid = ?, released = NULL WHERE uuid = ?`, o.namespace, o.uid, o.uuid)
}

// releaseUUIDs starts the hold of the UUID the check uid held (Forget).
func (t *txn) releaseUUIDs(now time.Time, uid string) error {
	return t.exec(`UPDATE uuid_owners SET check_uid = '', released = ? WHERE check_uid = ?`, now.UnixMicro(), uid)
}

// UUIDOwner is the namespace that owns uuid at now: "" when no project
// claims it (or its hold has passed). What it read is trusted for a
// minute, that no project claims it as well: a claim on this replica
// replaces it at once (ClaimUUID), another replica's within the minute, as
// any owner's change. Pings to a check whose project had not claimed it
// yet asked the database every time.
func (s *Store) UUIDOwner(ctx context.Context, uuid string, now time.Time) (string, error) {
	began := time.Now()
	if ns, ok := s.owners.recall(uuid, began); ok {
		return ns, nil
	}
	var ns string
	var released sql.NullInt64
	err := s.ownerStmt.QueryRowContext(ctx, uuid).Scan(&ns, &released)
	switch {
	case errors.Is(err, sql.ErrNoRows), err == nil && holdPassed(released, now):
		ns = ""
	case err != nil:
		return "", fmt.Errorf("reading the owner of UUID %s: %w", uuid, err)
	}
	s.owners.rememberRead(uuid, ns, began)
	return ns, nil
}

// ownerCache remembers UUID owners for ownerMemo (unclaimedMemo). It holds at most one
// entry per UUID pinged, and is emptied when it grows past maxOwnerMemo.
type ownerCache struct {
	mu      sync.RWMutex // read on every ping
	entries map[string]ownerEntry
}

type ownerEntry struct {
	namespace string
	at        time.Time
}

const maxOwnerMemo = 200_000

func (c *ownerCache) remember(uuid, ns string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxOwnerMemo {
		c.entries = map[string]ownerEntry{}
	}
	c.entries[uuid] = ownerEntry{namespace: ns, at: at}
}

// rememberRead remembers what a read that began at began found, unless
// something newer was remembered meanwhile: a claim on this replica that
// committed while the read ran (it found no owner) must not be undone by
// it, or for unclaimedMemo the UUID would answer as if no project owned it
// (a check of another project naming it, the oldest, taking its pings).
func (c *ownerCache) rememberRead(uuid, ns string, began time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= maxOwnerMemo {
		c.entries = map[string]ownerEntry{}
	}
	if e, ok := c.entries[uuid]; ok && e.at.After(began) {
		return
	}
	c.entries[uuid] = ownerEntry{namespace: ns, at: began}
}

func (c *ownerCache) recall(uuid string, now time.Time) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	e, ok := c.entries[uuid]
	memo := ownerMemo
	if e.namespace == "" {
		memo = unclaimedMemo
	}
	if !ok || now.Sub(e.at) > memo {
		return "", false
	}
	return e.namespace, true
}

// holdPassed reports whether an owner that stopped holding a UUID or key
// at released (NULL: it still holds it) has been without it for UUIDHold.
func holdPassed(released sql.NullInt64, now time.Time) bool {
	return released.Valid && released.Int64 <= now.Add(-UUIDHold).UnixMicro()
}
