package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// query and queryRow run a read in the backend's dialect.
func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return s.ro.QueryContext(ctx, s.d.sql(q), args...)
}

func (s *Store) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return s.ro.QueryRowContext(ctx, s.d.sql(q), args...)
}

// Check returns what the store knows of one check, with its newest flip. A
// check the store has never seen is the zero Check (new) and found false.
func (s *Store) Check(ctx context.Context, uid types.UID) (Check, bool, error) {
	r, err := scanCheck(s.queryRow(ctx, `SELECT `+checkColumns+` FROM checks WHERE uid = ?`, string(uid)))
	if errors.Is(err, sql.ErrNoRows) {
		return Check{UID: uid}, false, nil
	}
	if err != nil {
		return Check{}, false, fmt.Errorf("reading check %s: %w", uid, err)
	}
	if r.nFlips > 0 {
		flips, err := s.flips(ctx, `SELECT `+flipColumns+` FROM flips WHERE check_uid = ? AND notice = '' ORDER BY n DESC LIMIT 1`, string(uid))
		if err != nil {
			return Check{}, false, err
		}
		if len(flips) > 0 {
			r.LastFlip = &flips[0]
		}
	}
	return r.Check, true, nil
}

// Pings returns the newest limit pings of a check, newest first.
func (s *Store) Pings(ctx context.Context, uid types.UID, limit int) ([]LoggedPing, error) {
	rows, err := s.query(ctx, `SELECT n, kind, created, scheme, remote_addr, method, ua, rid, exit_status,
		COALESCE(length(body), 0), body_dropped FROM pings WHERE check_uid = ? ORDER BY n DESC LIMIT ?`, string(uid), limit)
	if err != nil {
		return nil, fmt.Errorf("reading the ping log: %w", err)
	}
	defer rows.Close()
	var out []LoggedPing
	for rows.Next() {
		var p LoggedPing
		var kind string
		var created int64
		var exit sql.NullInt64
		if err := rows.Scan(&p.N, &kind, &created, &p.Scheme, &p.RemoteAddr, &p.Method, &p.UA, &p.RID, &exit, &p.BodySize, &p.BodyDropped); err != nil {
			return nil, err
		}
		p.Kind, p.At = monitor.PingKind(kind), time.UnixMicro(created).UTC()
		if exit.Valid {
			e := int(exit.Int64)
			p.ExitStatus = &e
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// PingBody returns the body of ping n of a check; found is false when the
// log does not hold that ping. A ping without a body has a nil body.
func (s *Store) PingBody(ctx context.Context, uid types.UID, n int64) (body []byte, found bool, err error) {
	err = s.queryRow(ctx, `SELECT body FROM pings WHERE check_uid = ? AND n = ?`, string(uid), n).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading a ping body: %w", err)
	}
	return body, true, nil
}

// BodyPreviews returns the first maxBytes of the bodies of a check's newest
// limit pings, by serial number (pings without a body are absent): one
// query for a page of the ping log, which reads no more of each body than it
// shows.
func (s *Store) BodyPreviews(ctx context.Context, uid types.UID, limit, maxBytes int) (map[int64][]byte, error) {
	rows, err := s.query(ctx, `SELECT n, substr(body, 1, ?) FROM (SELECT n, body FROM pings WHERE check_uid = ?
		ORDER BY n DESC LIMIT ?) AS newest WHERE length(body) > 0`, maxBytes, string(uid), limit)
	if err != nil {
		return nil, fmt.Errorf("reading ping bodies: %w", err)
	}
	defer rows.Close()
	out := map[int64][]byte{}
	for rows.Next() {
		var n int64
		var body []byte
		if err := rows.Scan(&n, &body); err != nil {
			return nil, err
		}
		out[n] = body
	}
	return out, rows.Err()
}

// LastResult returns the body and exit status of the check's newest
// success or fail ping, for notifications: what the job said.
func (s *Store) LastResult(ctx context.Context, uid types.UID) (body []byte, exit *int, err error) {
	var e sql.NullInt64
	err = s.queryRow(ctx, `SELECT body, exit_status FROM pings WHERE check_uid = ? AND kind IN (?, ?) ORDER BY n DESC LIMIT 1`,
		string(uid), string(monitor.PingSuccess), string(monitor.PingFail)).Scan(&body, &e)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the last ping: %w", err)
	}
	if e.Valid {
		v := int(e.Int64)
		exit = &v
	}
	return body, exit, nil
}

// Flips returns a check's flips, newest first.
func (s *Store) Flips(ctx context.Context, uid types.UID) ([]Flip, error) {
	return s.flips(ctx, `SELECT `+flipColumns+` FROM flips WHERE check_uid = ? AND notice = '' ORDER BY n DESC`, string(uid))
}

// RecentFlips returns a check's newest flips, at most limit, newest first:
// read from the primary key's end, so its cost is limit rows however many
// the check has.
func (s *Store) RecentFlips(ctx context.Context, uid types.UID, limit int) ([]Flip, error) {
	return s.flips(ctx, `SELECT `+flipColumns+` FROM flips WHERE check_uid = ? AND notice = '' ORDER BY n DESC LIMIT ?`, string(uid), limit)
}

// Notification is a flip or a notice with what became of it: a delivery
// per Channel it was queued for (none: held by a maintenance window, or no
// Channel takes it).
type Notification struct {
	Flip
	Deliveries []Delivery // by channel name
}

// Notifications returns a check's last flips and notices, newest first, at
// most limit, each with its deliveries: what the dashboard shows as why
// each notification was sent, retried or held.
func (s *Store) Notifications(ctx context.Context, uid types.UID, limit int) ([]Notification, error) {
	flips, err := s.flips(ctx, `SELECT `+flipColumns+` FROM flips WHERE check_uid = ? ORDER BY n DESC LIMIT ?`, string(uid), limit)
	if err != nil || len(flips) == 0 {
		return nil, err
	}
	out := make([]Notification, len(flips))
	byN := make(map[int64]*Notification, len(flips))
	for i, f := range flips {
		out[i].Flip = f
		byN[f.N] = &out[i]
	}
	rows, err := s.query(ctx, `SELECT d.flip_n, `+deliveryColumns+` FROM deliveries d JOIN channels ch ON ch.id = d.channel_id
		WHERE d.check_uid = ? AND d.flip_n >= ? ORDER BY d.flip_n, ch.name`, string(uid), flips[len(flips)-1].N)
	if err != nil {
		return nil, fmt.Errorf("reading deliveries: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var n int64
		d, err := scanDelivery(rows, uid, &n)
		if err != nil {
			return nil, err
		}
		if to := byN[n]; to != nil {
			to.Deliveries = append(to.Deliveries, d)
		}
	}
	return out, rows.Err()
}

// deliveryColumns are what scanDelivery reads, after any leading ones.
// A delivery (d) is read with its Channel (ch).
const deliveryColumns = `ch.name, d.state, d.attempts, d.next_attempt, d.last_error`

// scanDelivery reads a delivery of the check selected with
// deliveryColumns, after the leading columns given (a flip number).
func scanDelivery(sc interface{ Scan(...any) error }, uid types.UID, lead ...any) (Delivery, error) {
	d := Delivery{CheckUID: uid}
	var state string
	var next int64
	if err := sc.Scan(append(lead, &d.Channel, &state, &d.Attempts, &next, &d.LastError)...); err != nil {
		return d, err
	}
	d.State, d.NextAttempt = DeliveryState(state), time.UnixMicro(next).UTC()
	return d, nil
}

func (s *Store) flips(ctx context.Context, query string, args ...any) ([]Flip, error) {
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("reading flips: %w", err)
	}
	defer rows.Close()
	var out []Flip
	for rows.Next() {
		f, err := scanFlip(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// flipColumns are what scanFlip reads, in its order.
const flipColumns = `n, created, up, from_state, to_state, reason, detail, notice, since, held, held_until`

func scanFlip(sc interface{ Scan(...any) error }, more ...any) (Flip, error) {
	var f Flip
	var created int64
	var since, heldUntil sql.NullInt64
	var from, to, reason, notice string
	if err := sc.Scan(append([]any{&f.N, &created, &f.Up, &from, &to, &reason, &f.Detail, &notice, &since, &f.Held, &heldUntil}, more...)...); err != nil {
		return f, err
	}
	f.At = time.UnixMicro(created).UTC()
	f.From, f.To, f.Reason = monitor.Status(from), monitor.Status(to), monitor.Reason(reason)
	f.Notice, f.Since = monitor.Notice(notice), fromMicros(since)
	f.HeldUntil = fromMicros(heldUntil)
	return f, nil
}

// RunKinds returns the kinds of the pings with run id rid that a check's
// log holds, and the instant of the oldest ping it holds when older ones
// have been trimmed away (zero when the log is whole): a ping older than
// that may have been recorded and trimmed.
func (s *Store) RunKinds(ctx context.Context, uid types.UID, rid string) (kinds map[monitor.PingKind]bool, horizon time.Time, err error) {
	rows, err := s.query(ctx, `SELECT kind FROM pings WHERE check_uid = ? AND rid = ?`, string(uid), rid)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading a run's pings: %w", err)
	}
	defer rows.Close()
	kinds = map[monitor.PingKind]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, time.Time{}, err
		}
		kinds[monitor.PingKind(k)] = true
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, err
	}
	var oldest sql.NullInt64
	var first sql.NullInt64
	if err := s.queryRow(ctx, `SELECT MIN(n), MIN(created) FROM pings WHERE check_uid = ?`, string(uid)).Scan(&first, &oldest); err != nil {
		return nil, time.Time{}, err
	}
	if first.Valid && first.Int64 > 1 {
		horizon = fromMicros(oldest)
	}
	return kinds, horizon, nil
}

// Due returns checks whose next change is at or before now, earliest
// first, at most limit: the deadline loop's work.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]Change, error) {
	// A check whose early pings wait is not due: they may be what it was
	// waiting for (early.go).
	rows, err := s.query(ctx, `SELECT uid, namespace, name, state, version FROM checks
		WHERE next_change IS NOT NULL AND next_change <= ?
		AND NOT EXISTS (SELECT 1 FROM early_pings e WHERE e.check_uid = checks.uid)
		ORDER BY next_change LIMIT ?`, now.UnixMicro(), limit)
	if err != nil {
		return nil, fmt.Errorf("finding due checks: %w", err)
	}
	return scanChanges(rows)
}

// Changes returns the checks written after the cursor, in the order of
// their last write (then of UID), at most limit: the projection's feed.
func (s *Store) Changes(ctx context.Context, after Cursor, limit int) ([]Change, error) {
	rows, err := s.query(ctx, `SELECT uid, namespace, name, state, version FROM checks
		WHERE (version, uid) > (?, ?) ORDER BY version, uid LIMIT ?`, after.Version, string(after.UID), limit)
	if err != nil {
		return nil, fmt.Errorf("reading store changes: %w", err)
	}
	return scanChanges(rows)
}

func scanChanges(rows *sql.Rows) ([]Change, error) {
	defer rows.Close()
	var out []Change
	for rows.Next() {
		var c Change
		var state string
		if err := rows.Scan(&c.UID, &c.Namespace, &c.Name, &state, &c.Version); err != nil {
			return nil, err
		}
		c.State = monitor.Status(state)
		out = append(out, c)
	}
	return out, rows.Err()
}

// Named returns the UIDs of the checks the store holds under a namespace
// and name: one, or more when an object was deleted and re-created.
func (s *Store) Named(ctx context.Context, namespace, name string) ([]types.UID, error) {
	rows, err := s.query(ctx, `SELECT uid FROM checks WHERE namespace = ? AND name = ?`, namespace, name)
	if err != nil {
		return nil, err
	}
	return scanUIDs(rows)
}

// UIDs returns the UIDs of every check the store holds, for finding those
// whose Check objects are gone.
func (s *Store) UIDs(ctx context.Context) ([]types.UID, error) {
	rows, err := s.query(ctx, `SELECT uid FROM checks`)
	if err != nil {
		return nil, err
	}
	return scanUIDs(rows)
}

func scanUIDs(rows *sql.Rows) ([]types.UID, error) {
	defer rows.Close()
	var out []types.UID
	for rows.Next() {
		var uid types.UID
		if err := rows.Scan(&uid); err != nil {
			return nil, err
		}
		out = append(out, uid)
	}
	return out, rows.Err()
}

// NextDelivery returns when the earliest pending delivery that no older
// one waits in front of is due (zero: none pending).
func (s *Store) NextDelivery(ctx context.Context) (time.Time, error) {
	var next sql.NullInt64
	if err := s.queryRow(ctx, `SELECT MIN(d.next_attempt) FROM deliveries d WHERE d.state = ? AND NOT EXISTS (
			SELECT 1 FROM deliveries o WHERE o.check_uid = d.check_uid AND o.channel_id = d.channel_id
				AND o.state = ? AND o.flip_n < d.flip_n)`, string(DeliveryPending), string(DeliveryPending)).Scan(&next); err != nil {
		return time.Time{}, err
	}
	return fromMicros(next), nil
}

// OldestPending is when the oldest notification still to be delivered (due,
// or waiting to be tried again) was queued; zero when none is. It reads
// every pending row: once every measure, not on any request.
func (s *Store) OldestPending(ctx context.Context) (time.Time, error) {
	var oldest sql.NullInt64
	if err := s.queryRow(ctx, `SELECT MIN(queued) FROM deliveries WHERE state = ?`, string(DeliveryPending)).Scan(&oldest); err != nil {
		return time.Time{}, fmt.Errorf("reading the oldest pending delivery: %w", err)
	}
	return fromMicros(oldest), nil
}

// Deliveries returns the deliveries of a check's flip n, by channel.
func (s *Store) Deliveries(ctx context.Context, uid types.UID, flipN int64) (map[string]Delivery, error) {
	rows, err := s.query(ctx, `SELECT `+deliveryColumns+` FROM deliveries d JOIN channels ch ON ch.id = d.channel_id
		WHERE d.check_uid = ? AND d.flip_n = ?`, string(uid), flipN)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]Delivery{}
	for rows.Next() {
		d, err := scanDelivery(rows, uid)
		if err != nil {
			return nil, err
		}
		d.Flip.N = flipN
		out[d.Channel] = d
	}
	return out, rows.Err()
}

// StateCounts counts checks by namespace and recorded state, for metrics.
func (s *Store) StateCounts(ctx context.Context) (map[[2]string]int, error) {
	rows, err := s.query(ctx, `SELECT namespace, state, COUNT(*) FROM checks GROUP BY namespace, state`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[[2]string]int{}
	for rows.Next() {
		var ns, state string
		var n int
		if err := rows.Scan(&ns, &state, &n); err != nil {
			return nil, err
		}
		if state == "" {
			state = string(monitor.StatusNew)
		}
		out[[2]string{ns, state}] += n
	}
	return out, rows.Err()
}
