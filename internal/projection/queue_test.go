package projection

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// TestOrder: verdicts and state changes go first, in arrival order; ping
// statistics after them, oldest first; a check is queued once, and a
// statistics change that turns into a state change moves ahead.
func TestOrder(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := &Projector{Clock: clk}
	p.init()
	mark := func(uid string, urgent bool) {
		markIn(p, uid, urgent)
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
		uid, e, _ := p.next(true)
		if e == nil {
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
	p.next(true) // b, urgent
	p.next(true) // a
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
	for uid, e, _ := p.next(true); e != nil; uid, e, _ = p.next(true) {
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

// TestParked: a check queued again while a writer writes it is not given
// to a second writer at once (two writes of one object at a time would
// conflict); it goes when the first write is done, in its lane.
func TestParked(t *testing.T) {
	p := &Projector{Clock: testingclock.NewFakeClock(time.Now())}
	p.init()
	mark := func(uid string, urgent bool) { markIn(p, uid, urgent) }
	mark("a", false)
	mark("b", false)
	if uid, _, _ := p.next(true); uid != "a" {
		t.Fatalf("first = %q, want a", uid)
	}
	mark("a", true) // a change of state while a is written
	uid, _, _ := p.next(true)
	if uid != "b" {
		t.Fatalf("second = %q, want b (a is being written)", uid)
	}
	_, e, queued := p.next(true)
	if e != nil {
		t.Fatalf("a third check was taken: %+v", e)
	}
	select {
	case <-queued:
		t.Fatal("the writer was woken with nothing to take")
	default:
	}
	p.done("a")
	select {
	case <-queued:
	default:
		t.Fatal("the parked check's end did not wake a writer")
	}
	uid, e, _ = p.next(true)
	if uid != "a" || e == nil || !e.urgent {
		t.Fatalf("after the first write: %q %+v, want a, urgent", uid, e)
	}
}

// TestOneWriterForStatistics: the writers that do not take the other lane
// leave its checks to the one that does, and take the urgent ones.
func TestOneWriterForStatistics(t *testing.T) {
	p := &Projector{Clock: testingclock.NewFakeClock(time.Now())}
	p.init()
	markIn(p, "stats", false)
	markIn(p, "state", true)
	if uid, _, _ := p.next(false); uid != "state" {
		t.Fatalf("an urgent writer took %q, want state", uid)
	}
	if _, e, _ := p.next(false); e != nil {
		t.Fatalf("an urgent writer took %+v from the other lane", e)
	}
	if uid, _, _ := p.next(true); uid != "stats" {
		t.Fatalf("the statistics writer took %q, want stats", uid)
	}
}

// markIn queues the check uid of namespace ns in p.
func markIn(p *Projector, uid string, urgent bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.markLocked(types.UID(uid), types.NamespacedName{Namespace: "ns", Name: uid}, urgent)
}

// TestVerdictShownQueuesNothing: a verdict the status already shows (every
// check's, when a manager starts or a new leader takes over) queues no
// write; a check whose status does not show it yet, or a verdict that
// changed, goes in the urgent lane.
func TestVerdictShownQueuesNothing(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	p := &Projector{Clock: clk, BaseURL: "https://vigil.example"}
	p.init()
	v := Verdict{Generation: 3, UUID: "3f0c1f4e-7c1e-4a8f-9a57-2b1d1c0c9d11"}
	shown := &v1.Check{}
	shown.Namespace, shown.Name, shown.UID = "ns", "shown", "shown"
	p.applyVerdict(&shown.Status, v, clk.Now().Add(-time.Hour))
	p.SetVerdict(shown, v)
	if uid, e, _ := p.next(true); e != nil {
		t.Fatalf("a verdict the status shows queued %s", uid)
	}

	fresh := &v1.Check{}
	fresh.Namespace, fresh.Name, fresh.UID = "ns", "fresh", "fresh"
	p.SetVerdict(fresh, v)
	if uid, e, _ := p.next(false); uid != "fresh" || !e.urgent {
		t.Fatalf("a new check's verdict: %q %+v, want it urgent", uid, e)
	}

	p.SetVerdict(shown, Verdict{Generation: 4, UUID: v.UUID, Reason: "InvalidSchedule", Message: "61 is out of range"})
	if uid, e, _ := p.next(false); uid != "shown" || !e.urgent {
		t.Fatalf("a changed verdict: %q %+v, want it urgent", uid, e)
	}
}

// TestDirtyMapGivesBackAWave: a wave of dirty checks, once written, leaves
// no map sized for it behind (Go's maps never shrink).
func TestDirtyMapGivesBackAWave(t *testing.T) {
	p := &Projector{Clock: testingclock.NewFakeClock(time.Now())}
	p.init()
	const wave = 3 * emptiedMapPeak
	p.mu.Lock()
	for i := range wave {
		p.markLocked(types.UID(fmt.Sprint(i)), types.NamespacedName{Namespace: "ns", Name: fmt.Sprint(i)}, false)
	}
	p.mu.Unlock()
	for range wave {
		uid, e, _ := p.next(true)
		if e == nil {
			t.Fatal("a dirty check was not taken")
		}
		p.done(uid)
	}
	if p.dirtyPeak != 0 {
		t.Fatalf("the map that held %d dirty checks was kept once they were written (peak %d)", wave, p.dirtyPeak)
	}
}
