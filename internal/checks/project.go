package checks

import (
	"context"
	"sync"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// Project is a project's checks, oldest first, each with what the ping
// store holds of it and its parsed spec: what a list, a Prometheus scrape,
// a badge, a board or a report reads of every check. It never changes once
// made; a view of its checks is computed at the instant asked for.
type Project struct {
	// Checks are the project's checks, oldest first; read only.
	Checks   []*v1.Check
	rows     []projectRow // Checks[i]'s is rows[i]
	observed store.Observed
}

type projectRow struct {
	obs  *store.Check // nil: the store has not seen the check
	spec *parsed
}

// Observed is what the ping store holds of Checks[i] (the zero Check for
// one it has not seen).
func (p *Project) Observed(i int) store.Check {
	if o := p.rows[i].obs; o != nil {
		return *o
	}
	return store.Check{}
}

// View is Checks[i] at now, as Door.View computes it.
func (p *Project) View(i int, now time.Time) View {
	return viewOf(p.Checks[i], p.rows[i].obs, p.rows[i].spec, now)
}

// Config is Checks[i]'s spec parsed, as Door.Config returns it.
func (p *Project) Config(i int) (monitor.Config, error) {
	return p.rows[i].spec.config, p.rows[i].spec.err
}

// Project reads a project's checks and what the store holds of them.
func (d *Door) Project(ctx context.Context, namespace string) (*Project, error) {
	list := d.InProject(namespace)
	observed, err := d.store.ChecksIn(ctx, namespace)
	if err != nil {
		return nil, err
	}
	return d.projects.of(namespace, list, observed, &d.specs, d.clock.Now()), nil
}

// projects keeps the last Project made of each project. Looking up each of
// 10,000 checks in the store's rows and the parsed specs, both maps by UID,
// was a third of a list's time; a project read again with nothing changed
// (the same checks, the same rows: neither the cache nor the store hand
// out a changed answer as the same one) is the same Project, and one read
// after a few changes looks up only what may differ.
//
// A kept Project holds the checks and rows of its instant, older copies
// than the cache's once they change, so one not read for projectIdle is
// forgotten (by then the store's mirror has been read afresh too, and its
// rows would be looked up again anyway).
type projects struct {
	mu    sync.Mutex
	last  map[string]keptProject
	swept time.Time // when idle projects were last looked for
}

type keptProject struct {
	*Project
	read time.Time
}

// projectIdle is how long a Project is kept without a read: a poller, a
// board refreshing, a Prometheus scrape read far more often.
const projectIdle = 10 * time.Minute

func (ps *projects) of(namespace string, list []*v1.Check, observed store.Observed, specs *specs, now time.Time) *Project {
	ps.mu.Lock()
	prev := ps.last[namespace].Project
	if prev != nil {
		ps.last[namespace] = keptProject{prev, now}
	}
	ps.forgetIdle(now)
	ps.mu.Unlock()
	if prev != nil && sameChecks(prev.Checks, list) && prev.observed.Same(observed) {
		return prev
	}
	p := &Project{Checks: list, rows: make([]projectRow, len(list)), observed: observed}
	sameRows := prev != nil && prev.observed.Same(observed)
	for i, c := range list {
		// A list changes mostly in place (a check's status written, a
		// ping): rows are reused where the same check holds the same
		// place.
		if prev != nil && i < len(prev.Checks) && prev.Checks[i].UID == c.UID {
			row := prev.rows[i]
			if !sameRows {
				row.obs = observed.Row(c.UID)
			}
			if row.spec.generation != c.Generation {
				row.spec = specs.of(c)
			}
			p.rows[i] = row
			continue
		}
		p.rows[i] = projectRow{obs: observed.Row(c.UID), spec: specs.of(c)}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.last == nil {
		ps.last = map[string]keptProject{}
	}
	ps.last[namespace] = keptProject{p, now}
	return p
}

// forgetIdle forgets the projects not read for projectIdle, looking at most
// once a minute; ps.mu is held.
func (ps *projects) forgetIdle(now time.Time) {
	if now.Sub(ps.swept) < time.Minute {
		return
	}
	ps.swept = now
	for ns, kept := range ps.last {
		if now.Sub(kept.read) >= projectIdle {
			delete(ps.last, ns)
		}
	}
}

// forget drops what is kept of a project: a check of it was deleted, and
// the project may be gone with it. (A read under way may keep it again;
// then it is forgotten as idle.)
func (ps *projects) forget(namespace string) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	delete(ps.last, namespace)
}

// sameChecks reports whether a and b are one answer of the index, which
// never changes a list once handed out.
func sameChecks(a, b []*v1.Check) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
