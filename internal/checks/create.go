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
// places. A turn does not wait for the cache to show this replica's own
// creations (it counts them itself); it waits only after another replica
// created.
func (d *Door) Create(ctx context.Context, cr Creation) (*v1.Check, bool, error) {
	c, created, err := d.createInTurn(ctx, cr)
	if created {
		// Outside the turn: the next creation need not wait for it.
		d.awaitVersion(ctx, c)
	}
	return c, created, err
}

func (d *Door) createInTurn(ctx context.Context, cr Creation) (c *v1.Check, created bool, err error) {
	lock, err := d.store.LockProject(ctx, cr.Namespace)
	if err != nil {
		return nil, false, &TurnError{Err: err}
	}
	defer func() {
		version := ""
		if created {
			version = c.ResourceVersion
		}
		// The check exists whatever happens here: failing the request
		// would make its client create another. A lost record lets the
		// next turn count from a cache that may lack this check.
		if err := lock.Release(version); err != nil {
			d.log.Error(err, "recording a check creation", "namespace", cr.Namespace)
		}
	}()
	checks, err := d.turnChecks(ctx, cr.Namespace, lock.LastCreate)
	if err != nil {
		return nil, false, &TurnError{Err: fmt.Errorf("listing the project's checks: %w", err)}
	}
	if cr.Existing != nil {
		if existing := Oldest(checks, cr.Existing); existing != nil {
			return existing.DeepCopy(), false, nil
		}
	}
	if limit := d.checkLimit(cr.Namespace); len(checks) >= limit {
		return nil, false, &LimitError{Limit: limit}
	}
	id := uuid.NewString()
	spec := *cr.Spec.DeepCopy()
	spec.UUID = id
	if cr.AllChannels {
		spec.Channels = slices.Clone(d.ChannelNames(cr.Namespace))
	}
	base := spec.Slug
	if base == "" {
		base = spec.Name
	}
	c = &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: ObjectName(base, id)}, Spec: spec}
	if err := d.client.Create(ctx, c); err != nil {
		return nil, false, err
	}
	d.pending.add(c)
	return c, true, nil
}

// catchUp bounds a turn's wait for the cache to show another replica's
// creation, before it asks the API server.
const catchUp = 2 * time.Second

// turnChecks are the project's checks as a turn counts them: the cache's
// and this replica's own creations it does not show yet. After another
// replica's creation (last, not this replica's), the cache must have caught
// up with it first; when it does not in time (a slow watch, or the check is
// gone and no later event has come), the API server is asked.
func (d *Door) turnChecks(ctx context.Context, namespace, last string) ([]*v1.Check, error) {
	if last != "" && !d.pending.madeLast(namespace, last) && !d.watch.caught(ctx, last, catchUp) {
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
	for _, c := range own {
		if !slices.ContainsFunc(items, func(i *v1.Check) bool { return i.UID == c.UID }) {
			items = append(slices.Clip(items), c)
		}
	}
	return items, nil
}

// pendingFor bounds how long a creation is counted while the cache does not
// show it: a check deleted before the cache saw it never shows.
const pendingFor = time.Minute

// pending are the checks this replica created that the cache has not shown
// yet, and the last creation it made in each project.
type pending struct {
	mu     sync.Mutex
	checks map[string]map[types.UID]pendingCheck
	last   map[string]string // namespace -> resourceVersion
}

type pendingCheck struct {
	check *v1.Check
	at    time.Time
}

func (p *pending) add(c *v1.Check) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.checks == nil {
		p.checks, p.last = map[string]map[types.UID]pendingCheck{}, map[string]string{}
	}
	if p.checks[c.Namespace] == nil {
		p.checks[c.Namespace] = map[types.UID]pendingCheck{}
	}
	p.checks[c.Namespace][c.UID] = pendingCheck{check: c, at: time.Now()}
	p.last[c.Namespace] = c.ResourceVersion
}

// seen: the cache shows c (or its deletion).
func (p *pending) seen(c *v1.Check) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ns := p.checks[c.Namespace]; ns != nil {
		delete(ns, c.UID)
		if len(ns) == 0 {
			delete(p.checks, c.Namespace)
		}
	}
}

// madeLast reports whether this replica made the project's creation at
// resourceVersion version.
func (p *pending) madeLast(namespace, version string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return version != "" && p.last[namespace] == version
}

// in are the project's pending checks.
func (p *pending) in(namespace string) []*v1.Check {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*v1.Check
	for uid, pc := range p.checks[namespace] {
		if time.Since(pc.at) > pendingFor {
			delete(p.checks[namespace], uid)
			continue
		}
		out = append(out, pc.check)
	}
	return out
}
