package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// DefaultRunLimit is how many of its last pings a check keeps the runs of
// when Options.RunLimit does not say: 2,000 runs, or 1,000 of a job that
// also sends a start, a month of one that runs every 45 minutes. Counting
// pings, not runs, makes trimming a range delete on the table's key.
//
// A run is its success or fail ping (which keeps the run's duration) while
// the ping log holds it; when the log lets the ping go, the run moves to a
// small row of the runs table. So a ping costs no second row: the runs
// table is written once per 16 pings of a check whose log is full.
const DefaultRunLimit = 2000

// Run is one run that ended: a success or fail ping, with how long it ran
// when a start ping began it.
type Run struct {
	// N is the serial number of the ping that ended it.
	N     int64
	Ended time.Time
	// Failed: a fail ping (a non-zero exit status, or a run shorter than
	// the check's minimum runtime) ended it.
	Failed bool
	// Duration is from its start ping to its end; valid when HasDuration.
	Duration    time.Duration
	HasDuration bool
}

// History is what the run statistics are computed from: a check's runs,
// oldest first, and the deadlines it missed (its down flips for lack of a
// ping, outside maintenance windows), oldest first, since an instant; and
// from its row, how far back its runs are whole and its last success
// however old.
type History struct {
	Runs   []Run
	Missed []time.Time
	// Dropped is when the newest run the store let go ended (zero: none).
	Dropped     time.Time
	LastSuccess time.Time
}

// pruneRuns deletes the runs that the pings numbered r.trimRuns and below
// ended, and keeps when the newest of them ended.
func (t *txn) pruneRuns(r *row) error {
	err := t.ask(sqlPruneRuns, func(rows rows) error {
		for rows.Next() {
			var ended int64
			if err := rows.Scan(&ended); err != nil {
				return err
			}
			r.RunCounts.Dropped = later(r.RunCounts.Dropped, time.UnixMicro(ended).UTC())
		}
		return rows.Err()
	}, string(r.UID), r.trimRuns)
	if err != nil {
		return fmt.Errorf("trimming the runs of %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}

// later is the later of two instants.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

const (
	// sqlMoveRuns keeps the runs of the pings the log lets go, numbered
	// in (from, upto]; a run already kept (written by a replica of the
	// version before, which recorded runs at their pings, during a rolling
	// upgrade) stays as it is.
	sqlMoveRuns = `INSERT INTO runs (check_uid, n, ended, failed, duration)
		SELECT check_uid, n, created, kind = 'fail', duration FROM pings
		WHERE check_uid = ? AND n > ? AND n <= ? AND kind IN ('success', 'fail')
		ON CONFLICT (check_uid, n) DO NOTHING`
	sqlPruneRuns = `DELETE FROM runs WHERE check_uid = ? AND n <= ? RETURNING ended`
)

// History returns a check's runs and missed deadlines since the instant.
func (s *Store) History(ctx context.Context, uid types.UID, since time.Time) (History, error) {
	all, err := s.histories(ctx, `check_uid = ?`, []any{string(uid)}, since)
	return all[uid], err
}

// HistoriesIn returns the runs and missed deadlines since the instant of
// every check in the namespace that has any.
func (s *Store) HistoriesIn(ctx context.Context, namespace string, since time.Time) (map[types.UID]History, error) {
	return s.histories(ctx, `check_uid IN (SELECT uid FROM checks WHERE namespace = ?)`, []any{namespace}, since)
}

// HistoriesOf returns the runs and missed deadlines since the instant of
// the checks with these UIDs (those that have any): a board's page.
func (s *Store) HistoriesOf(ctx context.Context, uids []types.UID, since time.Time) (map[types.UID]History, error) {
	out := map[types.UID]History{}
	for chunk := range slices.Chunk(uids, 500) {
		args := make([]any, len(chunk))
		for i, uid := range chunk {
			args[i] = string(uid)
		}
		some, err := s.histories(ctx, `check_uid IN (`+placeholders(len(chunk))+`)`, args, since)
		if err != nil {
			return nil, err
		}
		maps.Copy(out, some)
	}
	return out, nil
}

func (s *Store) histories(ctx context.Context, which string, args []any, since time.Time) (map[types.UID]History, error) {
	out := map[types.UID]History{}
	// A run is its ping while the log holds it, and a row of runs after.
	runArgs := append(append(append(slices.Clone(args), since.UnixMicro()), args...), since.UnixMicro())
	rows, err := s.query(ctx, `SELECT check_uid, n, ended, failed, duration FROM runs WHERE `+which+` AND ended >= ?
		UNION ALL SELECT check_uid, n, created, kind = 'fail', duration FROM pings
			WHERE `+which+` AND created >= ? AND kind IN ('success', 'fail')
		ORDER BY 1, 2`, runArgs...)
	if err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			uid      string
			r        Run
			ended    int64
			duration sql.NullInt64
		)
		if err := rows.Scan(&uid, &r.N, &ended, &r.Failed, &duration); err != nil {
			return nil, fmt.Errorf("reading runs: %w", err)
		}
		r.Ended = time.UnixMicro(ended).UTC()
		r.Duration, r.HasDuration = time.Duration(duration.Int64)*time.Microsecond, duration.Valid
		h := out[types.UID(uid)]
		h.Runs = append(h.Runs, r)
		out[types.UID(uid)] = h
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading runs: %w", err)
	}
	missed, err := s.query(ctx, `SELECT check_uid, created FROM flips
		WHERE `+which+` AND created >= ? AND up = FALSE AND notice = '' AND reason = ? AND held = '' ORDER BY check_uid, n`,
		append(slices.Clone(args), since.UnixMicro(), string(monitor.ReasonTimeout))...)
	if err != nil {
		return nil, fmt.Errorf("reading missed deadlines: %w", err)
	}
	defer missed.Close()
	for missed.Next() {
		var (
			uid     string
			created int64
		)
		if err := missed.Scan(&uid, &created); err != nil {
			return nil, fmt.Errorf("reading missed deadlines: %w", err)
		}
		h := out[types.UID(uid)]
		h.Missed = append(h.Missed, time.UnixMicro(created).UTC())
		out[types.UID(uid)] = h
	}
	return out, missed.Err()
}

// RunLimit is how many of its last pings a check keeps the runs of: a
// check with more pings may have let its oldest runs go.
func (s *Store) RunLimit() int { return s.opts.RunLimit }
