package dashboard

import (
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/uptime"
	"github.com/vigil-operator/vigil/internal/webpage"
)

// historyAt is the uptime rule's history of a check created at created,
// whose flips (newest first) are all the store keeps.
func historyAt(flips []store.Flip, status monitor.Status, created, now time.Time) uptime.History {
	return uptime.Of(uptime.Check{Created: created, Flips: flips, Status: status}, now)
}

// The bar is the uptime rule's history laid over the last 90 days (the
// rule's edges are package uptime's tests).
func TestTimeline(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	start := now.Add(-webpage.Span)
	// Newest first, as the store returns them: up before the span, down on
	// day 30 for a day, up again.
	flips := []store.Flip{
		{N: 3, At: start.Add(31 * day), Up: true},
		{N: 2, At: start.Add(30 * day), Up: false},
		{N: 1, At: start.Add(-10 * day), Up: true},
	}
	tl := timelineOf(historyAt(flips, monitor.StatusUp, start.Add(-20*day), now), now)
	if len(tl.Segments) != 3 {
		t.Fatalf("segments = %+v", tl.Segments)
	}
	want := []struct {
		state       string
		left, width float64
	}{{"up", 0, 100 * 30.0 / 90}, {"down", 100 * 30.0 / 90, 100 * 1.0 / 90}, {"up", 100 * 31.0 / 90, 100 * 59.0 / 90}}
	for i, w := range want {
		s := tl.Segments[i]
		if s.State != w.state || abs(s.Left-w.left) > 1e-9 || abs(s.Width-w.width) > 1e-9 {
			t.Errorf("segment %d = %s at %.3f width %.3f, want %s at %.3f width %.3f", i, s.State, s.Left, s.Width, w.state, w.left, w.width)
		}
	}
	if tl.Downs != 1 || tl.DownFor != "1 day" || abs(tl.Uptime-89.0/90) > 1e-9 || !tl.Known {
		t.Errorf("summary = %+v", tl)
	}

	// A check created 30 days ago, up for its first 40 seconds and down
	// since ten minutes after: no data before it existed, up, then down,
	// and its uptime is over its own life, not 0% (the status page said
	// "0% uptime over 90 days" of such a check).
	created := now.Add(-30 * day)
	tl = timelineOf(historyAt([]store.Flip{{N: 1, At: created.Add(40 * time.Second), From: monitor.StatusUp}},
		monitor.StatusDown, created, now), now)
	if len(tl.Segments) != 3 || tl.Segments[0].State != "unknown" || tl.Segments[0].Word != "no data" ||
		tl.Segments[1].State != "up" || tl.Segments[1].Length != "40 seconds" || tl.Segments[2].State != "down" {
		t.Errorf("up 40 s, then down: %+v", tl.Segments)
	}
	if !tl.Known || tl.Uptime <= 0 || tl.Downs != 1 {
		t.Errorf("up 40 s, then down: %+v", tl)
	}
	// A check paused a day after it was created: its paused time counts
	// neither way.
	tl = timelineOf(uptime.Of(uptime.Check{Created: created, Status: monitor.StatusPaused, PausedAt: created.Add(day)}, now), now)
	if got := states(tl); len(got) != 3 || got[2] != "paused 29 days" || !tl.Known || tl.Uptime != 1 || !tl.Paused {
		t.Errorf("paused check: %v %+v", got, tl)
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func states(tl timeline) []string {
	var out []string
	for _, s := range tl.Segments {
		out = append(out, s.State+" "+s.Length)
	}
	return out
}

func TestTimelineMaintenance(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	start := now.Add(-webpage.Span)
	// Up since before the span; on day 30 down inside a window that ended
	// a day later, and up again before it ended: no down counts.
	tl := timelineOf(historyAt([]store.Flip{
		{N: 3, At: start.Add(30*day + 12*time.Hour), Up: true},
		{N: 2, At: start.Add(30 * day), Held: "upgrade", HeldUntil: start.Add(31 * day)},
		{N: 1, At: start.Add(-10 * day), Up: true},
	}, monitor.StatusUp, start.Add(-20*day), now), now)
	if got := states(tl); len(got) != 3 || got[1] != "maintenance 12 hours" {
		t.Fatalf("segments %v", got)
	}
	if tl.Downs != 0 || tl.Uptime != 1 || !tl.Maintenance {
		t.Errorf("a down inside a window: %+v", tl)
	}
	// Down inside a window that ended a day later, and still down two
	// days after: one down, of two days; the window counts neither way.
	tl = timelineOf(historyAt([]store.Flip{
		{N: 2, At: now.Add(-3 * day), Held: "upgrade", HeldUntil: now.Add(-2 * day)},
		{N: 1, At: start.Add(-10 * day), Up: true},
	}, monitor.StatusDown, start.Add(-20*day), now), now)
	if got := states(tl); len(got) != 3 || got[1] != "maintenance 1 day" || got[2] != "down 2 days" {
		t.Fatalf("segments %v", got)
	}
	if tl.Downs != 1 || tl.DownFor != "2 days" || abs(tl.Uptime-87.0/89) > 1e-9 {
		t.Errorf("a down that outlasts its window: %+v", tl)
	}
}
