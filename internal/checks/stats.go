package checks

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/runstats"
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
	return runstats.Summarize(h, now, window, obs.NPings > int64(d.store.RunLimit())), nil
}

// RunStatsIn are the run statistics of every check of the project that
// the store knows, by UID, over the window that ends now; with a trend
// when asked (it reads twice as far back).
func (d *Door) RunStatsIn(ctx context.Context, namespace string, window time.Duration, trend bool) (map[types.UID]runstats.Stats, error) {
	now := d.clock.Now()
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
	limit := int64(d.store.RunLimit())
	out := make(map[types.UID]runstats.Stats, len(observed))
	for uid, obs := range observed {
		out[uid] = runstats.Summarize(histories[uid], now, window, obs.NPings > limit)
	}
	return out, nil
}

// RunStatsOf are the run statistics of these checks of one project, by
// UID, over the window that ends now, without a trend: what a board's page
// shows, read for its rows alone.
func (d *Door) RunStatsOf(ctx context.Context, namespace string, cs []*v1.Check, window time.Duration) (map[types.UID]runstats.Stats, error) {
	now := d.clock.Now()
	observed, err := d.store.ChecksIn(ctx, namespace)
	if err != nil {
		return nil, err
	}
	uids := make([]types.UID, len(cs))
	for i, c := range cs {
		uids[i] = c.UID
	}
	histories, err := d.store.HistoriesOf(ctx, uids, now.Add(-window))
	if err != nil {
		return nil, err
	}
	limit := int64(d.store.RunLimit())
	out := make(map[types.UID]runstats.Stats, len(cs))
	for _, uid := range uids {
		out[uid] = runstats.Summarize(histories[uid], now, window, observed.Of(uid).NPings > limit)
	}
	return out, nil
}
