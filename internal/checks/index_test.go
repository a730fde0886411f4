package checks

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func names(checks []*v1.Check) []string {
	out := make([]string, len(checks))
	for i, c := range checks {
		out[i] = c.Namespace + "/" + c.Name
	}
	return out
}

func TestIndex(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.Unix(sec, 0) }
	check := func(ns, name string, created int64, uuid, slug string) *v1.Check {
		return &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name), CreationTimestamp: at(created)},
			Spec: v1.CheckSpec{UUID: uuid, Slug: slug}}
	}
	const u1, u2 = "11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"
	var x index
	c := check("a", "c", 20, u1, "nightly")
	b := check("a", "b", 10, u2, "nightly")
	a := check("a", "a", 10, "", "")
	other := check("b", "x", 5, u1, "nightly") // names a's UUID
	for _, ch := range []*v1.Check{c, b, a, other} {
		x.set(ch)
	}

	if got := names(x.inProject("a")); !slices.Equal(got, []string{"a/a", "a/b", "a/c"}) {
		t.Errorf("project a, oldest first: %q", got)
	}
	// A check that comes once the order was handed out is in the next.
	d := check("a", "d", 30, "", "")
	x.set(d)
	if got := names(x.inProject("a")); !slices.Equal(got, []string{"a/a", "a/b", "a/c", "a/d"}) {
		t.Errorf("after d came: %q", got)
	}
	x.remove(d)
	if got := names(x.withUUID(u1)); !slices.Equal(got, []string{"a/c", "b/x"}) {
		t.Errorf("UUID u1 in any namespace: %q", got)
	}
	if got := names(x.withUUID(string(a.UID))); !slices.Equal(got, []string{"a/a"}) {
		t.Errorf("a check without spec.uuid is found by its UID: %q", got)
	}
	if got := names(x.withBadgeKey(BadgeKey(u2))); !slices.Equal(got, []string{"a/b"}) {
		t.Errorf("badge key: %q", got)
	}
	if got := names(x.withSlug("a", "nightly")); len(got) != 2 {
		t.Errorf("slug within project a: %q", got)
	}
	if got := names(x.withUniqueKey("b", UniqueKey(u1))); !slices.Equal(got, []string{"b/x"}) {
		t.Errorf("unique key within project b: %q", got)
	}

	// A new version of b: its new slug and UUID, in its old place.
	before := x.inProject("a")
	b2 := b.DeepCopy()
	b2.Spec.Slug, b2.Spec.UUID = "hourly", u1
	x.set(b2)
	after := x.inProject("a")
	if after[1] != b2 || before[1] != b {
		t.Errorf("the new version did not take its slot in a copy: before %p, after %p", before[1], after[1])
	}
	if got := names(x.withSlug("a", "nightly")); !slices.Equal(got, []string{"a/c"}) {
		t.Errorf("the old slug still finds b: %q", got)
	}
	if got := names(x.withSlug("a", "hourly")); !slices.Equal(got, []string{"a/b"}) {
		t.Errorf("the new slug: %q", got)
	}
	if got := x.withUUID(u2); got != nil {
		t.Errorf("the old UUID still finds b: %q", names(got))
	}
	if got := names(x.withUUID(u1)); len(got) != 3 {
		t.Errorf("u1 now: %q", got)
	}

	// Gone: out of every lookup, and the project's order.
	x.remove(c)
	if got := names(x.inProject("a")); !slices.Equal(got, []string{"a/a", "a/b"}) {
		t.Errorf("after c went: %q", got)
	}
	if got := names(x.withUUID(u1)); !slices.Equal(got, []string{"b/x", "a/b"}) {
		t.Errorf("u1 after c went: %q", got)
	}
	x.remove(other)
	if x.inProject("b") != nil || x.projects["b"] != nil {
		t.Error("an emptied project is kept")
	}
	x.remove(other) // twice: nothing
}

func TestOldest(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.Unix(sec, 0) }
	items := []*v1.Check{
		{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: at(20)}, Spec: v1.CheckSpec{Tags: "x"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: at(10)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: at(10)}, Spec: v1.CheckSpec{Tags: "x"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "d", CreationTimestamp: at(30)}, Spec: v1.CheckSpec{Tags: "y"}},
	}
	tagged := func(tag string) func(*v1.Check) bool { return func(c *v1.Check) bool { return c.Spec.Tags == tag } }
	for _, tt := range []struct {
		match func(*v1.Check) bool
		want  string
	}{{nil, "a"}, {tagged("x"), "a"}, {tagged("y"), "d"}, {tagged("z"), ""}} {
		got := Oldest(items, tt.match)
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("got %s, want none", got.Name)
		case tt.want != "" && (got == nil || got.Name != tt.want):
			t.Errorf("got %v, want %s", got, tt.want)
		}
	}
}

// The project's order stays the checks oldest first through any sequence
// of new checks, new versions, removals and reads, and a slice handed out
// never changes afterwards.
func TestIndexOrderHandedOutNeverChanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 49))
	var x index
	live := map[string]*v1.Check{}
	type handed struct{ got, copy []*v1.Check }
	var out []handed
	for step := range 5000 {
		name := fmt.Sprintf("c%03d", rng.IntN(300))
		switch op := rng.IntN(10); {
		case op < 5: // a new check, or a new version of one
			c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID(name),
				CreationTimestamp: metav1.Unix(int64(rng.IntN(50)), 0), Generation: int64(step)}}
			if old := live[name]; old != nil {
				c.CreationTimestamp = old.CreationTimestamp // what orders a check never changes
			}
			x.set(c)
			live[name] = c
		case op < 7:
			if c := live[name]; c != nil {
				x.remove(c)
				delete(live, name)
			}
		default:
			got := x.inProject("a")
			out = append(out, handed{got, slices.Clone(got)})
			want := slices.Collect(maps.Values(live))
			slices.SortFunc(want, compareOldest)
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: order %q, want %q", step, names(got), names(want))
			}
		}
	}
	for i, h := range out {
		if !slices.Equal(h.got, h.copy) {
			t.Fatalf("the order handed out at read %d changed afterwards", i)
		}
	}
}

// BenchmarkIndexProject: a project of 10,000 checks listed into the index
// (as the cache's first list does), read, then a wave of a new version of
// each (a status write each), read every 100 events, as the board and the
// API read a busy project.
func BenchmarkIndexProject(b *testing.B) {
	const n = 10_000
	first := make([]*v1.Check, n)
	next := make([]*v1.Check, n)
	for i := range n {
		name := fmt.Sprintf("check-%05d", (i*7919)%n) // the list's order is not the age order
		first[i] = &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "big", Name: name, UID: types.UID(name),
			CreationTimestamp: metav1.Unix(int64((i*7919)%n), 0)}}
		next[i] = first[i].DeepCopy()
		next[i].Generation = 2
	}
	b.ReportAllocs()
	for b.Loop() {
		var x index
		for _, c := range first {
			x.set(c)
		}
		_ = x.inProject("big")
		for i, c := range next {
			x.set(c)
			if i%100 == 0 {
				_ = x.inProject("big")
			}
		}
	}
}
