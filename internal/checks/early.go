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
// and the leader's the ones other replicas took (RecordOthersEarly; the
// rules are store/early.go's).

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

// recordEarly records the early pings, round after round, until none is
// left, the last round with new ones shut out; then the Door is live.
// Called once the Door's handlers have synced, before it is ready. On a
// store replicas share, it records the ones this replica took; the
// leader records the others' (RecordOthersEarly).
func (d *Door) recordEarly(ctx context.Context) {
	if !d.early.on {
		return
	}
	q := store.EarlyQuery{Scope: store.EveryReplica, Limit: earlyBatch}
	if d.store.Shared() {
		q.Scope = store.ThisReplica
	}
	gone := func(store.EarlyPing) bool { return true } // the cache has just read every Check
	recorded := 0
	for ctx.Err() == nil {
		pings, n, err := d.earlyRound(ctx, q, gone)
		recorded += n
		if err == nil && len(pings) == 0 {
			d.early.mu.Lock()
			pings, n, err = d.earlyRound(ctx, q, gone)
			recorded += n
			if err == nil && len(pings) == 0 {
				d.early.live = true
				d.early.mu.Unlock()
				if recorded > 0 {
					d.log.Info("recorded the pings that came before the cache was ready", "pings", recorded)
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

// unknownEarlyKept is how long the leader keeps an early ping of a check
// its cache does not hold: one created a moment before the ping may not
// be in the cache yet, but no cache lags this far.
const unknownEarlyKept = 10 * time.Minute

// RecordOthersEarly records the early pings other replicas took, oldest
// first: a replica that starts while another serves, or dies before its
// cache was ready, leaves them to the leader, whose deadline loop calls
// this before it looks for due checks (which leave alone the checks whose
// early pings wait). It returns how many it recorded.
func (d *Door) RecordOthersEarly(ctx context.Context) (int, error) {
	if !d.early.on {
		return 0, nil
	}
	d.awaitReady()
	q := store.EarlyQuery{Scope: store.OtherReplicas, Limit: earlyBatch}
	long := d.clock.Now().Add(-unknownEarlyKept)
	gone := func(e store.EarlyPing) bool { return e.Ping.At.Before(long) }
	recorded := 0
	for {
		pings, n, err := d.earlyRound(ctx, q, gone)
		recorded += n
		if err != nil || len(pings) < q.Limit {
			if recorded > 0 {
				d.log.Info("recorded the pings another replica took before it had read its Checks", "pings", recorded)
			}
			return recorded, err
		}
		q.After = pings[len(pings)-1]
	}
}

// earlyRound reads the oldest early pings q names and records them,
// dropping those of checks the cache does not hold that gone says are
// gone. It returns the pings it read, and how many of them it recorded.
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
				rec, err := d.RecordPing(ctx, k.check, p)
				if err != nil {
					errs[i] = err
					return
				}
				if !rec.Taken {
					counts[i]++
				}
			}
		})
	}
	wg.Wait()
	recorded := 0
	for i, err := range errs {
		if err != nil {
			return nil, 0, err
		}
		recorded += counts[i]
	}
	return pings, recorded, nil
}
