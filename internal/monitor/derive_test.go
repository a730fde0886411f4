package monitor_test

import (
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

const ns = time.Nanosecond

// TestStatusBoundaries pins the grace boundaries to the nanosecond: exactly at
// the due time E the check is in grace, exactly at E+grace it is down, a
// nanosecond before each it is not yet.
func TestStatusBoundaries(t *testing.T) {
	quarter := monitor.Config{Schedule: every{origin: t0, period: 15 * m}, Grace: 5 * m}
	tests := []struct {
		name string
		cfg  monitor.Config
		f    monitor.Facts
		due  time.Time // E
	}{
		{"simple", simple, monitor.Facts{LastPing: at(0)}, at(h)},
		{"simple, ping with a fraction", simple, monitor.Facts{LastPing: at(1500 * time.Millisecond)}, at(h + 1500*time.Millisecond)},
		{"schedule, ping between instants", quarter, monitor.Facts{LastPing: at(7*m + 30*time.Second)}, at(15 * m)},
		{"schedule, ping exactly on an instant", quarter, monitor.Facts{LastPing: at(15 * m)}, at(30 * m)},
		{"schedule, ping half a second before an instant", quarter, monitor.Facts{LastPing: at(15*m - 500*time.Millisecond)}, at(15 * m)},
		{"schedule, ping half a second after an instant", quarter, monitor.Facts{LastPing: at(15*m + 500*time.Millisecond)}, at(30 * m)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			deadline := tt.due.Add(tt.cfg.Grace)
			for _, c := range []struct {
				now  time.Time
				want monitor.Status
			}{
				{tt.f.LastPing, monitor.StatusUp},
				{tt.due.Add(-ns), monitor.StatusUp},
				{tt.due, monitor.StatusGrace},
				{deadline.Add(-ns), monitor.StatusGrace},
				{deadline, monitor.StatusDown},
				{deadline.Add(100 * d), monitor.StatusDown},
			} {
				if got := tt.cfg.Status(tt.f, c.now); got != c.want {
					t.Errorf("Status at E%+v = %s, want %s", c.now.Sub(tt.due), got, c.want)
				}
			}
			if np, ok := tt.cfg.NextPing(tt.f); !ok || !np.Equal(tt.due) {
				t.Errorf("NextPing = %s, want %s", optTime(np, ok), optTime(tt.due, true))
			}
			if dl, ok := tt.cfg.Deadline(tt.f); !ok || !dl.Equal(deadline) {
				t.Errorf("Deadline = %s, want %s", optTime(dl, ok), optTime(deadline, true))
			}
		})
	}
}

// TestOverrunBoundaries: a start without a success takes the check down at
// exactly start+grace, whatever its state (new, up, paused), and not a
// nanosecond before.
func TestOverrunBoundaries(t *testing.T) {
	long := monitor.Config{Timeout: 30 * d, Grace: h}
	s := at(5 * d)
	tests := []struct {
		name   string
		f      monitor.Facts
		before monitor.Status
	}{
		{"new", monitor.Facts{LastStart: s}, monitor.StatusNew},
		{"up", monitor.Facts{LastPing: at(0), LastStart: s, State: monitor.StatusUp, StateSince: at(0)}, monitor.StatusUp},
		{"paused", monitor.Facts{LastPing: at(0), PausedAt: at(h), LastStart: s, State: monitor.StatusPaused, StateSince: at(h)}, monitor.StatusPaused},
		{"new after a resume", monitor.Facts{LastPing: at(0), PausedAt: at(h), ResumedAt: at(2 * h), LastStart: s, State: monitor.StatusUp, StateSince: at(0)}, monitor.StatusNew},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := long.Status(tt.f, s.Add(h-ns)); got != tt.before {
				t.Errorf("Status a nanosecond before start+grace = %s, want %s", got, tt.before)
			}
			if got := long.Status(tt.f, s.Add(h)); got != monitor.StatusDown {
				t.Errorf("Status at start+grace = %s, want down", got)
			}
			if dl, ok := long.Deadline(tt.f); !ok || !dl.Equal(s.Add(h)) {
				t.Errorf("Deadline = %s, want start+grace", optTime(dl, ok))
			}
			_, flip := long.Observe(tt.f, s.Add(3*d))
			want := monitor.Flip{At: s.Add(h), From: tt.before, To: monitor.StatusDown, Reason: monitor.ReasonTimeout}
			if flip == nil || *flip != want {
				t.Errorf("Observe flip = %+v, want %+v", flip, want)
			}
		})
	}
}

// TestNextPingAndDeadline covers next_ping and the going-down deadline in
// every state, including the reference's examples (7.2, 7.3; defaults of one
// day and one hour).
func TestNextPingAndDeadline(t *testing.T) {
	defaults := monitor.Config{Timeout: d, Grace: h}
	hourly := monitor.Config{Schedule: every{origin: t0, period: h}, Grace: h}
	exhausted := monitor.Config{Schedule: every{origin: t0, period: h, until: at(h)}, Grace: h}
	lp := at(10 * d) // last ping
	tests := []struct {
		name             string
		cfg              monitor.Config
		f                monitor.Facts
		nextPing, deadln time.Time // zero: none
	}{
		{"new", defaults, monitor.Facts{}, time.Time{}, time.Time{}},
		{"new, observed", defaults, monitor.Facts{State: monitor.StatusNew, StateSince: at(0)}, time.Time{}, time.Time{}},
		{"paused", defaults, monitor.Facts{LastPing: lp, PausedAt: lp.Add(h)}, time.Time{}, time.Time{}},
		{"up: last ping + timeout (7.3: last_ping + 1 d + 1 h)", defaults, monitor.Facts{LastPing: lp}, lp.Add(d), lp.Add(d + h)},
		{"cron 0 * * * * (7.2)", hourly, monitor.Facts{LastPing: at(0)}, at(h), at(2 * h)},
		{"grace: the due time, in the past", defaults, monitor.Facts{LastPing: lp, State: monitor.StatusGrace, StateSince: lp.Add(d)}, lp.Add(d), lp.Add(d + h)},
		{"down by deadline, not yet recorded: still the due time", defaults, monitor.Facts{LastPing: lp, State: monitor.StatusUp, StateSince: lp}, lp.Add(d), lp.Add(d + h)},
		{"down by deadline, recorded", defaults, monitor.Facts{LastPing: lp, State: monitor.StatusDown, StateSince: lp.Add(d + h)}, time.Time{}, time.Time{}},
		{"down by fail", defaults, monitor.Facts{LastPing: lp, LastPingFailed: true}, time.Time{}, time.Time{}},
		{"down then started (7.3)", defaults, monitor.Facts{LastPing: lp, LastPingFailed: true, LastStart: lp.Add(h)}, time.Time{}, time.Time{}},
		{"recorded down then started", defaults, monitor.Facts{LastPing: lp, State: monitor.StatusDown, StateSince: lp.Add(d + h), LastStart: lp.Add(2 * d)}, time.Time{}, time.Time{}},
		{"new, started: the start", defaults, monitor.Facts{LastStart: lp}, lp, lp.Add(h)},
		{"paused then started 2 days ago (7.3: last_start + 1 h)", defaults, monitor.Facts{LastPing: at(0), PausedAt: at(h), LastStart: lp.Add(-2 * d)}, lp.Add(-2 * d), lp.Add(-2*d + h)},
		{"up, started before the due time: the start", defaults, monitor.Facts{LastPing: lp, LastStart: lp.Add(h)}, lp.Add(h), lp.Add(2 * h)},
		{"up, started after the due time: the due time", defaults, monitor.Facts{LastPing: lp, LastStart: lp.Add(2 * d)}, lp.Add(d), lp.Add(d + h)},
		{"start before a pause no longer counts", defaults, monitor.Facts{LastPing: lp, LastStart: lp.Add(h), PausedAt: lp.Add(2 * h)}, time.Time{}, time.Time{}},
		{"start before a resume no longer counts", defaults, monitor.Facts{LastStart: lp.Add(h), PausedAt: lp, ResumedAt: lp.Add(2 * h)}, time.Time{}, time.Time{}},
		{"schedule exhausted: up forever", exhausted, monitor.Facts{LastPing: at(2 * h)}, time.Time{}, time.Time{}},
		{"schedule exhausted, started: the start", exhausted, monitor.Facts{LastPing: at(2 * h), LastStart: at(3 * h)}, at(3 * h), at(4 * h)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			np, ok := tt.cfg.NextPing(tt.f)
			if got, want := optTime(np, ok), optTime(tt.nextPing, !tt.nextPing.IsZero()); got != want {
				t.Errorf("NextPing = %s, want %s", got, want)
			}
			dl, ok := tt.cfg.Deadline(tt.f)
			if got, want := optTime(dl, ok), optTime(tt.deadln, !tt.deadln.IsZero()); got != want {
				t.Errorf("Deadline = %s, want %s", got, want)
			}
		})
	}
}

// TestNextChange: the reconciler's requeue instant.
func TestNextChange(t *testing.T) {
	exhausted := monitor.Config{Schedule: every{origin: t0, period: h, until: at(h)}, Grace: h}
	up := monitor.Facts{LastPing: at(0)}
	tests := []struct {
		name string
		cfg  monitor.Config
		f    monitor.Facts
		now  time.Duration
		want time.Time // zero: none
	}{
		{"new: none", simple, monitor.Facts{}, 0, time.Time{}},
		{"up: the due time", simple, up, 30 * m, at(h)},
		{"up, a nanosecond before the due time", simple, up, h - ns, at(h)},
		{"exactly at the due time: the deadline", simple, up, h, at(70 * m)},
		{"grace: the deadline", simple, up, 65 * m, at(70 * m)},
		{"exactly at the deadline: none", simple, up, 70 * m, time.Time{}},
		{"down by deadline: none", simple, up, 5 * h, time.Time{}},
		{"up, started before the due time, overrun before it: the deadline", simple, monitor.Facts{LastPing: at(0), LastStart: at(10 * m)}, 15 * m, at(20 * m)},
		{"up, started so that the overrun is after the due time: the due time", simple, monitor.Facts{LastPing: at(0), LastStart: at(55 * m)}, 15 * m, at(h)},
		{"new, started: start+grace", simple, monitor.Facts{LastStart: at(0)}, 5 * m, at(10 * m)},
		{"paused: none", simple, monitor.Facts{LastPing: at(0), PausedAt: at(m)}, 5 * h, time.Time{}},
		{"paused, started: start+grace", simple, monitor.Facts{LastPing: at(0), PausedAt: at(m), LastStart: at(2 * m)}, 5 * m, at(12 * m)},
		{"down by fail: none", simple, monitor.Facts{LastPing: at(0), LastPingFailed: true}, 5 * m, time.Time{}},
		{"sticky down: none", monitor.Config{Timeout: 10 * d, Grace: h}, monitor.Facts{LastPing: at(0), State: monitor.StatusDown, StateSince: at(70 * m)}, 2 * h, time.Time{}},
		{"schedule exhausted: none", exhausted, monitor.Facts{LastPing: at(2 * h)}, 3 * h, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := at(tt.now)
			got, ok := tt.cfg.NextChange(tt.f, now)
			if g, w := optTime(got, ok), optTime(tt.want, !tt.want.IsZero()); g != w {
				t.Fatalf("NextChange = %s, want %s", g, w)
			}
			before := tt.cfg.Status(tt.f, now)
			if !ok {
				if later := tt.cfg.Status(tt.f, now.Add(1000*d)); later != before {
					t.Errorf("no change reported, but status goes %s → %s", before, later)
				}
				return
			}
			if s := tt.cfg.Status(tt.f, got.Add(-ns)); s != before {
				t.Errorf("status changes before NextChange: %s → %s", before, s)
			}
			if s := tt.cfg.Status(tt.f, got); s == before {
				t.Errorf("status at NextChange still %s", s)
			}
		})
	}
}

// TestStatusDerivation covers the derivation rules over facts directly,
// including records the reconciler made before a pause or resume.
func TestStatusDerivation(t *testing.T) {
	tests := []struct {
		name string
		f    monitor.Facts
		now  time.Duration
		want monitor.Status
	}{
		{"zero facts", monitor.Facts{}, 0, monitor.StatusNew},
		{"fail ping", monitor.Facts{LastPing: at(0), LastPingFailed: true}, m, monitor.StatusDown},
		{"paused", monitor.Facts{LastPing: at(0), PausedAt: at(m)}, 10 * d, monitor.StatusPaused},
		{"paused, then a ping", monitor.Facts{LastPing: at(2 * m), PausedAt: at(m)}, 3 * m, monitor.StatusUp},
		{"a ping at the instant of the pause does not count", monitor.Facts{LastPing: at(m), PausedAt: at(m)}, 3 * m, monitor.StatusPaused},
		{"paused, resumed", monitor.Facts{LastPing: at(0), PausedAt: at(m), ResumedAt: at(2 * m)}, 10 * d, monitor.StatusNew},
		{"resumed, paused again", monitor.Facts{LastPing: at(0), PausedAt: at(3 * m), ResumedAt: at(2 * m)}, 10 * d, monitor.StatusPaused},
		{"fail before a resume no longer counts", monitor.Facts{LastPing: at(0), LastPingFailed: true, PausedAt: at(m), ResumedAt: at(2 * m)}, 3 * m, monitor.StatusNew},
		{"down recorded before a pause: paused", monitor.Facts{LastPing: at(0), State: monitor.StatusDown, StateSince: at(70 * m), PausedAt: at(2 * h)}, 3 * h, monitor.StatusPaused},
		{"down recorded before a resume: new", monitor.Facts{LastPing: at(0), State: monitor.StatusDown, StateSince: at(70 * m), PausedAt: at(2 * h), ResumedAt: at(3 * h)}, 4 * h, monitor.StatusNew},
		{"down recorded without an instant is not sticky", monitor.Facts{LastPing: at(0), State: monitor.StatusDown}, 30 * m, monitor.StatusUp},
		{"down recorded, ping at the instant it began ends it", monitor.Facts{LastPing: at(70 * m), State: monitor.StatusDown, StateSince: at(70 * m)}, 80 * m, monitor.StatusUp},
		{"down recorded, ping a nanosecond before it began does not", monitor.Facts{LastPing: at(70*m - ns), State: monitor.StatusDown, StateSince: at(70 * m)}, 80 * m, monitor.StatusDown},
		{"paused, run overran: down", monitor.Facts{LastPing: at(0), PausedAt: at(m), LastStart: at(2 * m)}, 12 * m, monitor.StatusDown},
		{"paused, run overran and recorded, new start: down", monitor.Facts{LastPing: at(0), PausedAt: at(m), LastStart: at(h), State: monitor.StatusDown, StateSince: at(12 * m)}, h + m, monitor.StatusDown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := simple.Status(tt.f, at(tt.now)); got != tt.want {
				t.Errorf("Status = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestDisplayedFacts: last_ping and started as the API shows them.
func TestDisplayedFacts(t *testing.T) {
	tests := []struct {
		name     string
		f        monitor.Facts
		lastPing time.Time
		started  bool
	}{
		{"new", monitor.Facts{}, time.Time{}, false},
		{"pinged", monitor.Facts{LastPing: at(0)}, at(0), false},
		{"started", monitor.Facts{LastPing: at(0), LastStart: at(m)}, at(0), true},
		{"paused: last ping kept, run ended", monitor.Facts{LastPing: at(0), LastStart: at(m), PausedAt: at(2 * m)}, at(0), false},
		{"paused, then started", monitor.Facts{LastPing: at(0), PausedAt: at(2 * m), LastStart: at(3 * m)}, at(0), true},
		{"resumed: last ping cleared", monitor.Facts{LastPing: at(0), PausedAt: at(2 * m), ResumedAt: at(3 * m)}, time.Time{}, false},
		{"resumed, then pinged", monitor.Facts{LastPing: at(4 * m), PausedAt: at(2 * m), ResumedAt: at(3 * m)}, at(4 * m), false},
		{"resumed, paused again: still cleared", monitor.Facts{LastPing: at(0), PausedAt: at(4 * m), ResumedAt: at(3 * m)}, time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.f.DisplayedLastPing(); !got.Equal(tt.lastPing) {
				t.Errorf("DisplayedLastPing = %s, want %s", got, tt.lastPing)
			}
			if got := tt.f.Started(); got != tt.started {
				t.Errorf("Started = %v, want %v", got, tt.started)
			}
		})
	}
}
