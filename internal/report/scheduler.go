package report

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/notify"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/uptime"
)

// Scheduler sends each email Channel that asks for reports its project's
// report for the newest period that has ended, once: the store records
// each report sent (and each failed attempt, tried again with backoff),
// so restarts and leader changes send none twice. It runs on the leader.
type Scheduler struct {
	// Client lists Channels from the informer cache.
	Client client.Client
	Checks *checks.Door
	Store  *store.Store
	// Send delivers a report through a Channel, as deliveries go: through
	// the egress guard, with the Channel's Secrets and the request bound.
	Send  func(ctx context.Context, ch *v1.Channel, r notify.Report) error
	Clock clock.WithTicker
	// Every is how often the Channels are looked over (default a minute).
	Every time.Duration
	// URL is the dashboard's address the report links to; empty: none.
	URL string
	Log logr.Logger
}

// Settle is how long after a period's end its report waits, so that the
// deadlines missed in its last moments, and the pings sent then, are
// recorded first.
const Settle = 5 * time.Minute

// NeedLeaderElection: one replica sends reports.
func (s *Scheduler) NeedLeaderElection() bool { return true }

// Start looks over the Channels every s.Every until ctx ends.
func (s *Scheduler) Start(ctx context.Context) error {
	every := s.Every
	if every <= 0 {
		every = time.Minute
	}
	t := s.Clock.NewTicker(every)
	defer t.Stop()
	for {
		s.Run(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// retryAfter is how long a failed report waits: 5 minutes, doubling, at
// most 6 hours (a week's report is still worth sending a day late).
func retryAfter(attempts int) time.Duration {
	d := 5 * time.Minute << min(max(attempts-1, 0), 7)
	return min(d, 6*time.Hour)
}

// Run sends the reports owed now.
func (s *Scheduler) Run(ctx context.Context) {
	var channels v1.ChannelList
	if err := s.Client.List(ctx, &channels); err != nil {
		s.Log.Error(err, "listing Channels for reports")
		return
	}
	now := s.Clock.Now()
	// A project's report for a period is written once however many of
	// its Channels are owed it.
	written := map[store.ReportKey]notify.Report{}
	for i := range channels.Items {
		ch := &channels.Items[i]
		if ch.Spec.Kind != v1.ChannelEmail || ch.Spec.Email == nil || !ch.DeletionTimestamp.IsZero() {
			continue
		}
		period, ok := Last(ch.Spec.Email.Reports, now.Add(-Settle))
		// A Channel's first report is for the first period that ends
		// after it was created: none for the weeks before it.
		if !ok || !period.To.After(ch.CreationTimestamp.Time) {
			continue
		}
		key := store.ReportKey{Namespace: ch.Namespace, Channel: ch.Name, Period: period.ID}
		if err := s.send(ctx, ch, key, period, now, written); err != nil {
			s.Log.Error(err, "sending a report", "namespace", ch.Namespace, "channel", ch.Name, "period", period.ID)
		}
	}
}

func (s *Scheduler) send(ctx context.Context, ch *v1.Channel, key store.ReportKey, period Period, now time.Time,
	written map[store.ReportKey]notify.Report) error {
	owed, err := s.Store.ReportOwed(ctx, key, now)
	if err != nil || !owed {
		return err
	}
	project := store.ReportKey{Namespace: key.Namespace, Period: key.Period}
	r, ok := written[project]
	if !ok {
		if r, err = s.write(ctx, ch.Namespace, period); err == nil {
			written[project] = r
		}
	}
	if err == nil {
		err = s.Send(ctx, ch, r)
	}
	if err != nil {
		if ferr := s.Store.ReportFailed(ctx, key, now, retryAfter, err); ferr != nil {
			return fmt.Errorf("%w (and %w)", err, ferr)
		}
		return err
	}
	s.Log.Info("report sent", "namespace", ch.Namespace, "channel", ch.Name, "period", key.Period)
	return s.Store.ReportSent(ctx, key, now)
}

// write is the project's report for the period: each check's uptime from
// its flips, and its runs' figures over the period.
func (s *Scheduler) write(ctx context.Context, namespace string, period Period) (notify.Report, error) {
	// The window [From, To - 1µs]: Summarize's windows hold their end.
	last := period.To.Add(-time.Microsecond)
	stats, err := s.Checks.RunStatsIn(ctx, namespace, last, last.Sub(period.From), true)
	if err != nil {
		return notify.Report{}, err
	}
	project, err := s.Checks.Project(ctx, namespace)
	if err != nil {
		return notify.Report{}, err
	}
	now := s.Clock.Now()
	p := Project{Namespace: namespace, Period: period, URL: s.URL}
	for i, c := range project.Checks {
		flips, err := s.Checks.Flips(ctx, c)
		if err != nil {
			return notify.Report{}, err
		}
		facts := project.Observed(i).Facts
		row, ok := Uptime(uptime.Check{Created: c.CreationTimestamp.Time, Flips: flips, Status: project.View(i, now).Status,
			PausedAt: facts.PausedAt, ResumedAt: facts.ResumedAt}, period.From, period.To)
		if !ok {
			continue // created after the period
		}
		row.Name, row.Runs = checks.DisplayName(c), stats[c.UID]
		p.Checks = append(p.Checks, row)
	}
	return Write(p)
}
