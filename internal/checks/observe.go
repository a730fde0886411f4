package checks

import (
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/notify"
	"github.com/vigil-operator/vigil/internal/store"
)

// target is the check as the store's writes need it: its identity, how it
// is monitored (a broken spec is monitored as a Simple check; the
// controller reports it), the Channels a flip notifies, the windows and
// the checks it depends on that hold its notifications, and its project's
// ping-log and ping body limits.
func (d *Door) target(c *v1.Check) store.Target {
	cfg, _ := d.Config(c)
	tg := store.Target{
		UID: c.UID, Namespace: c.Namespace, Name: c.Name, Config: cfg,
		Channels: d.Channels(c), PingLogLimit: d.PingLogLimit(c.Namespace), BodyLimit: d.BodyBytesLimit(c.Namespace),
		Routes: &d.channels,
	}
	if p := c.Spec.RealertInterval; p != nil {
		tg.Realert = p.Duration
	}
	if esc := c.Spec.Escalation; esc != nil {
		tg.Escalation = store.Escalation{After: esc.After.Duration, Channels: d.escalationChannels(c)}
	}
	if ws := d.Windows(c); len(ws) > 0 {
		tg.Maintenance = ws
	}
	if c.Spec.DependsOn != nil {
		tg.Dependencies = parentsOf{d, c}
	}
	return tg
}

// RecordPing stores p for c, with everything it causes (a flip and the
// notifications it owes), and returns once that is durable.
func (d *Door) RecordPing(ctx context.Context, c *v1.Check, p store.Ping) (store.Recorded, error) {
	if p.Early == "" {
		d.awaitReady()
	}
	if p.Noted.IsZero() {
		p.Noted = d.clock.Now()
	}
	rec, err := d.store.RecordPing(ctx, d.target(c), p)
	if err == nil && !rec.Taken {
		d.metrics.Ping(c.Namespace, rec.Kind)
		if rec.BodyRefused {
			d.metrics.BodyRefused(c.Namespace)
		}
	}
	return rec, err
}

// Observe records what time has done to the checks by now (a missed
// deadline is a down flip at the deadline, however late it is noticed) and
// moves their next deadlines; a check the store does not hold yet gets its
// rows. It returns the flips it recorded, by check.
func (d *Door) Observe(ctx context.Context, checks []*v1.Check, now time.Time) (map[types.UID]*store.Flip, error) {
	d.awaitReady()
	targets := make([]store.Target, len(checks))
	run := 0 // checks of one namespace in a row, counted at its end
	for i, c := range checks {
		targets[i] = d.target(c)
		if run++; i == len(checks)-1 || c.Namespace != checks[i+1].Namespace {
			d.metrics.Observed(c.Namespace, run)
			run = 0
		}
	}
	parentsFirst(targets)
	return d.store.Observe(ctx, targets, now)
}

// Pause pauses c (observed state, never its spec, which is the user's);
// pausing a paused check changes nothing.
func (d *Door) Pause(ctx context.Context, c *v1.Check) (store.Check, error) {
	return d.store.Pause(ctx, d.target(c), d.clock.Now())
}

// Resume resumes c: monitor.ErrNotPaused unless it is paused.
func (d *Door) Resume(ctx context.Context, c *v1.Check) (store.Check, error) {
	return d.store.Resume(ctx, d.target(c), d.clock.Now())
}

// Acknowledge acknowledges c's current down, by who: its re-alerts and
// escalation stop until it ends (store.Acknowledge; store.ErrNotDown
// unless it is down).
func (d *Door) Acknowledge(ctx context.Context, c *v1.Check, by string) (store.Check, error) {
	tg := d.target(c)
	// The Channels that carry it to the incident they opened (PagerDuty,
	// Opsgenie); a Channel the cache does not hold carries nothing.
	var carriers []string
	names := slices.Concat(tg.Channels, tg.Escalation.Channels)
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		ch := &v1.Channel{}
		if err := d.cache.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, ch); err == nil && notify.Acknowledges(ch.Spec.Kind) {
			carriers = append(carriers, name)
		}
	}
	return d.store.Acknowledge(ctx, tg, by, d.clock.Now(), carriers)
}

// JudgeSLA records a verdict on c's runs against its SLA, made now, and
// tells its Channels when it is news (store.JudgeSLA).
func (d *Door) JudgeSLA(ctx context.Context, c *v1.Check, v store.SLAVerdict) (bool, error) {
	return d.store.JudgeSLA(ctx, d.target(c), v, d.clock.Now())
}

// ForgetSLA drops the breaches recorded of checks that no longer have an
// SLA, telling nobody.
func (d *Door) ForgetSLA(ctx context.Context, uids ...types.UID) error {
	return d.store.ForgetSLA(ctx, uids...)
}

// SLABreaches are the breaches the Channels were last told of, by check.
func (d *Door) SLABreaches(ctx context.Context) (map[types.UID]store.SLAVerdict, error) {
	return d.store.SLABreaches(ctx)
}
