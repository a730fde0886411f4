package dependency

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// check is a check named name; deps is its spec.dependsOn.checks ("":
// none), "role=db" style pairs after a "|" its labels, and a selector
// after a "?" ("team=x").
func check(spec string) *v1.Check {
	name, rest, _ := strings.Cut(spec, ":")
	c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	deps, rest, _ := strings.Cut(rest, "|")
	labels, selector, _ := strings.Cut(rest, "?")
	if deps != "" || selector != "" {
		c.Spec.DependsOn = &v1.DependsOn{}
		if deps != "" {
			c.Spec.DependsOn.Checks = strings.Split(deps, ",")
		}
	}
	for _, l := range strings.Fields(labels) {
		k, v, _ := strings.Cut(l, "=")
		c.Labels[k] = v
	}
	if selector != "" {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for _, l := range strings.Split(selector, ",") {
			k, v, _ := strings.Cut(l, "=")
			sel.MatchLabels[k] = v
		}
		c.Spec.DependsOn.Selector = sel
	}
	return c
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name   string
		checks []string
		of     string
		want   string // parents; missing after "!"; or the problem
	}{
		{"no dependsOn", []string{"a:", "b:"}, "a", ""},
		{"by name", []string{"a:b,c", "b:", "c:"}, "a", "b c"},
		{"a name with no check", []string{"a:b,gone", "b:"}, "a", "b !gone"},
		{"names sorted, duplicates once", []string{"a:c,b,c", "b:", "c:"}, "a", "b c"},
		{"by selector, never itself", []string{"a:|role=db?role=db", "b:|role=db", "c:|role=web"}, "a", "b"},
		{"names and selector together", []string{"a:c|?role=db", "b:|role=db", "c:"}, "a", "b c"},
		{"a chain is no cycle", []string{"a:b", "b:c", "c:"}, "a", "b"},
		{"a diamond is no cycle", []string{"a:b,c", "b:d", "c:d", "d:"}, "a", "b c"},
		{"itself by name", []string{"a:a"}, "a", "cycle a → a"},
		{"two checks", []string{"a:b", "b:a"}, "a", "cycle a → b → a"},
		{"three checks", []string{"a:b", "b:c", "c:a"}, "b", "cycle b → c → a → b"},
		{"a cycle through a selector", []string{"a:|tier=1?tier=2", "b:|tier=2?tier=1"}, "b", "cycle b → a → b"},
		{"a cycle it leads to, not through it", []string{"x:a", "a:b", "b:a"}, "x", "a"},
		{"a parent whose selector selects nothing", []string{"a:b", "b:|?x=y"}, "a", "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs []*v1.Check
			for _, s := range tt.checks {
				cs = append(cs, check(s))
			}
			r := NewGraph(cs).Of(tt.of)
			got := strings.Join(r.Parents, " ")
			if len(r.Missing) > 0 {
				got += " !" + strings.Join(r.Missing, " ")
			}
			var cycle *CycleError
			if errors.As(r.Problem, &cycle) {
				got = "cycle " + strings.Join(cycle.Path, " → ")
			} else if r.Problem != nil {
				got = r.Problem.Error()
			}
			if got != tt.want {
				t.Fatalf("Of(%s) = %q, want %q", tt.of, got, tt.want)
			}
		})
	}
}

func TestTooMany(t *testing.T) {
	cs := []*v1.Check{check("a:|?team=x")}
	for i := range MaxParents + 1 {
		cs = append(cs, check(fmt.Sprintf("p%02d:|team=x", i)))
	}
	if r := NewGraph(cs).Of("a"); !errors.Is(r.Problem, ErrTooMany) || r.Parents != nil {
		t.Fatalf("%d parents: %+v, want ErrTooMany and none", MaxParents+1, r)
	}
	r := NewGraph(cs[:MaxParents+1]).Of("a")
	if r.Problem != nil || len(r.Parents) != MaxParents {
		t.Fatalf("%d parents: %+v", MaxParents, r)
	}
}

func TestInvalidSelector(t *testing.T) {
	c := check("a:")
	c.Spec.DependsOn = &v1.DependsOn{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "team", Operator: "Almost", Values: []string{"x"}}}}}
	r := NewGraph([]*v1.Check{c, check("b:|team=x")}).Of("a")
	if r.Problem == nil || !strings.Contains(r.Problem.Error(), "spec.dependsOn.selector") || IsCycle(r.Problem) {
		t.Fatalf("an invalid selector: %+v", r)
	}
}

// TestLongChain: a chain as long as a namespace may be is walked, each
// check once, and a cycle at its end is found from its start only if it
// leads back there.
func TestLongChain(t *testing.T) {
	const n = 2000
	var cs []*v1.Check
	for i := range n {
		cs = append(cs, check(fmt.Sprintf("c%04d:c%04d", i, (i+1)%n)))
	}
	g := NewGraph(cs)
	r := g.Of("c0000")
	var cycle *CycleError
	if !errors.As(r.Problem, &cycle) || len(cycle.Path) != n+1 || cycle.Path[0] != "c0000" || cycle.Path[n] != "c0000" {
		t.Fatalf("a ring of %d: %v", n, r.Problem)
	}
	cs[n-1] = check(fmt.Sprintf("c%04d:", n-1)) // the ring broken at its end
	if r := NewGraph(cs).Of("c0000"); r.Problem != nil || !slices.Equal(r.Parents, []string{"c0001"}) {
		t.Fatalf("a chain of %d: %+v", n, r)
	}
}
