package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ReportKey names one report: a Channel's report for one period.
type ReportKey struct {
	Namespace, Channel, Period string
}

// reportErrorLimit bounds the error a report row keeps.
const reportErrorLimit = 1024

// reportsKept is how long report rows are kept: well past the longest
// period, so that a report is never sent twice, and not forever.
const reportsKept = 400 * 24 * time.Hour

// ReportOwed reports whether the report is still to be sent at now: never
// sent, and not waiting to be tried again after a failure.
func (s *Store) ReportOwed(ctx context.Context, k ReportKey, now time.Time) (bool, error) {
	var sent sql.NullInt64
	var next int64
	err := s.queryRow(ctx, `SELECT sent, next_attempt FROM reports WHERE namespace = ? AND channel = ? AND period = ?`,
		k.Namespace, k.Channel, k.Period).Scan(&sent, &next)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return true, nil
	case err != nil:
		return false, fmt.Errorf("reading report %s/%s %s: %w", k.Namespace, k.Channel, k.Period, err)
	}
	return !sent.Valid && next <= now.UnixMicro(), nil
}

// ReportSent records that the report was sent at now, and forgets the
// rows of reports long past.
func (s *Store) ReportSent(ctx context.Context, k ReportKey, now time.Time) error {
	at := Truncate(now).UnixMicro()
	err := s.shortTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.d.sql(`INSERT INTO reports (namespace, channel, period, sent, created) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (namespace, channel, period) DO UPDATE SET sent = excluded.sent, error = ''`),
			k.Namespace, k.Channel, k.Period, at, at); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, s.d.sql(`DELETE FROM reports WHERE created < ?`), Truncate(now.Add(-reportsKept)).UnixMicro())
		return err
	})
	if err != nil {
		return fmt.Errorf("recording report %s/%s %s as sent: %w", k.Namespace, k.Channel, k.Period, err)
	}
	return nil
}

// ReportFailed records a failed attempt to send the report at now, to be
// tried again after retry(attempts so far, this one included).
func (s *Store) ReportFailed(ctx context.Context, k ReportKey, now time.Time, retry func(attempts int) time.Duration, cause error) error {
	msg := cause.Error()
	if len(msg) > reportErrorLimit {
		msg = msg[:reportErrorLimit]
	}
	err := s.shortTx(ctx, func(tx *sql.Tx) error {
		var attempts int
		err := tx.QueryRowContext(ctx, s.d.sql(`SELECT attempts FROM reports WHERE namespace = ? AND channel = ? AND period = ?`),
			k.Namespace, k.Channel, k.Period).Scan(&attempts)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		attempts++
		_, err = tx.ExecContext(ctx, s.d.sql(`INSERT INTO reports (namespace, channel, period, attempts, next_attempt, error, created)
			VALUES (?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (namespace, channel, period) DO UPDATE SET attempts = excluded.attempts,
				next_attempt = excluded.next_attempt, error = excluded.error`),
			k.Namespace, k.Channel, k.Period, attempts, Truncate(now.Add(retry(attempts))).UnixMicro(), msg, Truncate(now).UnixMicro())
		return err
	})
	if err != nil {
		return fmt.Errorf("recording a failed report %s/%s %s: %w", k.Namespace, k.Channel, k.Period, err)
	}
	return nil
}
