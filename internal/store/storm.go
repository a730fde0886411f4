package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Storm control is the dispatcher's (package delivery): when many checks
// change state at once, a Channel gets one message listing them rather
// than one each. What it decides with is all in the outbox, so a restart
// in the middle of a storm finds it again: when each notification was
// queued (deliveries.queued), which are still pending, and which wait for
// their group (pending, never attempted, due when the group is).

// RecentlyQueued counts the checks whose plain notifications (flips, not
// notices) of one direction were queued for the Channel since since,
// counting no further than limit: whether the Channel is in a storm.
func (s *Store) RecentlyQueued(ctx context.Context, ch ChannelRef, up bool, since time.Time, limit int) (int, error) {
	var n int
	err := s.queryRow(ctx, `SELECT count(*) FROM (SELECT DISTINCT d.check_uid FROM deliveries d
		JOIN flips f ON f.check_uid = d.check_uid AND f.n = d.flip_n
		WHERE d.channel_id = (SELECT id FROM channels WHERE namespace = ? AND name = ?) AND d.queued >= ?
			AND f.notice = '' AND f.up = ? LIMIT ?) recent`,
		ch.Namespace, ch.Name, since.UnixMicro(), up, limit).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("counting the recent notifications of Channel %s/%s: %w", ch.Namespace, ch.Name, err)
	}
	return n, nil
}

// StormMembers are the Channel's pending plain notifications of one
// direction that may go out together, oldest queued first, at most limit:
// those due by now, and those never attempted that wait for their group
// (their next attempt is its send time). Like DueDeliveries, each is the
// oldest pending notification of its check on the Channel: a Channel
// hears of a check's flips in order.
func (s *Store) StormMembers(ctx context.Context, ch ChannelRef, up bool, now time.Time, limit int) ([]Delivery, error) {
	rows, err := s.query(ctx, `SELECT `+dueColumns+`, d.queued FROM deliveries d `+dueJoins+`
		WHERE ch.namespace = ? AND ch.name = ? AND d.state = `+pendingSQL+` AND (d.next_attempt <= ? OR d.attempts = 0)
			AND f.notice = '' AND f.up = ? AND NOT EXISTS (
				SELECT 1 FROM deliveries o WHERE o.check_uid = d.check_uid AND o.channel_id = d.channel_id
					AND o.state = `+pendingSQL+` AND o.flip_n < d.flip_n)
		ORDER BY d.queued, d.check_uid, d.flip_n LIMIT ?`,
		ch.Namespace, ch.Name, now.UnixMicro(), up, limit)
	if err != nil {
		return nil, fmt.Errorf("reading the pending notifications of Channel %s/%s: %w", ch.Namespace, ch.Name, err)
	}
	defer func() { _ = rows.Close() }()
	var out []Delivery
	for rows.Next() {
		var d Delivery
		var state string
		var next int64
		var queued sql.NullInt64
		f, err := scanFlip(rows, &d.CheckUID, &d.Namespace, &d.Name, &d.Channel, &state, &d.Attempts, &next, &d.LastError, &queued)
		if err != nil {
			return nil, err
		}
		d.Flip, d.State, d.NextAttempt, d.Queued = f, DeliveryState(state), time.UnixMicro(next).UTC(), fromMicros(queued)
		if d.Queued.IsZero() {
			d.Queued = d.Flip.At // queued before Vigil recorded it
		}
		out = append(out, d)
	}
	return out, rows.Err()
}

// DeliveryDue reports whether the delivery is still pending and due by
// now: not sent meanwhile in a group, nor waiting for one.
func (s *Store) DeliveryDue(ctx context.Context, dl Delivery, now time.Time) (bool, error) {
	var one int
	err := s.queryRow(ctx, `SELECT 1 FROM deliveries WHERE check_uid = ? AND flip_n = ? AND channel_id = `+channelID+`
		AND state = `+pendingSQL+` AND next_attempt <= ?`, string(dl.CheckUID), dl.Flip.N, dl.Channel, now.UnixMicro()).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading a notification of %s/%s: %w", dl.Namespace, dl.Name, err)
	}
	return true, nil
}
