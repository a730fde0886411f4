package dashboard

import (
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

func TestTimeline(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	start := now.Add(-timelineSpan)
	// Newest first, as the store returns them: up before the span, down on
	// day 30 for a day, up again.
	flips := []store.Flip{
		{N: 3, At: start.Add(31 * day), Up: true},
		{N: 2, At: start.Add(30 * day), Up: false},
		{N: 1, At: start.Add(-10 * day), Up: true},
	}
	tl := timelineOf(flips, monitor.StatusUp, start.Add(-20*day), now)
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
	if tl.Downs != 1 || tl.DownFor != "1 day" || abs(tl.UpPercent-100*89.0/90) > 1e-9 || !tl.Known {
		t.Errorf("summary = %+v", tl)
	}

	// A new check that never flipped: nothing known.
	if tl := timelineOf(nil, monitor.StatusNew, now.Add(-day), now); tl.Known || len(tl.Segments) != 1 || tl.Segments[0].State != "unknown" {
		t.Errorf("new check: %+v", tl)
	}
	// An up check created 30 days ago that never flipped: unknown, then up.
	tl = timelineOf(nil, monitor.StatusUp, now.Add(-30*day), now)
	if len(tl.Segments) != 2 || tl.Segments[0].State != "unknown" || tl.Segments[1].State != "up" ||
		abs(tl.Segments[1].Width-100*30.0/90) > 1e-9 || tl.UpPercent != 100 {
		t.Errorf("young up check: %+v", tl)
	}
	// A paused check that never flipped says nothing about up or down.
	if tl := timelineOf(nil, monitor.StatusPaused, now.Add(-30*day), now); tl.Known || len(tl.Segments) != 1 {
		t.Errorf("paused check: %+v", tl)
	}
	// A check whose first flip (down) came 10 days ago: unknown before it.
	tl = timelineOf([]store.Flip{{N: 1, At: now.Add(-10 * day), Up: false}}, monitor.StatusDown, now.Add(-11*day), now)
	if len(tl.Segments) != 2 || tl.Segments[0].State != "unknown" || tl.Segments[1].State != "down" || tl.UpPercent != 0 {
		t.Errorf("first flip down: %+v", tl)
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

func TestTimelineMaintenance(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	start := now.Add(-timelineSpan)
	states := func(tl timeline) []string {
		var out []string
		for _, s := range tl.Segments {
			out = append(out, s.State+" "+s.Length)
		}
		return out
	}
	// Up since before the span; on day 30 down inside a window that ended
	// a day later, and up again before it ended: no down counts.
	tl := timelineOf([]store.Flip{
		{N: 3, At: start.Add(30*day + 12*time.Hour), Up: true},
		{N: 2, At: start.Add(30 * day), Held: "upgrade", HeldUntil: start.Add(31 * day)},
		{N: 1, At: start.Add(-10 * day), Up: true},
	}, monitor.StatusUp, start.Add(-20*day), now)
	if got := states(tl); len(got) != 3 || got[1] != "maintenance 12 hours" {
		t.Fatalf("segments %v", got)
	}
	if tl.Downs != 0 || tl.UpPercent != 100 || !tl.Maintenance {
		t.Errorf("a down inside a window: %+v", tl)
	}
	// Down inside a window that ended a day later, and still down two
	// days after: one down, of two days.
	tl = timelineOf([]store.Flip{
		{N: 2, At: now.Add(-3 * day), Held: "upgrade", HeldUntil: now.Add(-2 * day)},
		{N: 1, At: start.Add(-10 * day), Up: true},
	}, monitor.StatusDown, start.Add(-20*day), now)
	if got := states(tl); len(got) != 3 || got[1] != "maintenance 1 day" || got[2] != "down 2 days" {
		t.Fatalf("segments %v", got)
	}
	if tl.Downs != 1 || tl.DownFor != "2 days" || abs(tl.UpPercent-100*87.0/89) > 1e-9 {
		t.Errorf("a down that outlasts its window: %+v", tl)
	}
	// A held down whose window ended before the span: down all along.
	tl = timelineOf([]store.Flip{
		{N: 1, At: start.Add(-3 * day), Held: "upgrade", HeldUntil: start.Add(-2 * day)},
	}, monitor.StatusDown, start.Add(-20*day), now)
	if got := states(tl); len(got) != 1 || got[0] != "down 90 days" || tl.Maintenance {
		t.Fatalf("segments %v", got)
	}
	// A held up is up: only a down is left out.
	tl = timelineOf([]store.Flip{
		{N: 2, At: now.Add(-day), Up: true, Held: "upgrade", HeldUntil: now},
		{N: 1, At: now.Add(-2 * day)},
	}, monitor.StatusUp, start.Add(-20*day), now)
	if got := states(tl); len(got) != 3 || got[1] != "down 1 day" || got[2] != "up 1 day" {
		t.Fatalf("segments %v", got)
	}
}
