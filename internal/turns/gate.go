package turns

import (
	"context"
	"errors"
	"sync"
)

// ErrQueueFull: the tenant already has as many waiting as a Gate lets one
// tenant have; the caller may try again later.
var ErrQueueFull = errors.New("too many requests of this tenant waiting")

// Gate lets at most Slots holders in at once, and the tenants waiting for
// a slot take turns: a tenant with a hundred waiting delays another
// tenant's next one by one slot's holding, not a hundred. One tenant may
// have at most MaxWaiting waiting; past it, Enter refuses at once with
// ErrQueueFull (zero or less: no bound). The zero Gate lets one in at a
// time; set the fields before the first Enter.
type Gate struct {
	Slots, MaxWaiting int

	mu      sync.Mutex
	busy    int
	queue   Queue[*waiter]
	waiting map[string]int // per tenant, not counting those that gave up
}

// waiter is one Enter waiting for a slot.
type waiter struct {
	tenant  string
	granted chan struct{} // closed when the slot is handed over
	gaveUp  bool          // its context ended first: skipped when its turn comes
}

// Enter waits for a slot in tenant's turn, and returns the function that
// gives it back (call it once). It fails with ErrQueueFull when tenant
// has MaxWaiting waiting, or with ctx's error.
func (g *Gate) Enter(ctx context.Context, tenant string) (leave func(), err error) {
	g.mu.Lock()
	if g.queue.Len() == 0 && g.busy < max(g.Slots, 1) {
		g.busy++
		g.mu.Unlock()
		return g.leave, nil
	}
	if g.MaxWaiting > 0 && g.waiting[tenant] >= g.MaxWaiting {
		g.mu.Unlock()
		return nil, ErrQueueFull
	}
	w := &waiter{tenant: tenant, granted: make(chan struct{})}
	g.queue.Push(tenant, w)
	if g.waiting == nil {
		g.waiting = map[string]int{}
	}
	g.waiting[tenant]++
	g.mu.Unlock()

	select {
	case <-w.granted:
		return g.leave, nil
	case <-ctx.Done():
		g.mu.Lock()
		select {
		case <-w.granted: // handed over as the context ended: pass it on
			g.mu.Unlock()
			g.leave()
		default:
			w.gaveUp = true
			g.done(tenant)
			g.mu.Unlock()
		}
		return nil, ctx.Err()
	}
}

// leave gives a slot back: to the next waiter in turn, if any.
func (g *Gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w, ok := g.queue.Pop(); ok; _, w, ok = g.queue.Pop() {
		if !w.gaveUp {
			g.done(w.tenant)
			close(w.granted) // the slot stays busy: it is the waiter's now
			return
		}
	}
	g.busy--
}

// done counts a waiter of tenant that stopped waiting.
func (g *Gate) done(tenant string) {
	if g.waiting[tenant]--; g.waiting[tenant] <= 0 {
		delete(g.waiting, tenant)
	}
}

// Waiting is how many of tenant's Enters are waiting for a slot.
func (g *Gate) Waiting(tenant string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting[tenant]
}
