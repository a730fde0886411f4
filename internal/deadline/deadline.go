// Package deadline is the leader's clock: it finds the checks whose deadline
// (or due time) has come, with one indexed query of the ping store on a short
// loop, the way the reference's alert loop works, and has the store record
// what time did to them: a down flip at the deadline with its pending
// notifications, or grace. The monitoring core decides every transition.
//
// The loop also keeps the store in step with the Check objects: rows of
// checks deleted while no manager ran are found and forgotten when it
// starts, and periodically after. And it prunes old flips, and the rows
// that recorded which project held a key or check UUID once their hold has
// passed.
package deadline

import (
	"context"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/metrics"
	"github.com/vigil-operator/vigil/internal/store"
)

// FlipRetention is how long flips are kept (the reference keeps 90 days).
const FlipRetention = 90 * 24 * time.Hour

// batch bounds the checks one query finds and one transaction observes.
const batch = 1000

// Loop is the deadline loop, a leader-elected manager runnable.
type Loop struct {
	// Client reads Checks and Channels from the informer cache.
	Client client.Client
	// Reader reads Checks from the API server, to confirm that a check
	// the cache lacks is really gone before its rows are forgotten.
	Reader client.Reader
	Store  *store.Store
	// Checks records what time did to the due checks.
	Checks *checks.Door
	Clock  clock.WithTicker
	// Interval is how often the store is asked for due checks (default
	// 250 ms): a check is recorded down at most about this late.
	Interval time.Duration
	// Housekeeping is how often deleted checks are looked for, and flips
	// and passed holds pruned (default 1 min).
	Housekeeping time.Duration
	// OnDeleted is told of each check whose rows were forgotten.
	OnDeleted func(types.UID)
	Metrics   *metrics.Metrics
	Log       logr.Logger

	reported store.Absence // the last absence logged
	// ticking is closed once the loop's tickers are made (Ticking).
	ticking     chan struct{}
	tickingOnce sync.Once
}

// Ticking is closed once the loop's tickers are made. A ticker beats every
// Interval of the clock from the moment it is made, so a test that moves a
// fake clock by less than Interval (to see a deadline met to the
// microsecond) waits for it after a manager starts: a clock moved before
// would set the beats off the steps the test takes, and the loop would
// not look when it expects.
func (l *Loop) Ticking() <-chan struct{} { return l.ticks() }

// ticks is the channel Ticking returns, made on first use: the Loop is a
// struct literal, and a test may ask before the loop starts.
func (l *Loop) ticks() chan struct{} {
	l.tickingOnce.Do(func() { l.ticking = make(chan struct{}) })
	return l.ticking
}

// NeedLeaderElection: the leader owns time.
func (l *Loop) NeedLeaderElection() bool { return true }

// Start runs the loop until ctx ends.
func (l *Loop) Start(ctx context.Context) error {
	if l.Interval <= 0 {
		l.Interval = 250 * time.Millisecond
	}
	if l.Housekeeping <= 0 {
		l.Housekeeping = time.Minute
	}
	// The tickers first, then one pass, then the first housekeeping: a
	// clock set forward before the tickers were made (a fake clock, moved
	// by a test while a new manager starts) fires none until it moves
	// again, but the pass reads it after; a new leader records what fell
	// due before it led at once; and time that passes while housekeeping
	// runs (a while, on a large store) is time the next tick catches up.
	tick := l.Clock.NewTicker(l.Interval)
	defer tick.Stop()
	house := l.Clock.NewTicker(l.Housekeeping)
	defer house.Stop()
	measure := l.Clock.NewTicker(measureEvery)
	defer measure.Stop()
	close(l.ticks())
	l.tick(ctx)
	l.housekeep(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C():
			l.tick(ctx)
		case <-house.C():
			// Deadlines first: the time that made housekeeping due may
			// have made checks due too, and housekeeping (every check
			// listed, flips pruned) may take a while on a large store.
			l.tick(ctx)
			l.housekeep(ctx)
		case <-measure.C():
			l.measure(ctx)
		}
	}
}

// tick records what is due now, logging what failed. The heartbeat comes
// first: a pass after Vigil's absence applies it (store.Alive), and once a
// pass has observed everything due the absence is done with.
func (l *Loop) tick(ctx context.Context) {
	now := l.Clock.Now()
	err := l.Store.Alive(ctx, now)
	if err == nil {
		if a, ok := l.Store.Away(); ok && l.reported != a {
			l.reported = a
			l.Log.Info("Vigil was away: checks that fell due meanwhile get a fresh grace from its return",
				"from", a.From, "until", a.Until)
		}
		err = l.Tick(ctx, now)
	}
	if err == nil {
		err = l.Store.Swept(ctx, now)
	}
	if err != nil && ctx.Err() == nil {
		l.Log.Error(err, "recording deadlines")
	}
}

// Tick records what time has done by now to every check that is due.
func (l *Loop) Tick(ctx context.Context, now time.Time) error {
	for {
		due, err := l.Store.Due(ctx, now, batch)
		if err != nil {
			return err
		}
		targets := make([]*v1.Check, 0, len(due))
		var gone []store.Change
		for _, d := range due {
			c := &v1.Check{}
			err := l.Client.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, c)
			switch {
			case replaced(err, c, d.UID):
				gone = append(gone, d)
				continue
			case err != nil:
				return err
			}
			targets = append(targets, c)
		}
		if err := l.forgetGone(ctx, gone); err != nil {
			return err
		}
		if _, err := l.Checks.Observe(ctx, targets, now); err != nil {
			return err
		}
		if len(due) < batch {
			return nil
		}
	}
}

// replaced reports whether the object a Get found (c, or err) is not the
// check uid: none by that name, or another object re-created under it.
func replaced(err error, c *v1.Check, uid types.UID) bool {
	return apierrors.IsNotFound(err) || (err == nil && c.UID != uid)
}

// forgetGone forgets the checks the API server confirms are gone. The cache
// may simply not have seen a check yet (one a ping just created).
func (l *Loop) forgetGone(ctx context.Context, candidates []store.Change) error {
	var gone []types.UID
	for _, d := range candidates {
		c := &v1.Check{}
		err := l.Reader.Get(ctx, types.NamespacedName{Namespace: d.Namespace, Name: d.Name}, c)
		switch {
		case replaced(err, c, d.UID):
			gone = append(gone, d.UID)
		case err != nil:
			return err
		}
	}
	if len(gone) == 0 {
		return nil
	}
	if err := l.Store.Forget(ctx, gone...); err != nil {
		return err
	}
	for _, uid := range gone {
		l.Log.Info("forgot a deleted check's pings and flips", "uid", uid)
		if l.OnDeleted != nil {
			l.OnDeleted(uid)
		}
	}
	return nil
}

// housekeep forgets checks whose objects are gone (deleted while no manager
// ran, or whose deletion the controller missed), prunes old flips,
// ownership rows whose hold has passed and expired dashboard sessions, and
// measures the store. On PostgreSQL the leader alone does it, for every
// replica.
func (l *Loop) housekeep(ctx context.Context) {
	if err := l.collect(ctx); err != nil {
		l.Log.Error(err, "looking for deleted checks")
	}
	if err := l.Store.Prune(ctx, l.Clock.Now().Add(-FlipRetention)); err != nil {
		l.Log.Error(err, "pruning old flips")
	}
	if n, err := l.Store.PruneOwners(ctx, l.Clock.Now()); err != nil {
		l.Log.Error(err, "pruning key and UUID holds that have passed")
	} else if n > 0 {
		l.Log.V(1).Info("pruned key and UUID holds that have passed", "rows", n)
	}
	if n, err := l.Store.PruneSessions(ctx, l.Clock.Now()); err != nil {
		l.Log.Error(err, "pruning expired dashboard sessions")
	} else if n > 0 {
		l.Log.V(1).Info("pruned expired dashboard sessions", "rows", n)
	}
	l.measure(ctx)
}

// measureEvery is how often the store's size and the checks by state are
// measured for the metrics.
const measureEvery = 10 * time.Second

func (l *Loop) measure(ctx context.Context) {
	if size, err := l.Store.Size(ctx); err == nil {
		l.Metrics.SetStoreBytes(size)
	}
	l.Metrics.SetBodyBytes(l.Store.BodyBytes())
	if available, size, ok := l.Store.Volume(); ok {
		l.Metrics.SetStoreVolume(available, size)
	}
	if counts, err := l.Store.StateCounts(ctx); err == nil {
		l.Metrics.SetChecks(counts)
	}
	if oldest, err := l.Store.OldestPending(ctx); err == nil {
		age := time.Duration(0)
		if !oldest.IsZero() {
			age = l.Clock.Since(oldest)
		}
		l.Metrics.SetOldestPending(age)
	}
}

// collect forgets the rows of checks the cache does not hold, once the API
// server confirms they are gone.
func (l *Loop) collect(ctx context.Context) error {
	uids, err := l.Store.UIDs(ctx)
	if err != nil {
		return err
	}
	var list v1.CheckList
	if err := l.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	live := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		live[list.Items[i].UID] = true
	}
	var candidates []store.Change
	for _, uid := range uids {
		if live[uid] {
			continue
		}
		c, found, err := l.Store.Check(ctx, uid)
		if err != nil {
			return err
		}
		if found {
			candidates = append(candidates, store.Change{UID: uid, Namespace: c.Namespace, Name: c.Name})
		}
	}
	return l.forgetGone(ctx, candidates)
}
