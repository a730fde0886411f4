package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// keyChunk bounds the keys one statement and one transaction of SyncKeys
// hold: 1,000 parameters at most, far under SQLite's 32,766, and a
// transaction short enough that the pings the writer commits meanwhile
// wait for one chunk at most.
const keyChunk = 500

// SyncKeys records which project keys the Secrets of namespace hold now
// (ids, opaque to the store), at now: each is claimed for namespace when no
// other project holds it, or another's hold (UUIDHold, from when it stopped
// holding it) has passed; the namespace's keys that are not in ids start
// their hold. It returns the owner of each of ids.
//
// It writes only what differs from the store's record of the namespace
// (the keys it does not hold yet, and those it holds no more), in
// transactions of at most keyChunk keys each, outside the writer's
// batches: pings commit between them, however many keys change. A sync
// that fails part way leaves the chunks it committed; syncing the same ids
// again finishes it.
func (s *Store) SyncKeys(ctx context.Context, namespace string, ids []string, now time.Time) (map[string]string, error) {
	now = Truncate(now)
	held, err := s.heldKeys(ctx, namespace)
	if err != nil {
		return nil, err
	}
	owners := make(map[string]string, len(ids))
	want := make(map[string]bool, len(ids))
	var claim []string
	for _, id := range ids {
		if want[id] {
			continue
		}
		want[id] = true
		if held[id] {
			owners[id] = namespace
		} else {
			claim = append(claim, id)
		}
	}
	var release []string
	for id := range held {
		if !want[id] {
			release = append(release, id)
		}
	}
	// In key order, so that replicas claiming the same keys lock their
	// rows in one order.
	sort.Strings(claim)
	sort.Strings(release)
	for chunk := range slices.Chunk(claim, keyChunk) {
		if err := s.claimKeys(ctx, namespace, chunk, now, owners); err != nil {
			return nil, fmt.Errorf("claiming project keys for %s: %w", namespace, err)
		}
	}
	for chunk := range slices.Chunk(release, keyChunk) {
		err := s.shortTx(ctx, func(tx *sql.Tx) error {
			args := append([]any{now.UnixMicro(), namespace}, anys(chunk)...)
			_, err := tx.ExecContext(ctx, s.d.sql(`UPDATE key_owners SET released = ? WHERE namespace = ? AND released IS NULL AND key_id IN (`+
				placeholders(len(chunk))+`)`), args...)
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("releasing project keys of %s: %w", namespace, err)
		}
	}
	return owners, nil
}

// heldKeys are the keys the store records namespace as holding.
func (s *Store) heldKeys(ctx context.Context, namespace string) (map[string]bool, error) {
	rows, err := s.query(ctx, `SELECT key_id FROM key_owners WHERE namespace = ? AND released IS NULL`, namespace)
	if err != nil {
		return nil, fmt.Errorf("reading the project keys of %s: %w", namespace, err)
	}
	defer rows.Close()
	held := map[string]bool{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("reading the project keys of %s: %w", namespace, err)
		}
		held[id] = true
	}
	return held, rows.Err()
}

// KeyHolders lists the namespaces the store records as holding project
// keys now (a key of theirs not released), sorted. A manager that starts
// syncs those whose project Secrets it does not find with no keys, so that
// the holds of Secrets deleted while no manager ran start, and pass.
func (s *Store) KeyHolders(ctx context.Context) ([]string, error) {
	rows, err := s.query(ctx, `SELECT DISTINCT namespace FROM key_owners WHERE released IS NULL ORDER BY namespace`)
	if err != nil {
		return nil, fmt.Errorf("reading the namespaces that hold project keys: %w", err)
	}
	defer rows.Close()
	var namespaces []string
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, fmt.Errorf("reading the namespaces that hold project keys: %w", err)
		}
		namespaces = append(namespaces, ns)
	}
	return namespaces, rows.Err()
}

type keyOwner struct {
	namespace string
	released  sql.NullInt64
}

// claimKeys claims ids (sorted, at most keyChunk) for namespace in one
// transaction, and adds their owners to owners.
func (s *Store) claimKeys(ctx context.Context, namespace string, ids []string, now time.Time, owners map[string]string) error {
	lock := ""
	if s.d.lockRows {
		lock = " ORDER BY key_id FOR UPDATE"
	}
	return s.shortTx(ctx, func(tx *sql.Tx) error {
		found := make(map[string]keyOwner, len(ids))
		// A row may be pruned (another replica's leader) between the
		// insert, which leaves it be, and the read: insert it again.
		missing := ids
		for try := 0; len(missing) > 0; try++ {
			if try == 3 {
				return fmt.Errorf("%d key rows vanish as they are claimed", len(missing))
			}
			args := make([]any, 0, 2*len(missing))
			for _, id := range missing {
				args = append(args, id, namespace)
			}
			if _, err := tx.ExecContext(ctx, s.d.sql(`INSERT INTO key_owners (key_id, namespace) VALUES `+
				strings.Repeat("(?, ?), ", len(missing)-1)+`(?, ?) ON CONFLICT (key_id) DO NOTHING`), args...); err != nil {
				return err
			}
			rows, err := tx.QueryContext(ctx, s.d.sql(`SELECT key_id, namespace, released FROM key_owners WHERE key_id IN (`+
				placeholders(len(missing))+`)`+lock), anys(missing)...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id string
				var o keyOwner
				if err := rows.Scan(&id, &o.namespace, &o.released); err != nil {
					rows.Close()
					return err
				}
				found[id] = o
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			missing = slices.DeleteFunc(slices.Clone(missing), func(id string) bool { _, ok := found[id]; return ok })
		}
		var take []string
		for _, id := range ids {
			o := found[id]
			switch {
			case o.namespace == namespace && !o.released.Valid:
				owners[id] = namespace
			case o.namespace != namespace && !holdPassed(o.released, now):
				owners[id] = o.namespace
			default:
				// Free: the namespace's own again after a re-create, or
				// another's whose hold has passed.
				take = append(take, id)
				owners[id] = namespace
			}
		}
		if len(take) == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, s.d.sql(`UPDATE key_owners SET namespace = ?, released = NULL WHERE key_id IN (`+
			placeholders(len(take))+`)`), append([]any{namespace}, anys(take)...)...)
		return err
	})
}

// shortTx runs fn in a transaction of its own, outside the writer's
// batches: bookkeeping that must not make pings wait for more than one of
// its transactions. On SQLite it takes turns with the writer for the one
// writing connection.
func (s *Store) shortTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, txTimeout)
	defer cancel()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning a store transaction: %w", err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// placeholders is n comma-separated placeholders.
func placeholders(n int) string {
	return strings.Repeat("?, ", n-1) + "?"
}

func anys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
