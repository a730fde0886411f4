package checks

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/dependency"
	"github.com/vigil-operator/vigil/internal/store"
)

// dependencyIndex keeps each namespace's dependency graph (package
// dependency), built when first asked for and dropped when one of the
// namespace's checks comes, goes, or changes its spec or labels: a ping
// resolves no selector, and a status write (most of a check's updates)
// keeps the graph.
type dependencyIndex struct {
	mu   sync.Mutex
	byNS map[string]*lockedGraph
}

// lockedGraph is a graph and the lock its lazy answers need.
type lockedGraph struct {
	mu sync.Mutex
	g  *dependency.Graph
}

func (x *dependencyIndex) graph(namespace string, checks func() []*v1.Check) *lockedGraph {
	x.mu.Lock()
	defer x.mu.Unlock()
	if g := x.byNS[namespace]; g != nil {
		return g
	}
	if x.byNS == nil {
		x.byNS = map[string]*lockedGraph{}
	}
	g := &lockedGraph{g: dependency.NewGraph(checks())}
	x.byNS[namespace] = g
	return g
}

// changed drops the namespace's graph when c's change may change it: old
// is the index's version before (nil: none), c the new one (nil: gone).
func (x *dependencyIndex) changed(namespace string, old, c *v1.Check) {
	if old != nil && c != nil && old.Generation == c.Generation && maps.Equal(old.Labels, c.Labels) {
		return
	}
	x.mu.Lock()
	delete(x.byNS, namespace)
	x.mu.Unlock()
}

// Dependencies is what c depends on (package dependency): the names of
// its parents, the names it gives that no check has, and why its
// dependencies hold nothing, when they do not.
func (d *Door) Dependencies(c *v1.Check) dependency.Resolved {
	if c.Spec.DependsOn == nil {
		return dependency.Resolved{}
	}
	d.await()
	g := d.dependencies.graph(c.Namespace, func() []*v1.Check { return d.index.inProject(c.Namespace) })
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.g.Of(c.Name)
}

// Dependents are the checks of c's namespace whose spec.dependsOn names c
// or selects it by its labels: what they depend on changes with c.
func (d *Door) Dependents(c *v1.Check) []types.NamespacedName {
	var out []types.NamespacedName
	for _, o := range d.index.inProject(c.Namespace) {
		dep := o.Spec.DependsOn
		if dep == nil || o.Name == c.Name {
			continue
		}
		match := slices.Contains(dep.Checks, c.Name)
		if !match && dep.Selector != nil {
			sel, err := dependency.Selector(dep.Selector)
			match = err == nil && sel.Matches(labels.Set(c.Labels))
		}
		if match {
			out = append(out, types.NamespacedName{Namespace: o.Namespace, Name: o.Name})
		}
	}
	return out
}

// parentsOf is a check's Dependencies as the store asks for them: resolved
// only when a notification of the check is decided.
type parentsOf struct {
	d *Door
	c *v1.Check
}

func (p parentsOf) Parents() []string { return p.d.Dependencies(p.c).Parents }

// parentsFirst orders targets to observe so that those without
// dependencies come first: a deadline pass that finds a parent and its
// dependents due together records the parent's down before it decides
// theirs (store.Dependencies). Otherwise the order is kept.
func parentsFirst(targets []store.Target) {
	slices.SortStableFunc(targets, func(a, b store.Target) int {
		return boolInt(a.Dependencies != nil) - boolInt(b.Dependencies != nil)
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
