package projection

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
)

// TestOrder: verdicts and state changes go first, in arrival order; ping
// statistics after them, oldest first; a check is queued once, and a
// statistics change that turns into a state change moves ahead.
func TestOrder(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := &Projector{Clock: clk}
	p.init()
	mark := func(uid string, urgent bool) {
		p.mu.Lock()
		p.markLocked(types.UID(uid), types.NamespacedName{Namespace: "ns", Name: uid}, urgent)
		p.mu.Unlock()
		clk.Step(time.Second)
	}
	mark("stats-old", false)
	mark("stats-mid", false)
	mark("state-1", true)
	mark("stats-old", false) // again: keeps its place
	mark("stats-new", false)
	mark("stats-mid", true) // now its state changed too: moves ahead
	mark("state-2", true)

	var got []string
	for {
		uid, e, ok := p.next()
		if !ok {
			break
		}
		if e.key.Name != string(uid) {
			t.Errorf("entry %s has key %v", uid, e.key)
		}
		got = append(got, string(uid))
	}
	want := []string{"state-1", "stats-mid", "state-2", "stats-old", "stats-new"}
	if len(got) != len(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}

// TestLag: the lag is the wait of the oldest check still queued.
func TestLag(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := &Projector{Clock: clk}
	p.init()
	if d := p.lag(clk.Now()); d != 0 {
		t.Fatalf("lag with nothing queued = %v", d)
	}
	p.markLocked("a", types.NamespacedName{Name: "a"}, false)
	clk.Step(3 * time.Second)
	p.markLocked("b", types.NamespacedName{Name: "b"}, true)
	clk.Step(2 * time.Second)
	if d := p.lag(clk.Now()); d != 5*time.Second {
		t.Fatalf("lag = %v, want 5s", d)
	}
	p.next() // b, urgent
	p.next() // a
	if d := p.lag(clk.Now()); d != 0 {
		t.Fatalf("lag after draining = %v", d)
	}
}

// TestNamespacesTakeTurns: a namespace with hundreds of state changes
// queued delays another's by one write of its own, in each lane.
func TestNamespacesTakeTurns(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := &Projector{Clock: clk}
	p.init()
	mark := func(ns, name string, urgent bool) {
		p.mu.Lock()
		p.markLocked(types.UID(ns+"/"+name), types.NamespacedName{Namespace: ns, Name: name}, urgent)
		p.mu.Unlock()
	}
	for i := range 400 {
		mark("flapping", fmt.Sprint("state-", i), true)
		mark("flapping", fmt.Sprint("stats-", i), false)
	}
	mark("quiet", "state", true)
	mark("quiet", "stats", false)

	var got []types.UID
	for uid, _, ok := p.next(); ok; uid, _, ok = p.next() {
		got = append(got, uid)
	}
	if len(got) != 802 {
		t.Fatalf("%d projected, want 802", len(got))
	}
	if i := slices.Index(got, "quiet/state"); i != 1 {
		t.Errorf("the quiet namespace's state change came %d-th, after %v", i+1, got[:i])
	}
	// After the 401 state changes, the flapping namespace's first
	// statistics, then the quiet one's.
	if i := slices.Index(got, "quiet/stats"); i != 402 {
		t.Errorf("its statistics came %d-th, want 403rd", i+1)
	}
}
