package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// SyncKeys records which project keys the Secrets of namespace hold now
// (ids, opaque to the store), at now: each is claimed for namespace when no
// other project holds it, or another's hold (UUIDHold, from when it stopped
// holding it) has passed; the namespace's keys that are not in ids start
// their hold. It returns the owner of each of ids.
func (s *Store) SyncKeys(ctx context.Context, namespace string, ids []string, now time.Time) (map[string]string, error) {
	o := &syncKeysOp{namespace: namespace, ids: ids, now: Truncate(now), result: newResult()}
	if err := s.submit(ctx, o, false); err != nil {
		return nil, err
	}
	return o.owners, o.err
}

type syncKeysOp struct {
	namespace string
	ids       []string
	now       time.Time
	owners    map[string]string
	result
}

func (o *syncKeysOp) apply(t *txn) error {
	o.owners = make(map[string]string, len(o.ids))
	lock := ""
	if t.s.d.lockRows {
		lock = " FOR UPDATE"
	}
	for _, id := range o.ids {
		if err := t.exec(`INSERT INTO key_owners (key_id, namespace) VALUES (?, ?) ON CONFLICT (key_id) DO NOTHING`, id, o.namespace); err != nil {
			return fmt.Errorf("claiming a project key: %w", err)
		}
		var ns string
		var released sql.NullInt64
		if err := t.queryRow(`SELECT namespace, released FROM key_owners WHERE key_id = ?`+lock, id).Scan(&ns, &released); err != nil {
			return fmt.Errorf("reading a project key's owner: %w", err)
		}
		free := holdPassed(released, o.now)
		if ns == o.namespace && !released.Valid {
			o.owners[id] = ns
			continue
		}
		if ns != o.namespace && !free {
			o.owners[id] = ns
			continue
		}
		if err := t.exec(`UPDATE key_owners SET namespace = ?, released = NULL WHERE key_id = ?`, o.namespace, id); err != nil {
			return fmt.Errorf("claiming a project key: %w", err)
		}
		o.owners[id] = o.namespace
	}
	// The keys the namespace no longer holds start their hold.
	q := `UPDATE key_owners SET released = ? WHERE namespace = ? AND released IS NULL`
	args := []any{o.now.UnixMicro(), o.namespace}
	if len(o.ids) > 0 {
		q += ` AND key_id NOT IN (?` + strings.Repeat(", ?", len(o.ids)-1) + `)`
		for _, id := range o.ids {
			args = append(args, id)
		}
	}
	if err := t.exec(q, args...); err != nil {
		return fmt.Errorf("releasing project keys: %w", err)
	}
	return nil
}
