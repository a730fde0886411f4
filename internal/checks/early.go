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
// Called once the Door's handlers have synced, before it is ready.
func (d *Door) recordEarly(ctx context.Context) {
	if !d.early.on {
		return
	}
	recorded := 0
	for ctx.Err() == nil {
		n, err := d.earlyRound(ctx)
		recorded += n
		if err == nil && n == 0 {
			d.early.mu.Lock()
			n, err = d.earlyRound(ctx)
			recorded += n
			if err == nil && n == 0 {
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

// earlyRound records the oldest early pings, and drops those whose check
// is gone. It returns how many it took.
func (d *Door) earlyRound(ctx context.Context) (int, error) {
	pings, err := d.store.EarlyPings(ctx, earlyBatch)
	if err != nil || len(pings) == 0 {
		return 0, err
	}
	type kept struct {
		ping  store.EarlyPing
		check *v1.Check
	}
	var gone []store.EarlyPing
	lanes := make([][]kept, earlyWorkers)
	seed := maphash.MakeSeed()
	for _, e := range pings {
		c := d.index.get(e.Check)
		if c == nil {
			gone = append(gone, e)
			continue
		}
		lane := maphash.String(seed, string(e.Check)) % earlyWorkers
		lanes[lane] = append(lanes[lane], kept{e, c})
	}
	if len(gone) > 0 {
		if err := d.store.DropEarly(ctx, gone...); err != nil {
			return 0, err
		}
		d.log.Info("dropped early pings of checks deleted meanwhile", "pings", len(gone))
	}
	errs := make([]error, earlyWorkers)
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
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return 0, err
		}
	}
	return len(pings), nil
}
