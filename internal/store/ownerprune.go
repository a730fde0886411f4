package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// MaxReleasedOwners bounds the released rows a namespace keeps in each
// ownership table: the holds of keys and UUIDs it held no more. A
// project that re-creates its Secret or its checks releases a few, far
// fewer; past the bound the oldest holds end early, so that a tenant who
// rotates keys by the thousand cannot fill the store's volume within the
// hold.
const MaxReleasedOwners = 10_000

// ownerPruneBatch bounds the rows one pruning transaction deletes, and
// maxOwnerPruneBatches the transactions of one PruneOwners: what is left
// goes at the next.
const (
	ownerPruneBatch      = 500
	maxOwnerPruneBatches = 100
)

// ownerTables are the ownership tables and their keys.
var ownerTables = []struct{ name, key string }{{"key_owners", "key_id"}, {"uuid_owners", "uuid"}}

// PruneOwners deletes the ownership rows of project keys and check UUIDs
// whose hold has passed at now (UUIDHold after their project stopped
// holding them: they are anyone's to claim, as if never claimed), and each
// namespace's released rows beyond the newest MaxReleasedOwners. It works
// in transactions of at most ownerPruneBatch rows, outside the writer's
// batches, and returns how many rows it deleted; a large backlog is left
// for the next call after maxOwnerPruneBatches transactions.
func (s *Store) PruneOwners(ctx context.Context, now time.Time) (int, error) {
	cutoff := Truncate(now).Add(-UUIDHold).UnixMicro()
	pruned, batches := 0, 0
	// prune runs del (a DELETE of at most ownerPruneBatch rows) until it
	// deletes fewer, or the batches run out.
	prune := func(del string, args ...any) error {
		for batches < maxOwnerPruneBatches {
			batches++
			var n int64
			err := s.shortTx(ctx, func(tx *sql.Tx) error {
				res, err := tx.ExecContext(ctx, s.d.sql(del), args...)
				if err != nil {
					return err
				}
				n, err = res.RowsAffected()
				return err
			})
			if err != nil {
				return err
			}
			pruned += int(n)
			if n < ownerPruneBatch {
				return nil
			}
		}
		return nil
	}
	for _, t := range ownerTables {
		// The outer conditions hold the row as it is when deleted: one
		// claimed again meanwhile (another replica) stays.
		err := prune(fmt.Sprintf(`DELETE FROM %[1]s WHERE released IS NOT NULL AND released <= ? AND %[2]s IN (
			SELECT %[2]s FROM %[1]s WHERE released IS NOT NULL AND released <= ? LIMIT %[3]d)`, t.name, t.key, ownerPruneBatch),
			cutoff, cutoff)
		if err != nil {
			return pruned, fmt.Errorf("pruning %s: %w", t.name, err)
		}
		crowded, err := s.crowded(ctx, t.name)
		if err != nil {
			return pruned, err
		}
		for _, ns := range crowded {
			err := prune(fmt.Sprintf(`DELETE FROM %[1]s WHERE released IS NOT NULL AND %[2]s IN (
				SELECT %[2]s FROM %[1]s WHERE namespace = ? AND released IS NOT NULL
				ORDER BY released DESC, %[2]s LIMIT %[3]d OFFSET %[4]d)`, t.name, t.key, ownerPruneBatch, MaxReleasedOwners), ns)
			if err != nil {
				return pruned, fmt.Errorf("pruning %s of %s: %w", t.name, ns, err)
			}
		}
	}
	return pruned, nil
}

// crowded lists the namespaces with more than MaxReleasedOwners released
// rows in table.
func (s *Store) crowded(ctx context.Context, table string) ([]string, error) {
	rows, err := s.query(ctx, fmt.Sprintf(`SELECT namespace FROM %s WHERE released IS NOT NULL
		GROUP BY namespace HAVING COUNT(*) > %d ORDER BY namespace`, table, MaxReleasedOwners))
	if err != nil {
		return nil, fmt.Errorf("counting released rows of %s: %w", table, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ns string
		if err := rows.Scan(&ns); err != nil {
			return nil, err
		}
		out = append(out, ns)
	}
	return out, rows.Err()
}

// OwnerRows counts the rows of the ownership tables: what the holds cost
// the store (the tests bound it).
func (s *Store) OwnerRows(ctx context.Context) (keys, uuids int64, err error) {
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM key_owners`).Scan(&keys); err != nil {
		return 0, 0, fmt.Errorf("counting key owners: %w", err)
	}
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM uuid_owners`).Scan(&uuids); err != nil {
		return 0, 0, fmt.Errorf("counting UUID owners: %w", err)
	}
	return keys, uuids, nil
}

// KeyRowsOf counts the key rows a namespace holds or held: what one
// project's keys cost the store.
func (s *Store) KeyRowsOf(ctx context.Context, namespace string) (int64, error) {
	var n int64
	if err := s.queryRow(ctx, `SELECT COUNT(*) FROM key_owners WHERE namespace = ?`, namespace).Scan(&n); err != nil {
		return 0, fmt.Errorf("counting the key owners of %s: %w", namespace, err)
	}
	return n, nil
}
