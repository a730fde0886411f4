package monitor_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// TestStateEventMatrix applies every event to a check in every state and
// checks the status after it, the flip and the error. Each fixture is built
// by replaying events (so its recorded state is what the reconciler would
// have recorded) and the event happens at the fixture's instant now.
//
// An expectation reads "<status> [<from>><to>[:<reason>]] [!<error>]": the
// status right after the event, the flip it records (at now), and the error
// (!exit: ErrInvalidExitStatus, !notpaused: ErrNotPaused).
func TestStateEventMatrix(t *testing.T) {
	manual := simple
	manual.ManualResume = true

	events := []struct {
		name string
		ev   func(now time.Duration) monitor.Event
	}{
		{"success", success},
		{"fail", fail},
		{"start", start},
		{"log", func(n time.Duration) monitor.Event { return ping(monitor.PingLog, n) }},
		{"ign", func(n time.Duration) monitor.Event { return ping(monitor.PingIgnored, n) }},
		{"exit0", func(n time.Duration) monitor.Event { return exit(0, n) }},
		{"exit1", func(n time.Duration) monitor.Event { return exit(1, n) }},
		{"exit256", func(n time.Duration) monitor.Event { return exit(256, n) }},
		{"pause", pause},
		{"resume", resume},
		{"tick", tick},
	}

	fixtures := []struct {
		name  string
		cfg   monitor.Config
		setup []monitor.Event
		now   time.Duration
		state monitor.Status // status at now, before the event
		want  [11]string     // in the order of events
	}{
		{
			name: "new", cfg: simple, setup: []monitor.Event{tick(0)}, now: h, state: monitor.StatusNew,
			want: [11]string{"up", "down new>down:fail", "new", "new", "new", "up", "down new>down:fail", "new !exit", "paused", "new !notpaused", "new"},
		},
		{
			name: "new with a run in progress", cfg: simple, setup: []monitor.Event{start(0)}, now: 5 * m, state: monitor.StatusNew,
			want: [11]string{"up", "down new>down:fail", "new", "new", "new", "up", "down new>down:fail", "new !exit", "paused", "new !notpaused", "new"},
		},
		{
			name: "up", cfg: simple, setup: []monitor.Event{success(0)}, now: 30 * m, state: monitor.StatusUp,
			want: [11]string{"up", "down up>down:fail", "up", "up", "up", "up", "down up>down:fail", "up !exit", "paused", "up !notpaused", "up"},
		},
		{
			name: "up with a run in progress", cfg: simple, setup: []monitor.Event{success(0), start(20 * m)}, now: 25 * m, state: monitor.StatusUp,
			want: [11]string{"up", "down up>down:fail", "up", "up", "up", "up", "down up>down:fail", "up !exit", "paused", "up !notpaused", "up"},
		},
		{
			name: "grace", cfg: simple, setup: []monitor.Event{success(0), tick(65 * m)}, now: 66 * m, state: monitor.StatusGrace,
			want: [11]string{"up", "down grace>down:fail", "grace", "grace", "grace", "up", "down grace>down:fail", "grace !exit", "paused", "grace !notpaused", "grace"},
		},
		{
			name: "down by timeout", cfg: simple, setup: []monitor.Event{success(0), tick(3 * h)}, now: 3 * h, state: monitor.StatusDown,
			want: [11]string{"up down>up", "down", "down", "down", "down", "up down>up", "down", "down !exit", "paused", "down !notpaused", "down"},
		},
		{
			name: "down by fail", cfg: simple, setup: []monitor.Event{fail(0)}, now: 30 * m, state: monitor.StatusDown,
			want: [11]string{"up down>up", "down", "down", "down", "down", "up down>up", "down", "down !exit", "paused", "down !notpaused", "down"},
		},
		{
			name: "down by an overrun run", cfg: simple, setup: []monitor.Event{start(0), tick(10 * m)}, now: 20 * m, state: monitor.StatusDown,
			want: [11]string{"up down>up", "down", "down", "down", "down", "up down>up", "down", "down !exit", "paused", "down !notpaused", "down"},
		},
		{
			name: "paused", cfg: simple, setup: []monitor.Event{success(0), pause(10 * m)}, now: 30 * m, state: monitor.StatusPaused,
			want: [11]string{"up", "down paused>down:fail", "paused", "paused", "paused", "up", "down paused>down:fail", "paused !exit", "paused", "new", "paused"},
		},
		{
			name: "paused with a run in progress", cfg: simple, setup: []monitor.Event{pause(0), start(10 * m)}, now: 15 * m, state: monitor.StatusPaused,
			want: [11]string{"up", "down paused>down:fail", "paused", "paused", "paused", "up", "down paused>down:fail", "paused !exit", "paused", "new", "paused"},
		},
		{
			name: "paused with manual resume", cfg: manual, setup: []monitor.Event{success(0), pause(10 * m)}, now: 30 * m, state: monitor.StatusPaused,
			want: [11]string{"paused", "paused", "paused", "paused", "paused", "paused", "paused", "paused !exit", "paused", "new", "paused"},
		},
	}

	for _, fx := range fixtures {
		base, _ := run(t, fx.cfg, fx.setup...)
		if got := fx.cfg.Status(base, at(fx.now)); got != fx.state {
			t.Fatalf("%s: fixture status at now = %s, want %s", fx.name, got, fx.state)
		}
		for i, e := range events {
			t.Run(fx.name+"/"+e.name, func(t *testing.T) {
				now := at(fx.now)
				f, flip, err := fx.cfg.Apply(base, e.ev(fx.now))
				got := string(fx.cfg.Status(f, now))
				if flip != nil {
					got += " " + string(flip.From) + ">" + string(flip.To)
					if flip.Reason != "" {
						got += ":" + string(flip.Reason)
					}
					if !flip.At.Equal(now) {
						t.Errorf("flip at %s, want now (%s)", optTime(flip.At, true), optTime(now, true))
					}
				}
				switch {
				case err == nil:
				case errors.Is(err, monitor.ErrInvalidExitStatus):
					got += " !exit"
				case errors.Is(err, monitor.ErrNotPaused):
					got += " !notpaused"
				default:
					got += " !" + err.Error()
				}
				if got != fx.want[i] {
					t.Errorf("got %q, want %q", got, fx.want[i])
				}
				if err != nil && f != base {
					t.Errorf("facts changed on error:\n got %+v\nwant %+v", f, base)
				}
				// The reconciler's view settles: observing again changes nothing.
				if f2, flip2 := fx.cfg.Observe(f, now); flip2 != nil || f2 != f {
					t.Errorf("second Observe: flip %+v, facts %+v, want none and %+v", flip2, f2, f)
				}
				if err == nil && f.State != fx.cfg.Status(f, now) {
					t.Errorf("recorded state %s, derived %s", f.State, fx.cfg.Status(f, now))
				}
			})
		}
	}
}

// TestTimelines replays longer stories, checking the status and the flips
// after each step. A step can change the configuration (an API update).
func TestTimelines(t *testing.T) {
	type step struct {
		ev    monitor.Event
		cfg   *monitor.Config // replaces the configuration from this step on
		want  monitor.Status
		flips string // flips recorded by this step, "from>to:reason@offset" joined by ","
	}
	longer := monitor.Config{Timeout: 10 * h, Grace: 10 * m}
	tests := []struct {
		name  string
		cfg   monitor.Config
		steps []step
	}{
		{
			name: "brand-new check never goes down",
			cfg:  simple,
			steps: []step{
				{ev: tick(0), want: monitor.StatusNew},
				{ev: tick(2 * h), want: monitor.StatusNew},
				{ev: tick(365 * d), want: monitor.StatusNew},
				{ev: tick(100 * 365 * d), want: monitor.StatusNew},
			},
		},
		{
			name: "up, grace, down, back up",
			cfg:  simple,
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: tick(h - time.Nanosecond), want: monitor.StatusUp},
				{ev: tick(h), want: monitor.StatusGrace},
				{ev: tick(70*m - time.Nanosecond), want: monitor.StatusGrace},
				{ev: tick(70 * m), want: monitor.StatusDown, flips: "grace>down:timeout@1h10m0s"},
				{ev: tick(5 * h), want: monitor.StatusDown},
				{ev: success(6 * h), want: monitor.StatusUp, flips: "down>up@6h0m0s"},
			},
		},
		{
			name: "down flip at the deadline even when observed late",
			cfg:  simple,
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: tick(3 * d), want: monitor.StatusDown, flips: "up>down:timeout@1h10m0s"},
			},
		},
		{
			name: "sticky down across a timeout change",
			cfg:  simple,
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: tick(2 * h), want: monitor.StatusDown, flips: "up>down:timeout@1h10m0s"},
				// The user lengthens the timeout: the deadline moves to 10h10m,
				// but the check was recorded down and stays down until pinged.
				{ev: tick(2 * h), cfg: &longer, want: monitor.StatusDown},
				{ev: tick(3 * h), want: monitor.StatusDown},
				{ev: start(4 * h), want: monitor.StatusDown},
				{ev: success(5 * h), want: monitor.StatusUp, flips: "down>up@5h0m0s"},
				{ev: tick(15*h + 10*m), want: monitor.StatusDown, flips: "up>down:timeout@15h10m0s"},
			},
		},
		{
			name: "a timeout change before the deadline is observed moves it",
			cfg:  simple,
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: tick(30 * m), cfg: &longer, want: monitor.StatusUp},
				{ev: tick(2 * h), want: monitor.StatusUp},
				{ev: tick(11 * h), want: monitor.StatusDown, flips: "up>down:timeout@10h10m0s"},
			},
		},
		{
			name: "shortening the timeout puts a down flip in the past",
			cfg:  longer,
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: tick(5 * h), cfg: &simple, want: monitor.StatusDown, flips: "up>down:timeout@1h10m0s"},
			},
		},
		{
			name: "fail, fail, success",
			cfg:  simple,
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: fail(10 * m), want: monitor.StatusDown, flips: "up>down:fail@10m0s"},
				{ev: fail(20 * m), want: monitor.StatusDown},
				{ev: tick(5 * h), want: monitor.StatusDown},
				{ev: exit(0, 6*h), want: monitor.StatusUp, flips: "down>up@6h0m0s"},
			},
		},
		{
			name: "a run that never finishes takes a new check down",
			cfg:  simple,
			steps: []step{
				{ev: start(0), want: monitor.StatusNew},
				{ev: tick(10*m - time.Nanosecond), want: monitor.StatusNew},
				{ev: tick(10 * m), want: monitor.StatusDown, flips: "new>down:timeout@10m0s"},
				{ev: start(20 * m), want: monitor.StatusDown},
				{ev: tick(45 * m), want: monitor.StatusDown},
				{ev: success(50 * m), want: monitor.StatusUp, flips: "down>up@50m0s"},
			},
		},
		{
			name: "a run that never finishes takes a paused check down",
			cfg:  simple,
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: pause(5 * m), want: monitor.StatusPaused},
				{ev: start(2 * d), want: monitor.StatusPaused},
				{ev: tick(2*d + 10*m), want: monitor.StatusDown, flips: "paused>down:timeout@48h10m0s"},
				// Recorded down, it is no longer paused: pausing works again.
				{ev: pause(2*d + 20*m), want: monitor.StatusPaused},
				{ev: resume(2*d + 30*m), want: monitor.StatusNew},
				{ev: success(2*d + 40*m), want: monitor.StatusUp},
			},
		},
		{
			name: "a run that overruns takes an up check down before its due time",
			cfg:  monitor.Config{Timeout: d, Grace: h},
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: start(2 * h), want: monitor.StatusUp},
				{ev: tick(3 * h), want: monitor.StatusDown, flips: "up>down:timeout@3h0m0s"},
			},
		},
		{
			name: "a start after a missed deadline does not move the down flip",
			cfg:  simple,
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: start(5 * h), want: monitor.StatusDown, flips: "up>down:timeout@1h10m0s"},
			},
		},
		{
			name: "pause and resume record no flips",
			cfg:  simple,
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: pause(10 * m), want: monitor.StatusPaused},
				{ev: tick(5 * h), want: monitor.StatusPaused},
				{ev: pause(6 * h), want: monitor.StatusPaused},
				{ev: resume(7 * h), want: monitor.StatusNew},
				{ev: tick(30 * d), want: monitor.StatusNew},
				{ev: success(31 * d), want: monitor.StatusUp},
			},
		},
		{
			name: "pausing a down check, then a ping: no up flip",
			cfg:  simple,
			steps: []step{
				{ev: fail(0), want: monitor.StatusDown, flips: "new>down:fail@0s"},
				{ev: pause(10 * m), want: monitor.StatusPaused},
				{ev: success(20 * m), want: monitor.StatusUp},
				{ev: fail(30 * m), want: monitor.StatusDown, flips: "up>down:fail@30m0s"},
			},
		},
		{
			name: "a failed paused check goes down with a flip",
			cfg:  simple,
			steps: []step{
				{ev: pause(0), want: monitor.StatusPaused},
				{ev: fail(10 * m), want: monitor.StatusDown, flips: "paused>down:fail@10m0s"},
			},
		},
		{
			name: "manual resume: pings ignored until resumed",
			cfg:  monitor.Config{Timeout: h, Grace: 10 * m, ManualResume: true},
			steps: []step{
				{ev: success(0), want: monitor.StatusUp},
				{ev: pause(10 * m), want: monitor.StatusPaused},
				{ev: fail(20 * m), want: monitor.StatusPaused},
				{ev: start(30 * m), want: monitor.StatusPaused},
				{ev: tick(5 * h), want: monitor.StatusPaused},
				{ev: resume(6 * h), want: monitor.StatusNew},
				{ev: fail(7 * h), want: monitor.StatusDown, flips: "new>down:fail@7h0m0s"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.cfg
			var f monitor.Facts
			for i, s := range tt.steps {
				if s.cfg != nil {
					c = *s.cfg
				}
				var flip *monitor.Flip
				var err error
				f, flip, err = c.Apply(f, s.ev)
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				if got := c.Status(f, s.ev.At); got != s.want {
					t.Errorf("step %d (%s at %s): status %s, want %s", i, s.ev.Kind, s.ev.At.Sub(t0), got, s.want)
				}
				gotFlips := ""
				if flip != nil {
					gotFlips = formatFlip(*flip)
				}
				if gotFlips != s.flips {
					t.Errorf("step %d (%s at %s): flips %q, want %q", i, s.ev.Kind, s.ev.At.Sub(t0), gotFlips, s.flips)
				}
			}
		})
	}
}

func formatFlip(fl monitor.Flip) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s>%s", fl.From, fl.To)
	if fl.Reason != "" {
		fmt.Fprintf(&b, ":%s", fl.Reason)
	}
	fmt.Fprintf(&b, "@%s", fl.At.Sub(t0))
	return b.String()
}
