package monitor_test

import (
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// observed applies events as the store does: time is observed at each
// event's instant before the event, so a deadline missed before a ping is
// the down it was. It returns the facts and every flip.
func observed(t testing.TB, c monitor.Config, events ...monitor.Event) (monitor.Facts, []monitor.Flip) {
	t.Helper()
	var f monitor.Facts
	var flips []monitor.Flip
	for _, ev := range events {
		var early, flip *monitor.Flip
		if ev.Kind != monitor.EventReturn { // a return is told before anything is observed
			f, early = c.Observe(f, ev.At)
		}
		var err error
		if f, flip, err = c.Apply(f, ev); err != nil {
			t.Fatalf("Apply(%+v): %v", ev, err)
		}
		for _, fl := range []*monitor.Flip{early, flip} {
			if fl != nil {
				flips = append(flips, *fl)
			}
		}
	}
	return f, flips
}

func rid(ev monitor.Event, id string) monitor.Event { ev.RID = id; return ev }

// TestPolicy covers each rule of the alert policy over its edges: what
// flips, when, and why.
func TestPolicy(t *testing.T) {
	three := simple
	three.FailureThreshold = 3
	recover2 := simple
	recover2.RecoveryThreshold = 2
	long := simple
	long.MaxRuntime = 2 * h
	short := simple
	short.MinRuntime = 5 * m
	twoLong := long
	twoLong.FailureThreshold = 2

	down := func(off time.Duration, from monitor.Status, reason monitor.Reason, detail string) monitor.Flip {
		return monitor.Flip{At: at(off), From: from, To: monitor.StatusDown, Reason: reason, Detail: detail}
	}
	up := func(off time.Duration, to monitor.Status) monitor.Flip {
		return monitor.Flip{At: at(off), From: monitor.StatusDown, To: to}
	}
	tests := []struct {
		name     string
		cfg      monitor.Config
		events   []monitor.Event
		flips    []monitor.Flip
		failures int // the count at the last event
		status   monitor.Status
	}{
		{
			name:   "threshold 1 is the reference: the first fail is down",
			cfg:    simple,
			events: []monitor.Event{success(0), fail(h)},
			flips:  []monitor.Flip{down(h, monitor.StatusGrace, monitor.ReasonFail, "")},
			status: monitor.StatusDown, failures: 1,
		},
		{
			name:   "threshold 3: two fails are tolerated, the third is down",
			cfg:    three,
			events: []monitor.Event{success(0), fail(h), fail(2 * h)},
			status: monitor.StatusUp, failures: 2,
		},
		{
			name:   "threshold 3: the third fail is down at that fail",
			cfg:    three,
			events: []monitor.Event{success(0), fail(h), fail(2 * h), fail(3 * h)},
			flips:  []monitor.Flip{down(3*h, monitor.StatusGrace, monitor.ReasonFail, "")},
			status: monitor.StatusDown, failures: 3,
		},
		{
			name:   "threshold 3: a success in between starts the count again",
			cfg:    three,
			events: []monitor.Event{success(0), fail(h), fail(2 * h), success(3 * h), fail(4 * h), fail(5 * h)},
			status: monitor.StatusUp, failures: 2,
		},
		{
			name:   "threshold 3: after a tolerated fail the next run is due a period after it",
			cfg:    three,
			events: []monitor.Event{success(0), fail(h), tick(2*h + 9*m)},
			status: monitor.StatusGrace, failures: 1,
		},
		{
			name: "threshold 3: missed runs count, each at its own deadline",
			cfg:  three,
			// Due at 1h, 2h, 3h; deadlines 1h10, 2h10, 3h10.
			events: []monitor.Event{success(0), tick(2*h + 10*m)},
			status: monitor.StatusUp, failures: 2,
		},
		{
			name:   "threshold 3: the third missed run is down at its deadline, however late it is noticed",
			cfg:    three,
			events: []monitor.Event{success(0), tick(d)},
			flips:  []monitor.Flip{down(3*h+10*m, monitor.StatusUp, monitor.ReasonTimeout, "")},
			status: monitor.StatusDown, failures: 3,
		},
		{
			name:   "threshold 3: a fail and two missed runs",
			cfg:    three,
			events: []monitor.Event{success(0), fail(h), tick(5 * h)},
			flips:  []monitor.Flip{down(3*h+10*m, monitor.StatusUp, monitor.ReasonTimeout, "")},
			status: monitor.StatusDown, failures: 3,
		},
		{
			name:   "recovery 2: one success is not enough",
			cfg:    recover2,
			events: []monitor.Event{success(0), fail(h), success(2 * h)},
			flips:  []monitor.Flip{down(h, monitor.StatusGrace, monitor.ReasonFail, "")},
			status: monitor.StatusDown, failures: 1,
		},
		{
			name:   "recovery 2: the second success on time is up",
			cfg:    recover2,
			events: []monitor.Event{success(0), fail(h), success(2 * h), success(3 * h)},
			flips:  []monitor.Flip{down(h, monitor.StatusGrace, monitor.ReasonFail, ""), up(3*h, monitor.StatusUp)},
			status: monitor.StatusUp,
		},
		{
			name:   "recovery 2: a late success starts the streak again",
			cfg:    recover2,
			events: []monitor.Event{success(0), fail(h), success(2 * h), success(4 * h)},
			flips:  []monitor.Flip{down(h, monitor.StatusGrace, monitor.ReasonFail, "")},
			status: monitor.StatusDown, failures: 1,
		},
		{
			name:   "recovery 2: a fail breaks the streak",
			cfg:    recover2,
			events: []monitor.Event{success(0), fail(h), success(2 * h), fail(150 * m), success(3 * h)},
			flips:  []monitor.Flip{down(h, monitor.StatusGrace, monitor.ReasonFail, "")},
			status: monitor.StatusDown, failures: 2,
		},
		{
			name:   "no maxRuntime: a run is bounded by grace (the reference)",
			cfg:    simple,
			events: []monitor.Event{success(0), start(h), tick(2 * h)},
			flips:  []monitor.Flip{down(h+10*m, monitor.StatusGrace, monitor.ReasonTimeout, "")},
			status: monitor.StatusDown, failures: 1,
		},
		{
			name:   "maxRuntime 2h: a run past grace is up",
			cfg:    long,
			events: []monitor.Event{success(0), start(h + 5*m), tick(3*h + 4*m)},
			status: monitor.StatusUp,
		},
		{
			name:   "maxRuntime 2h: down at start plus 2h, ran longer than",
			cfg:    long,
			events: []monitor.Event{success(0), start(h + 5*m), tick(5 * h)},
			flips:  []monitor.Flip{down(3*h+5*m, monitor.StatusUp, monitor.ReasonRuntime, "ran longer than 2 hours")},
			status: monitor.StatusDown, failures: 1,
		},
		{
			name:   "maxRuntime 2h: grace still bounds a late start",
			cfg:    long,
			events: []monitor.Event{success(0), tick(h + 10*m)},
			flips:  []monitor.Flip{down(h+10*m, monitor.StatusUp, monitor.ReasonTimeout, "")},
			status: monitor.StatusDown, failures: 1,
		},
		{
			name:   "maxRuntime 2h: a run that ends in time is up",
			cfg:    long,
			events: []monitor.Event{success(0), start(h), success(2*h + 59*m)},
			status: monitor.StatusUp,
		},
		{
			name: "maxRuntime with threshold 2: an overrun is one failure, its late end changes no count",
			cfg:  twoLong,
			events: []monitor.Event{success(0), rid(start(h), "r"), tick(3*h + 30*m),
				rid(success(3*h+40*m), "r")},
			status: monitor.StatusUp, failures: 1,
		},
		{
			name:   "minRuntime 5m: a run that ends in 3 s is down, finished in",
			cfg:    short,
			events: []monitor.Event{success(0), start(h), success(h + 3*time.Second)},
			flips:  []monitor.Flip{down(h+3*time.Second, monitor.StatusGrace, monitor.ReasonShort, "finished in 3 seconds, expected at least 5 minutes")},
			status: monitor.StatusDown, failures: 1,
		},
		{
			name:   "minRuntime 5m: a run of exactly 5 min is a success",
			cfg:    short,
			events: []monitor.Event{success(0), start(h), success(h + 5*m)},
			status: monitor.StatusUp,
		},
		{
			name:   "minRuntime 5m: a success without a start has no duration, and counts",
			cfg:    short,
			events: []monitor.Event{success(0), success(h)},
			status: monitor.StatusUp,
		},
		{
			name:   "a pause forgets the count",
			cfg:    three,
			events: []monitor.Event{success(0), fail(h), fail(2 * h), pause(2*h + m), fail(3 * h)},
			status: monitor.StatusUp, failures: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, flips := observed(t, tt.cfg, tt.events...)
			if len(flips) != len(tt.flips) {
				t.Fatalf("flips %+v, want %+v", flips, tt.flips)
			}
			for i := range flips {
				if !flips[i].At.Equal(tt.flips[i].At) || flips[i].From != tt.flips[i].From || flips[i].To != tt.flips[i].To ||
					flips[i].Reason != tt.flips[i].Reason || flips[i].Detail != tt.flips[i].Detail {
					t.Errorf("flip %d = %+v, want %+v", i, flips[i], tt.flips[i])
				}
			}
			now := tt.events[len(tt.events)-1].At
			if st := tt.cfg.Status(f, now); st != tt.status {
				t.Errorf("status %s, want %s", st, tt.status)
			}
			if n, _ := tt.cfg.Failures(f, now); n != tt.failures {
				t.Errorf("failures %d, want %d", n, tt.failures)
			}
		})
	}
}

// TestPolicyDeadline: with a threshold, alert_after is the deadline of the
// last run tolerated, and the deadline loop wakes at each one before it.
func TestPolicyDeadline(t *testing.T) {
	three := simple
	three.FailureThreshold = 3
	f, _ := observed(t, three, success(0))
	if dl, ok := three.Deadline(f); !ok || !dl.Equal(at(3*h+10*m)) {
		t.Errorf("Deadline = %s, want %s", optTime(dl, ok), at(3*h+10*m))
	}
	var wakes []time.Time
	for now := at(0); len(wakes) < 10; {
		next, ok := three.NextChange(f, now)
		if !ok {
			break
		}
		wakes = append(wakes, next)
		f, _ = three.Observe(f, next)
		now = next
	}
	want := []time.Duration{h, h + 10*m, 2 * h, 2*h + 10*m, 3 * h, 3*h + 10*m}
	if len(wakes) != len(want) {
		t.Fatalf("wakes %v, want %v", wakes, want)
	}
	for i := range want {
		if !wakes[i].Equal(at(want[i])) {
			t.Errorf("wake %d at %s, want %s", i, wakes[i], at(want[i]))
		}
	}
	if st := three.Status(f, at(3*h+10*m)); st != monitor.StatusDown {
		t.Errorf("status after the last wake %s, want down", st)
	}
}
