package store

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// sqlRecentDurations reads the durations of a check's last successful
// timed runs, newest first: those whose pings the log still holds, then
// those the runs table keeps (a run is in one or the other, runs.go).
const sqlRecentDurations = `SELECT duration FROM (
	SELECT n, duration FROM pings WHERE check_uid = ? AND kind = 'success' AND duration IS NOT NULL
	UNION ALL
	SELECT n, duration FROM runs WHERE check_uid = ? AND NOT failed AND duration IS NOT NULL) recent
	ORDER BY n DESC LIMIT ?`

// usual learns the check's usual range of run durations for a ping that
// may end a run: only for a check with the anomaly setting, and a success
// while a run is outstanding (any other ping is not judged by it). It costs
// one indexed read of at most Anomaly.Runs rows.
func (t *txn) usual(r *row, cfg monitor.Config, p Ping) (monitor.Usual, error) {
	a := cfg.Anomaly
	if a == nil || p.Kind != monitor.PingSuccess || !r.Facts.Started() {
		return monitor.Usual{}, nil
	}
	rows, err := t.query(sqlRecentDurations, string(r.UID), string(r.UID), recentRuns(a))
	if err != nil {
		return monitor.Usual{}, fmt.Errorf("reading the last runs of %s/%s: %w", r.Namespace, r.Name, err)
	}
	return usualOf(a, rows)
}

// Usual is the usual range of a check's run durations now, as the next
// run that ends will be judged by (the zero Usual without the setting, or
// too few runs): what the check page draws.
func (s *Store) Usual(ctx context.Context, uid types.UID, a *monitor.Anomaly) (monitor.Usual, error) {
	if a == nil {
		return monitor.Usual{}, nil
	}
	rows, err := s.query(ctx, sqlRecentDurations, string(uid), string(uid), recentRuns(a))
	if err != nil {
		return monitor.Usual{}, fmt.Errorf("reading a check's last runs: %w", err)
	}
	return usualOf(a, rows)
}

// recentRuns is how many runs the range is learned from, bounded.
func recentRuns(a *monitor.Anomaly) int { return min(max(a.Runs, 1), monitor.MaxAnomalyRuns) }

// usualOf learns the range from sqlRecentDurations' rows, and closes them.
func usualOf(a *monitor.Anomaly, rows rows) (monitor.Usual, error) {
	defer func() { _ = rows.Close() }()
	var durations []time.Duration
	for rows.Next() {
		var us int64
		if err := rows.Scan(&us); err != nil {
			return monitor.Usual{}, err
		}
		durations = append(durations, time.Duration(us)*time.Microsecond)
	}
	if err := rows.Err(); err != nil {
		return monitor.Usual{}, err
	}
	return a.UsualRange(durations), nil
}
