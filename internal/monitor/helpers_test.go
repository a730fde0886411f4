package monitor_test

import (
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// t0 is the origin of every test timeline.
var t0 = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns t0+d.
func at(d time.Duration) time.Time { return t0.Add(d) }

const (
	m = time.Minute
	h = time.Hour
	d = 24 * time.Hour
)

// simple is a Simple check with a one-hour period and ten minutes of grace.
var simple = monitor.Config{Timeout: h, Grace: 10 * m}

// every is a fake schedule: the instants origin+k*period for every integer k,
// none after until (when set). Like the real schedules, Next truncates t to
// whole seconds and returns the first instant strictly after it.
type every struct {
	origin time.Time
	period time.Duration
	until  time.Time
}

func (s every) Next(t time.Time) (time.Time, bool) {
	t = t.Truncate(time.Second)
	k := t.Sub(s.origin) / s.period // truncated towards zero
	n := s.origin.Add(k * s.period)
	for !n.After(t) {
		n = n.Add(s.period)
	}
	for n.Add(-s.period).After(t) {
		n = n.Add(-s.period)
	}
	if !s.until.IsZero() && n.After(s.until) {
		return time.Time{}, false
	}
	return n, true
}

// Event constructors, with instants relative to t0.
func success(off time.Duration) monitor.Event {
	return monitor.Event{Kind: monitor.EventPing, Ping: monitor.PingSuccess, At: at(off)}
}

func fail(off time.Duration) monitor.Event {
	return monitor.Event{Kind: monitor.EventPing, Ping: monitor.PingFail, At: at(off)}
}

func start(off time.Duration) monitor.Event {
	return monitor.Event{Kind: monitor.EventPing, Ping: monitor.PingStart, At: at(off)}
}

func ping(kind monitor.PingKind, off time.Duration) monitor.Event {
	return monitor.Event{Kind: monitor.EventPing, Ping: kind, At: at(off)}
}

func exit(code int, off time.Duration) monitor.Event {
	return monitor.Event{Kind: monitor.EventExitStatus, ExitStatus: code, At: at(off)}
}

func pause(off time.Duration) monitor.Event {
	return monitor.Event{Kind: monitor.EventPause, At: at(off)}
}

func resume(off time.Duration) monitor.Event {
	return monitor.Event{Kind: monitor.EventResume, At: at(off)}
}

func tick(off time.Duration) monitor.Event {
	return monitor.Event{Kind: monitor.EventTick, At: at(off)}
}

// run applies events from the zero Facts and returns the facts and the flips.
func run(t testing.TB, c monitor.Config, events ...monitor.Event) (monitor.Facts, []monitor.Flip) {
	t.Helper()
	return runFrom(t, c, monitor.Facts{}, events...)
}

func runFrom(t testing.TB, c monitor.Config, f monitor.Facts, events ...monitor.Event) (monitor.Facts, []monitor.Flip) {
	t.Helper()
	var flips []monitor.Flip
	for _, ev := range events {
		var flip *monitor.Flip
		var err error
		f, flip, err = c.Apply(f, ev)
		if err != nil {
			t.Fatalf("Apply(%+v): %v", ev, err)
		}
		if flip != nil {
			flips = append(flips, *flip)
		}
	}
	return f, flips
}

// optTime formats an optional instant for messages and comparisons.
func optTime(t time.Time, ok bool) string {
	if !ok {
		return "none"
	}
	return t.UTC().Format(time.RFC3339Nano)
}
