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

// A check's SLA is judged by the leader from its runs (package sla); the
// store keeps the breach its Channels were last told of, one row per
// check in breach, so that a breach and its end are each told once across
// restarts and changes of leader. The notices are flips rows with their
// deliveries, as re-alerts are (notices.go).

// SLAVerdict is a judgement of a check's runs against its SLA.
type SLAVerdict struct {
	// Breach names the rule the runs breach ("": they meet the SLA).
	Breach string
	// Detail is the figures, in words ("success rate 80% over 7 days,
	// below 95%").
	Detail string
}

// SLABreaches are the breaches the Channels were last told of, by check.
func (s *Store) SLABreaches(ctx context.Context) (map[types.UID]SLAVerdict, error) {
	rows, err := s.query(ctx, `SELECT check_uid, reason, detail FROM sla_verdicts`)
	if err != nil {
		return nil, fmt.Errorf("reading SLA breaches: %w", err)
	}
	defer func() { _ = rows.Close() }()
	out := map[types.UID]SLAVerdict{}
	for rows.Next() {
		var uid string
		var v SLAVerdict
		if err := rows.Scan(&uid, &v.Breach, &v.Detail); err != nil {
			return nil, err
		}
		out[types.UID(uid)] = v
	}
	return out, rows.Err()
}

// JudgeSLA records a verdict on the check's runs, made at at, and tells
// the Channels that take EventSLA when it is news: a breach (or another
// rule breached) after none, or the SLA met after a breach. While a
// maintenance window holds the check, nothing is told or recorded: the
// first verdict after it ends tells what stands then. It reports whether
// the verdict was news.
func (s *Store) JudgeSLA(ctx context.Context, tg Target, v SLAVerdict, at time.Time) (bool, error) {
	v.Breach, v.Detail = bound(v.Breach, maxDetail), bound(v.Detail, maxDetail)
	o := &slaOp{target: tg, verdict: v, at: Truncate(at), result: newResult()}
	if err := s.submit(ctx, o, false); err != nil {
		return false, err
	}
	return o.news, o.err
}

// ForgetSLA drops the breach recorded of checks whose SLA was removed,
// without a word to their Channels: nothing holds them to one any more.
func (s *Store) ForgetSLA(ctx context.Context, uids ...types.UID) error {
	if len(uids) == 0 {
		return nil
	}
	o := &forgetSLAOp{uids: uids, result: newResult()}
	if err := s.submit(ctx, o, false); err != nil {
		return err
	}
	return o.err
}

type slaOp struct {
	target  Target
	verdict SLAVerdict
	at      time.Time
	news    bool
	result
}

func (o *slaOp) queuedBytes() int64 { return 0 }

func (o *slaOp) targets() []*Target { return []*Target{&o.target} }

func (o *slaOp) apply(t *txn) error {
	tg, v := &o.target, o.verdict
	var told string
	err := t.queryRow(`SELECT reason FROM sla_verdicts WHERE check_uid = ?`, string(tg.UID)).Scan(&told)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("reading the SLA verdict of %s/%s: %w", tg.Namespace, tg.Name, err)
	}
	if told == v.Breach || tg.holdAt(o.at).window != "" {
		return nil
	}
	r, err := t.load(tg)
	if err != nil {
		return err
	}
	notice := monitor.NoticeSLABreach
	if v.Breach == "" {
		notice = monitor.NoticeSLAMet
		err = t.exec(`DELETE FROM sla_verdicts WHERE check_uid = ?`, string(tg.UID))
	} else {
		err = t.exec(`INSERT INTO sla_verdicts (check_uid, reason, detail, since) VALUES (?, ?, ?, ?)
			ON CONFLICT (check_uid) DO UPDATE SET reason = excluded.reason, detail = excluded.detail, since = excluded.since`,
			string(tg.UID), v.Breach, v.Detail, o.at.UnixMicro())
	}
	if err != nil {
		return fmt.Errorf("recording the SLA verdict of %s/%s: %w", tg.Namespace, tg.Name, err)
	}
	o.news = true
	fl := &Flip{At: o.at, From: r.Facts.State, To: r.Facts.State, Notice: notice, Reason: monitor.Reason(v.Breach), Detail: v.Detail}
	return t.insertFlip(r, fl, routed(tg, tg.Channels, EventSLA))
}

type forgetSLAOp struct {
	uids []types.UID
	result
}

func (o *forgetSLAOp) queuedBytes() int64 { return 0 }

func (o *forgetSLAOp) apply(t *txn) error {
	for _, uid := range o.uids {
		if err := t.exec(`DELETE FROM sla_verdicts WHERE check_uid = ?`, string(uid)); err != nil {
			return fmt.Errorf("forgetting the SLA verdict of check %s: %w", uid, err)
		}
	}
	return nil
}
