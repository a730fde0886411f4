package checks

import (
	"reflect"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

func TestSpecsParseOncePerGeneration(t *testing.T) {
	schedule := "0 3 * * *"
	c := &v1.Check{ObjectMeta: metav1.ObjectMeta{UID: "u1", Generation: 1}, Spec: v1.CheckSpec{Schedule: &schedule, TZ: "Europe/Riga"}}
	var s specs
	config := func(c *v1.Check) (monitor.Config, error) {
		p := s.of(c)
		return p.config, p.err
	}
	first, err := config(c)
	if err != nil || first.Schedule == nil {
		t.Fatalf("config = %+v, %v", first, err)
	}
	again, _ := config(c.DeepCopy())
	if again.Schedule != first.Schedule {
		t.Error("the same generation was parsed again")
	}

	// A new generation is parsed anew; an older one never replaces it.
	changed := c.DeepCopy()
	changed.Generation, changed.Spec.Schedule = 2, nil
	if cfg, _ := config(changed); cfg.Schedule != nil {
		t.Errorf("generation 2 has a schedule: %+v", cfg)
	}
	if cfg, _ := config(changed); cfg.Schedule != nil {
		t.Error("generation 2 was not kept")
	}
	if _, _ = config(c); s.entries["u1"].generation != 2 {
		t.Errorf("an older generation replaced the newer one: %+v", s.entries["u1"])
	}

	// A spec error is kept with its generation too.
	bad := "not a schedule"
	broken := &v1.Check{ObjectMeta: metav1.ObjectMeta{UID: "u2", Generation: 1}, Spec: v1.CheckSpec{Schedule: &bad}}
	if _, err := config(broken); err == nil {
		t.Error("a broken schedule parsed")
	}
	if _, err := config(broken); err == nil {
		t.Error("a broken schedule's error was not kept")
	}

	// An object the API server never stored is not kept.
	draft := &v1.Check{Spec: v1.CheckSpec{Schedule: &schedule}}
	if _, err := config(draft); err != nil || len(s.entries) != 2 {
		t.Errorf("a draft was kept: %v, %d entries", err, len(s.entries))
	}
	s.forget("u1")
	if _, ok := s.entries["u1"]; ok {
		t.Error("forget kept the entry")
	}
}

func TestChannelIndex(t *testing.T) {
	d := &Door{}
	x := &d.channels
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	aged := func(name string, age int) agedName { return agedName{t0.Add(time.Duration(age) * time.Second), name} }
	for i, name := range []string{"slack", "email", "pager", "email"} {
		x.set("team-a", aged(name, i), true)
	}
	x.set("team-b", aged("hook", 0), true)
	before := x.all("team-a")
	if want := []string{"email", "pager", "slack"}; !reflect.DeepEqual(before, want) {
		t.Fatalf("all = %q, want %q", before, want)
	}
	x.set("team-a", aged("pager", 2), false)
	x.set("team-a", aged("nothing", 9), false)
	if got, want := x.all("team-a"), []string{"email", "slack"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after a delete: %q, want %q", got, want)
	}
	if !reflect.DeepEqual(before, []string{"email", "pager", "slack"}) {
		t.Errorf("a slice handed out changed: %q", before)
	}
	x.set("team-b", aged("hook", 0), false)
	if got := x.all("team-b"); got != nil {
		t.Errorf("an emptied namespace: %q", got)
	}

	check := func(channels ...string) *v1.Check {
		return &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}, Spec: v1.CheckSpec{Channels: channels}}
	}
	for _, tc := range []struct {
		spec []string
		want []string
	}{
		{nil, nil},
		{[]string{"*"}, []string{"email", "slack"}},
		{[]string{"slack", "gone"}, []string{"slack"}},
		{[]string{"slack", "*"}, []string{"slack"}}, // "*" means all only alone
	} {
		if got := d.Channels(check(tc.spec...)); !slices.Equal(got, tc.want) {
			t.Errorf("Channels(%q) = %q, want %q", tc.spec, got, tc.want)
		}
	}
}

// A namespace's Channels past its limit are left out, the newest first,
// and come back when the limit is raised or an older one goes.
func TestChannelIndexLimit(t *testing.T) {
	d := &Door{}
	x := &d.channels
	limit := 2
	x.limit = func(string) int { return limit }
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for i, name := range []string{"zulu", "alpha", "mike", "bravo"} { // oldest first
		x.set("team-a", agedName{t0.Add(time.Duration(i) * time.Second), name}, true)
	}
	if got, want := x.all("team-a"), []string{"alpha", "zulu"}; !reflect.DeepEqual(got, want) {
		t.Errorf("within a limit of 2: %q, want %q", got, want)
	}
	check := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a"}, Spec: v1.CheckSpec{Channels: []string{"*"}}}
	if got, want := d.Channels(check), []string{"alpha", "zulu"}; !reflect.DeepEqual(got, want) {
		t.Errorf("a check routed to all: %q, want %q", got, want)
	}
	x.set("team-a", agedName{t0, "zulu"}, false)
	if got, want := x.all("team-a"), []string{"alpha", "mike"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the oldest went: %q, want %q", got, want)
	}
	limit = 10
	if got, want := x.all("team-a"), []string{"alpha", "bravo", "mike"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after the limit was raised: %q, want %q", got, want)
	}
}

func TestPending(t *testing.T) {
	var p pending
	a := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "ua", ResourceVersion: "10"}}
	b := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "ub", ResourceVersion: "12"}}
	p.add(a)
	p.add(b)
	if !p.madeLast("ns", "12") || p.madeLast("ns", "10") || p.madeLast("other", "12") {
		t.Error("madeLast names the wrong creation")
	}
	if got := p.in("ns"); len(got) != 2 {
		t.Fatalf("pending = %d checks, want 2", len(got))
	}
	p.seen(a)
	if got := p.in("ns"); len(got) != 1 || got[0].Name != "b" {
		t.Errorf("after the cache showed a: %v", got)
	}
	if !p.madeLast("ns", "12") {
		t.Error("the last creation is forgotten once the cache shows it")
	}
	p.seen(b)
	if got := p.in("ns"); len(got) != 0 {
		t.Errorf("after the cache showed both: %v", got)
	}
}

func TestReservations(t *testing.T) {
	var p pending
	reserved := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r"}}
	done := p.reserve(reserved)
	if got := p.in("ns"); len(got) != 1 || got[0] != reserved {
		t.Fatalf("an in-flight creation is not counted: %v", got)
	}
	if p.reservation(reserved) == nil {
		t.Fatal("no reservation to wait for")
	}
	created := reserved.DeepCopy()
	created.UID, created.ResourceVersion = "u1", "42"
	p.settle(reserved, done, created)
	select {
	case <-done:
	default:
		t.Fatal("settling does not end the wait")
	}
	if got := p.in("ns"); len(got) != 1 || got[0] != created || !p.madeLast("ns", "42") {
		t.Errorf("after the create: %v", got)
	}
	p.seen(created)
	if got := p.in("ns"); len(got) != 0 {
		t.Errorf("after the cache showed it: %v", got)
	}

	failed := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "f"}}
	p.settle(failed, p.reserve(failed), nil)
	if got := p.in("ns"); len(got) != 0 || p.reservation(failed) != nil {
		t.Errorf("a failed creation is still counted: %v", got)
	}
}
