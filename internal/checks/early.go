package checks

import (
	"context"
	"hash/maphash"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// Early pings: a starting manager's cache of Checks takes seconds to fill
// (36 s for 100,000 Checks, measured; most of it decoding them), while the
// ping store is open at once. Until the Door is ready, a ping that names a
// UUID the store knows a holder of is kept in the store (store.EarlyPing)
// and acknowledged; when the cache is ready, the Door records each as an
// ordinary ping, dated when it came, before anything else reads the Door:
// the deadline loop judges no check before its early pings are recorded.
// On a store replicas share, the Door records the ones its replica took,
// and once whole, what the others leave (keepRecordingEarly; the rules
// are store/early.go's).

// early is the Door's side of early pings.
type early struct {
	// on is whether the Door keeps early pings (Options.EarlyPings).
	on bool
	// kind applies a check's rules to a ping as it came (Options.EarlyKind).
	kind func(c *v1.Check, p store.Ping) monitor.PingKind
	// mu is held for reading while a ping is kept, and for writing while
	// the last of them are recorded and live is set, so that none is kept
	// after the last look.
	mu   sync.RWMutex
	live bool
}

// EarlyHold is a hold on the Door's early path for one ping: Record keeps
// it, and Release lets the Door become ready.
type EarlyHold struct {
	d         *Door
	check     types.UID
	namespace string
}

// HoldEarly returns a hold when the Door is not ready yet and the store
// knows which check holds uuid: the ping can be kept and acknowledged now.
// ok is false when the ping must take the ordinary path (which waits until
// the Door is ready). The caller must Release a hold.
func (d *Door) HoldEarly(ctx context.Context, uuid string) (hold *EarlyHold, ok bool, err error) {
	if !d.early.on {
		return nil, false, nil
	}
	d.early.mu.RLock()
	if d.early.live {
		d.early.mu.RUnlock()
		return nil, false, nil
	}
	uid, namespace, ok, err := d.store.Holder(ctx, uuid)
	if err != nil || !ok {
		d.early.mu.RUnlock()
		return nil, false, err
	}
	return &EarlyHold{d: d, check: uid, namespace: namespace}, true, nil
}

// Record keeps p for the check, durable when it returns.
func (h *EarlyHold) Record(ctx context.Context, p store.Ping) error {
	return h.d.store.RecordEarly(ctx, store.EarlyPing{Check: h.check, Namespace: h.namespace, Ping: p})
}

// Release ends the hold.
func (h *EarlyHold) Release() { h.d.early.mu.RUnlock() }

// earlyBatch is how many early pings one round records.
const earlyBatch = 1000

// earlyWorkers record a round's pings at once (each check's in order), so
// that they share the store's transactions.
const earlyWorkers = 16

// recordEarly records the early pings, pass after pass, until a pass
// removes none, the last pass with new ones shut out; then the Door is
// live. Called once the Door's handlers have synced, before it is ready.
// On a store replicas share, it records the ones this replica took, and
// then keeps recording what the others leave (keepRecordingEarly).
func (d *Door) recordEarly(ctx context.Context) {
	if !d.early.on {
		return
	}
	q := store.EarlyQuery{Scope: store.EveryReplica}
	if d.store.Shared() {
		q.Scope = store.ThisReplica
	}
	removed := 0
	for ctx.Err() == nil {
		n, err := d.earlyPass(ctx, q)
		removed += n
		if err == nil && n == 0 {
			d.early.mu.Lock()
			n, err = d.earlyPass(ctx, q)
			removed += n
			if err == nil && n == 0 {
				d.early.live = true
				d.early.mu.Unlock()
				if removed > 0 {
					d.log.Info("recorded the pings that came before the cache was ready", "pings", removed)
				}
				if d.store.Shared() {
					go d.keepRecordingEarly(ctx)
				}
				return
			}
			d.early.mu.Unlock()
		}
		if err != nil {
			// The store does not answer: the early pings wait in it, and
			// so does everything that waits for the Door.
			d.log.Error(err, "recording early pings; trying again")
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// earlyEvery is how often a whole replica of a shared store records the
// early pings left there.
const earlyEvery = 250 * time.Millisecond

// keepRecordingEarly records, every earlyEvery until ctx ends, the early
// pings left in a store replicas share: those of a replica that starts
// while this one serves, or that died before its cache was ready, and
// those of checks a cache did not hold yet. Every whole replica does, not
// only the leader: a whole replica's own pings would otherwise judge a
// check late (a ping records a deadline missed before it) while an
// earlier ping of it waits for a replica that is not whole yet. Two
// replicas recording one record it once (store/early.go).
func (d *Door) keepRecordingEarly(ctx context.Context) {
	tick := time.NewTicker(earlyEvery)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := d.earlyPass(ctx, store.EarlyQuery{Scope: store.EveryReplica})
		if err != nil && !failing && ctx.Err() == nil {
			d.log.Error(err, "recording the pings other replicas took before their caches were ready; trying again")
		}
		failing = err != nil
		if n > 0 {
			d.log.Info("recorded the pings another replica took before its cache was ready", "pings", n)
		}
	}
}

// unknownEarlyKept is how long an early ping of a check the cache does
// not hold is kept on a store replicas share: one created a moment before
// the ping may not be in this replica's cache yet, but no cache lags this
// far. On the embedded store, whose cache has just read every Check, it
// is dropped at once.
const unknownEarlyKept = 10 * time.Minute

// earlyPass records every early ping q names, oldest first, and drops
// those of checks gone. It returns how many it removed from the store
// (recorded, found recorded by another replica, or dropped): those of
// checks the cache does not hold yet stay.
func (d *Door) earlyPass(ctx context.Context, q store.EarlyQuery) (int, error) {
	q.Limit = earlyBatch
	long := d.clock.Now().Add(-unknownEarlyKept)
	gone := func(e store.EarlyPing) bool { return !d.store.Shared() || e.Ping.At.Before(long) }
	removed := 0
	for {
		pings, n, err := d.earlyRound(ctx, q, gone)
		removed += n
		if err != nil || len(pings) < q.Limit {
			return removed, err
		}
		q.After = pings[len(pings)-1]
	}
}

// earlyRound reads the oldest early pings q names and records them,
// dropping those of checks the cache does not hold that gone says are
// gone. It returns the pings it read, and how many of them it removed.
func (d *Door) earlyRound(ctx context.Context, q store.EarlyQuery, gone func(store.EarlyPing) bool) ([]store.EarlyPing, int, error) {
	pings, err := d.store.EarlyPings(ctx, q)
	if err != nil || len(pings) == 0 {
		return pings, 0, err
	}
	type kept struct {
		ping  store.EarlyPing
		check *v1.Check
	}
	var dropped []store.EarlyPing
	lanes := make([][]kept, earlyWorkers)
	seed := maphash.MakeSeed()
	for _, e := range pings {
		c := d.index.get(e.Check)
		if c == nil {
			if gone(e) {
				dropped = append(dropped, e)
			}
			continue
		}
		lane := maphash.String(seed, string(e.Check)) % earlyWorkers
		lanes[lane] = append(lanes[lane], kept{e, c})
	}
	if len(dropped) > 0 {
		if err := d.store.DropEarly(ctx, dropped...); err != nil {
			return nil, 0, err
		}
		d.log.Info("dropped early pings of checks deleted meanwhile", "pings", len(dropped))
	}
	errs := make([]error, earlyWorkers)
	counts := make([]int, earlyWorkers)
	var wg sync.WaitGroup
	for i, lane := range lanes {
		wg.Go(func() {
			for _, k := range lane {
				p := k.ping.Ping
				if d.early.kind != nil {
					p.Kind = d.early.kind(k.check, p)
				}
				p.Early, p.Noted = k.ping.ID, d.clock.Now()
				if _, err := d.RecordPing(ctx, k.check, p); err != nil {
					errs[i] = err
					return
				}
				counts[i]++
			}
		})
	}
	wg.Wait()
	removed := len(dropped)
	for i, err := range errs {
		if err != nil {
			return nil, 0, err
		}
		removed += counts[i]
	}
	return pings, removed, nil
}
