package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// CronJobSuspension is what the CronJob controller last saw of a CronJob's
// suspension: suspended or not, as of Until (when it was seen resumed,
// once it was). The runs scheduled until then were not missed.
type CronJobSuspension struct {
	Suspended bool
	Until     time.Time
}

// cronJobSuspensionsKept is how long a suspension is remembered after its
// Until: longer than the CronJob controller looks back for missed runs, so
// an older one says nothing.
const cronJobSuspensionsKept = 7 * 24 * time.Hour

// CronJobSuspension is the suspension last seen of the CronJob, ok false
// when none was.
func (s *Store) CronJobSuspension(ctx context.Context, uid types.UID) (CronJobSuspension, bool, error) {
	var seen CronJobSuspension
	var until int64
	err := s.queryRow(ctx, `SELECT suspended, seen_until FROM cronjob_suspensions WHERE cronjob_uid = ?`, string(uid)).
		Scan(&seen.Suspended, &until)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return CronJobSuspension{}, false, nil
	case err != nil:
		return CronJobSuspension{}, false, fmt.Errorf("reading the suspension of CronJob %s: %w", uid, err)
	}
	seen.Until = time.UnixMicro(until).UTC()
	return seen, true, nil
}

// SeeCronJobSuspension records what was seen of the CronJob's suspension
// at seen.Until, and forgets the suspensions long past: one row a CronJob,
// and none older than cronJobSuspensionsKept.
func (s *Store) SeeCronJobSuspension(ctx context.Context, namespace string, uid types.UID, seen CronJobSuspension) error {
	err := s.shortTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.d.sql(`INSERT INTO cronjob_suspensions (cronjob_uid, namespace, suspended, seen_until)
			VALUES (?, ?, ?, ?) ON CONFLICT (cronjob_uid) DO UPDATE SET suspended = excluded.suspended, seen_until = excluded.seen_until`),
			string(uid), namespace, seen.Suspended, Truncate(seen.Until).UnixMicro()); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.d.sql(`DELETE FROM cronjob_suspensions WHERE seen_until < ?`),
			Truncate(seen.Until.Add(-cronJobSuspensionsKept)).UnixMicro())
		return err
	})
	if err != nil {
		return fmt.Errorf("recording the suspension of CronJob %s/%s: %w", namespace, uid, err)
	}
	return nil
}
