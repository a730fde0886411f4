package store

import (
	"fmt"
	"time"

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
	rows, err := t.query(sqlRecentDurations, string(r.UID), string(r.UID), min(max(a.Runs, 1), monitor.MaxAnomalyRuns))
	if err != nil {
		return monitor.Usual{}, fmt.Errorf("reading the last runs of %s/%s: %w", r.Namespace, r.Name, err)
	}
	defer rows.Close()
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
