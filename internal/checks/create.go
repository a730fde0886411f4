package checks

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/store"
)

// Creation is a check to create through the Management API or a slug
// ping's ?create=1, within its project's check limit.
type Creation struct {
	Namespace string
	// Spec is the new check's spec; the Door gives it a fresh UUID.
	Spec v1.CheckSpec
	// Existing, when set, picks a check of the project to answer with
	// instead of creating one (the API's unique fields, a slug ping's
	// slug): the oldest it accepts. It is asked in the same turn as the
	// limit, so requests racing to create the same check create one.
	Existing func(*v1.Check) bool
	// AllChannels assigns every Channel the project has when the check is
	// created, as the reference does for a check a ping creates.
	AllChannels bool
}

// LimitError: the project has reached its check limit.
type LimitError struct{ Limit int }

func (e *LimitError) Error() string {
	return fmt.Sprintf("the project has reached its limit of %d checks", e.Limit)
}

// TurnError: the project's creation turn could not be taken, or its checks
// not listed (a lock wait that timed out, the database or API server
// away). It is transient: the client may try again.
type TurnError struct{ Err error }

func (e *TurnError) Error() string { return "taking the project's creation turn: " + e.Err.Error() }
func (e *TurnError) Unwrap() error { return e.Err }

// Create creates the check cr describes, or finds the existing one it
// names; created says which. Errors: *LimitError, *TurnError, or the API
// server's own (a rejected spec, an outage), as they are.
//
// Counting a project's checks and then creating one is a race: a hundred
// clients creating at once all count nineteen, and a second replica's
// creations are not in this one's cache at all. So creations in a project
// take turns, on every replica, through the ping store's project lock
// (store.LockProject), and each turn counts what its predecessors created:
// a limit of 20 leaves exactly 20 checks, however many race for the last
// places. A turn counts this replica's own creations the cache does not
// show yet itself, and waits for the cache only after another replica
// created. Where this process is the only one that creates (the embedded
// store), a turn only reserves its place and the API server's create runs
// after it, beside the other turns' creates; where replicas share the
// store, the turn lasts until its check exists, so the next one, on any
// replica, can count it.
func (d *Door) Create(ctx context.Context, cr Creation) (*v1.Check, bool, error) {
	leave, err := d.share(ctx, cr.Namespace)
	if err != nil {
		return nil, false, err
	}
	defer leave()
	for {
		c, created, wait, err := d.createInTurn(ctx, cr)
		if wait != nil {
			// Another turn is creating the check this one names: its
			// outcome decides, in the next turn.
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, false, &TurnError{Err: ctx.Err()}
			}
		}
		if created {
			// Outside the turn: the next creation need not wait for it.
			d.awaitVersion(ctx, c)
		}
		return c, created, err
	}
}

// createInTurn takes one turn; wait, when not nil, is an in-flight
// creation that the turn found Existing names, and is closed when it ends.
func (d *Door) createInTurn(ctx context.Context, cr Creation) (c *v1.Check, created bool, wait <-chan struct{}, err error) {
	lock, err := d.store.LockProject(ctx, cr.Namespace)
	if err != nil {
		return nil, false, nil, &TurnError{Err: err}
	}
	version := "" // the resourceVersion of the check created in the turn
	released := false
	release := func() {
		if released {
			return
		}
		released = true
		// The check exists whatever happens here: failing the request
		// would make its client create another. A lost record lets the
		// next turn count from a cache that may lack this check.
		if err := lock.Release(version); err != nil {
			d.log.Error(err, "recording a check creation", "namespace", cr.Namespace)
		}
	}
	defer release()
	checks, err := d.turnChecks(ctx, cr.Namespace, lock)
	if err != nil {
		return nil, false, nil, &TurnError{Err: fmt.Errorf("listing the project's checks: %w", err)}
	}
	if cr.Existing != nil {
		if existing := Oldest(checks, cr.Existing); existing != nil {
			if r := d.pending.reservation(existing); r != nil {
				return nil, false, r, nil
			}
			return existing.DeepCopy(), false, nil, nil
		}
	}
	if limit := d.checkLimit(cr.Namespace); len(checks) >= limit {
		return nil, false, nil, &LimitError{Limit: limit}
	}
	var channels []string
	if cr.AllChannels {
		// The channels the API lists at this instant (the cache's), not
		// the index's, which its event handler fills a moment later: a
		// client that has just seen a channel listed gets it assigned.
		list, err := d.ProjectChannels(ctx, cr.Namespace)
		if err != nil {
			return nil, false, nil, fmt.Errorf("listing the project's channels: %w", err)
		}
		for i := range list {
			channels = append(channels, list[i].Name)
		}
		slices.Sort(channels)
	}
	c = d.newCheck(cr, channels)
	if lock.Local {
		// The reservation is a copy: the create below writes into c.
		reserved := c.DeepCopy()
		done := d.pending.reserve(reserved)
		release()
		if err := d.client.Create(ctx, c); err != nil {
			d.pending.settle(reserved, done, nil)
			return nil, false, nil, err
		}
		d.pending.settle(reserved, done, c.DeepCopy())
		return c, true, nil, nil
	}
	if err := d.client.Create(ctx, c); err != nil {
		return nil, false, nil, err
	}
	d.pending.add(c)
	version = c.ResourceVersion
	return c, true, nil, nil
}

// newCheck is the Check cr describes, with a fresh UUID and a name from
// its slug or name; with cr.AllChannels, channels are its channels.
func (d *Door) newCheck(cr Creation, channels []string) *v1.Check {
	id := uuid.NewString()
	spec := *cr.Spec.DeepCopy()
	spec.UUID = id
	if cr.AllChannels {
		spec.Channels = channels
	}
	base := spec.Slug
	if base == "" {
		base = spec.Name
	}
	return &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: ObjectName(base, id)}, Spec: spec}
}

// catchUp bounds a turn's wait for the cache to show another replica's
// creation, before it asks the API server.
const catchUp = 2 * time.Second

// turnChecks are the project's checks as a turn counts them: the cache's,
// and this replica's own creations it does not show yet (in flight too).
// After another replica's creation (the lock's last, not this replica's),
// the cache must have caught up with it first; when it does not in time (a
// slow watch, or the check is gone and no later event has come), the API
// server is asked.
func (d *Door) turnChecks(ctx context.Context, namespace string, lock *store.ProjectLock) ([]*v1.Check, error) {
	last := lock.LastCreate
	if !lock.Local && last != "" && !d.pending.madeLast(namespace, last) && !d.watch.caught(ctx, last, catchUp) {
		var list v1.CheckList
		if err := d.live.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return nil, err
		}
		items := make([]*v1.Check, len(list.Items))
		for i := range list.Items {
			items[i] = &list.Items[i]
		}
		return items, nil
	}
	// Pending first: a check the index shows after this read went out of
	// pending before, and is in one or the other.
	own := d.pending.in(namespace)
	items := d.InProject(namespace)
	if len(own) == 0 {
		return items, nil
	}
	shown := make(map[types.UID]bool, len(items))
	for _, c := range items {
		shown[c.UID] = true
	}
	items = slices.Clip(items)
	for _, c := range own {
		if c.UID == "" || !shown[c.UID] {
			items = append(items, c)
		}
	}
	return items, nil
}

// pendingFor bounds how long a creation is counted while the cache does not
// show it: a check deleted before the cache saw it never shows.
const pendingFor = time.Minute

// pending are the checks this replica created that the cache has not shown
// yet, those whose creation is in flight (reserved: no UID yet), and the
// last creation it made in each project.
type pending struct {
	mu       sync.Mutex
	checks   map[string]map[*v1.Check]pendingCheck
	byUID    map[types.UID]*v1.Check
	last     map[string]string // namespace -> resourceVersion
	inFlight map[*v1.Check]chan struct{}
}

type pendingCheck struct {
	check *v1.Check
	at    time.Time
}

func (p *pending) init() {
	if p.checks == nil {
		p.checks, p.byUID = map[string]map[*v1.Check]pendingCheck{}, map[types.UID]*v1.Check{}
		p.last, p.inFlight = map[string]string{}, map[*v1.Check]chan struct{}{}
	}
}

func (p *pending) put(c *v1.Check) {
	if p.checks[c.Namespace] == nil {
		p.checks[c.Namespace] = map[*v1.Check]pendingCheck{}
	}
	p.checks[c.Namespace][c] = pendingCheck{check: c, at: time.Now()}
}

func (p *pending) drop(c *v1.Check) {
	if ns := p.checks[c.Namespace]; ns != nil {
		delete(ns, c)
		if len(ns) == 0 {
			delete(p.checks, c.Namespace)
		}
	}
}

// add counts c, created, until the cache shows it.
func (p *pending) add(c *v1.Check) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	p.put(c)
	p.byUID[c.UID] = c
	p.last[c.Namespace] = c.ResourceVersion
}

// reserve counts c while it is being created; done is closed when
// settle says how it went.
func (p *pending) reserve(c *v1.Check) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.init()
	done := make(chan struct{})
	p.put(c)
	p.inFlight[c] = done
	return done
}

// settle ends a reservation: the check created takes its place until the
// cache shows it (nil: its creation failed, and it is forgotten).
func (p *pending) settle(reserved *v1.Check, done chan struct{}, created *v1.Check) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inFlight, reserved)
	p.drop(reserved)
	close(done)
	if created != nil {
		p.put(created)
		p.byUID[created.UID] = created
		p.last[created.Namespace] = created.ResourceVersion
	}
}

// reservation is the end of c's creation when it is in flight, else nil.
func (p *pending) reservation(c *v1.Check) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if done, ok := p.inFlight[c]; ok {
		return done
	}
	return nil
}

// seen: the cache shows c (or its deletion).
func (p *pending) seen(c *v1.Check) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if own := p.byUID[c.UID]; own != nil {
		delete(p.byUID, c.UID)
		p.drop(own)
	}
}

// madeLast reports whether this replica made the project's creation at
// resourceVersion version.
func (p *pending) madeLast(namespace, version string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return version != "" && p.last[namespace] == version
}

// in are the project's pending checks, in flight or created.
func (p *pending) in(namespace string) []*v1.Check {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*v1.Check
	for c, pc := range p.checks[namespace] {
		if _, flying := p.inFlight[c]; !flying && time.Since(pc.at) > pendingFor {
			p.drop(c)
			delete(p.byUID, c.UID)
			continue
		}
		out = append(out, c)
	}
	return out
}
