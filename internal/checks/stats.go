package checks

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/runstats"
	"github.com/vigil-operator/vigil/internal/store"
)

// RunStats are c's run statistics over the window that ends now.
func (d *Door) RunStats(ctx context.Context, c *v1.Check, window time.Duration) (runstats.Stats, error) {
	now := d.clock.Now()
	obs, _, err := d.store.Check(ctx, c.UID)
	if err != nil {
		return runstats.Stats{}, err
	}
	h, err := d.store.History(ctx, c.UID, now.Add(-2*window))
	if err != nil {
		return runstats.Stats{}, err
	}
	return runstats.Summarize(withCounts(h, obs.RunCounts), now, window), nil
}

// RunStatsIn are the run statistics of every check of the project that
// the store knows, by UID, over the window that ends at now (a board's
// instant, or a report's period end); with a trend when asked (it reads
// twice as far back).
func (d *Door) RunStatsIn(ctx context.Context, namespace string, now time.Time, window time.Duration, trend bool) (map[types.UID]runstats.Stats, error) {
	observed, err := d.store.ChecksIn(ctx, namespace)
	if err != nil {
		return nil, err
	}
	since := now.Add(-window)
	if trend {
		since = since.Add(-window)
	}
	histories, err := d.store.HistoriesIn(ctx, namespace, since)
	if err != nil {
		return nil, err
	}
	out := make(map[types.UID]runstats.Stats, observed.Len())
	for uid, obs := range observed.All() {
		out[uid] = runstats.Summarize(withCounts(histories[uid], obs.RunCounts), now, window)
	}
	return out, nil
}

// RunStatsOf are the run statistics of these checks, by UID, over the
// window that ends now, without a trend: what a board's page shows, read
// for its rows alone. counts are the checks' run counts from the observed
// state the caller already holds.
func (d *Door) RunStatsOf(ctx context.Context, counts map[types.UID]store.RunCounts, window time.Duration) (map[types.UID]runstats.Stats, error) {
	now := d.clock.Now()
	uids := make([]types.UID, 0, len(counts))
	for uid := range counts {
		uids = append(uids, uid)
	}
	histories, err := d.store.HistoriesOf(ctx, uids, now.Add(-window))
	if err != nil {
		return nil, err
	}
	out := make(map[types.UID]runstats.Stats, len(counts))
	for uid, n := range counts {
		out[uid] = runstats.Summarize(withCounts(histories[uid], n), now, window)
	}
	return out, nil
}

// withCounts completes a history with what the check's row keeps: how far
// back its runs are whole, and its last success however old.
func withCounts(h store.History, n store.RunCounts) store.History {
	h.Dropped, h.LastSuccess = n.Dropped, n.LastSuccess
	return h
}
