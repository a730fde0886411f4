// Package dependency resolves what a check depends on: the checks of its
// namespace that its spec.dependsOn names or selects. While one of them is
// down, the check's notifications are held (the store's rule,
// internal/store/dependency.go); this package only says which checks those
// are, and refuses what would make the rule unsound: a cycle (two checks
// down at once, each holding the other's notifications, would tell nobody
// anything) and more parents than MaxParents.
//
// A Graph is one namespace's checks, resolved lazily and at most once
// each: the cost of an answer is the part of the graph it walks, and the
// first answer about a check with a selector matches the selector against
// the namespace's checks once.
package dependency

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// MaxParents bounds the checks one check may depend on (names and
// selector together): each is read when the check's notification is
// decided.
const MaxParents = 50

// maxWalk bounds the checks one cycle search visits. A namespace is
// bounded by its check limit; this bounds the search in one that is not.
const maxWalk = 5000

// ErrTooMany: spec.dependsOn resolves to more than MaxParents checks.
var ErrTooMany = fmt.Errorf("spec.dependsOn names or selects more than %d checks", MaxParents)

// ErrTooDeep: the checks reachable through spec.dependsOn are too many to
// search for a cycle.
var ErrTooDeep = fmt.Errorf("more than %d checks are reachable through spec.dependsOn", maxWalk)

// CycleError: following spec.dependsOn from a check leads back to it.
type CycleError struct {
	// Path is the cycle's names, from the check back to it.
	Path []string
}

func (e *CycleError) Error() string {
	return "spec.dependsOn makes a cycle: " + strings.Join(e.Path, " → ")
}

// Resolved is what a check depends on.
type Resolved struct {
	// Parents are the names of the checks it depends on, sorted; none
	// when Problem is set.
	Parents []string
	// Missing are the names spec.dependsOn.checks gives that no check of
	// the namespace has.
	Missing []string
	// Problem is why its dependencies hold nothing (a *CycleError,
	// ErrTooMany, ErrTooDeep or an invalid selector); nil when they do.
	Problem error
}

// Graph is one namespace's checks and what each depends on.
type Graph struct {
	byName   map[string]*v1.Check
	checks   []*v1.Check
	parents  map[string]parents
	resolved map[string]Resolved
}

type parents struct {
	names, missing []string
	err            error
}

// NewGraph is the graph of a namespace's checks (any order; they are read,
// never changed).
func NewGraph(checks []*v1.Check) *Graph {
	g := &Graph{byName: make(map[string]*v1.Check, len(checks)), checks: checks,
		parents: map[string]parents{}, resolved: map[string]Resolved{}}
	for _, c := range checks {
		g.byName[c.Name] = c
	}
	return g
}

// Of is what the check named name depends on. Not safe for concurrent use.
func (g *Graph) Of(name string) Resolved {
	if r, ok := g.resolved[name]; ok {
		return r
	}
	p := g.parentsOf(name)
	r := Resolved{Missing: p.missing, Problem: p.err}
	if r.Problem == nil {
		r.Problem = g.cycle(name)
	}
	if r.Problem == nil {
		r.Parents = p.names
	}
	g.resolved[name] = r
	return r
}

// parentsOf resolves one check's spec.dependsOn, without following it.
func (g *Graph) parentsOf(name string) parents {
	if p, ok := g.parents[name]; ok {
		return p
	}
	var p parents
	if c := g.byName[name]; c != nil && c.Spec.DependsOn != nil {
		p = resolve(c, g)
	}
	g.parents[name] = p
	return p
}

func resolve(c *v1.Check, g *Graph) parents {
	d := c.Spec.DependsOn
	var p parents
	seen := map[string]bool{c.Name: true} // a selector never selects the check itself
	for _, n := range d.Checks {
		switch {
		case n == c.Name:
			return parents{err: &CycleError{Path: []string{n, n}}}
		case seen[n]:
		case g.byName[n] == nil:
			p.missing = append(p.missing, n)
		default:
			p.names = append(p.names, n)
		}
		seen[n] = true
	}
	if d.Selector != nil {
		sel, err := Selector(d.Selector)
		if err != nil {
			return parents{err: err}
		}
		for _, o := range g.checks {
			if !seen[o.Name] && sel.Matches(labels.Set(o.Labels)) {
				seen[o.Name] = true
				p.names = append(p.names, o.Name)
				if len(p.names) > MaxParents {
					break
				}
			}
		}
	}
	if len(p.names) > MaxParents {
		return parents{err: ErrTooMany}
	}
	slices.Sort(p.names)
	slices.Sort(p.missing)
	return p
}

// Selector is spec.dependsOn.selector as a selector; an empty one selects
// every check (the other checks of the namespace), as a Kubernetes label
// selector does.
func Selector(s *metav1.LabelSelector) (labels.Selector, error) {
	sel, err := metav1.LabelSelectorAsSelector(s)
	if err != nil {
		return nil, fmt.Errorf("spec.dependsOn.selector: %w", err)
	}
	return sel, nil
}

// cycle looks for a path from the check's parents back to it: depth
// first, each check visited once. Checks whose own dependencies are
// refused (too many, an invalid selector) are not followed: they hold
// nothing either way.
func (g *Graph) cycle(name string) error {
	visited := map[string]bool{}
	var path []string
	var walk func(n string) (bool, error)
	walk = func(n string) (bool, error) {
		for _, p := range g.parentsOf(n).names {
			if p == name {
				path = append(path, p)
				return true, nil
			}
			if visited[p] {
				continue
			}
			if visited[p] = true; len(visited) > maxWalk {
				return false, ErrTooDeep
			}
			if found, err := walk(p); found || err != nil {
				if found {
					path = append(path, p)
				}
				return found, err
			}
		}
		return false, nil
	}
	found, err := walk(name)
	if err != nil {
		return err
	}
	if !found {
		return nil
	}
	path = append(path, name)
	slices.Reverse(path)
	return &CycleError{Path: path}
}

// IsCycle reports whether err is a cycle.
func IsCycle(err error) bool {
	var c *CycleError
	return errors.As(err, &c)
}
