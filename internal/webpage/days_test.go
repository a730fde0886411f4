package webpage

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/uptime"
)

// A check that flipped every ten minutes for a week is at most a shape a
// day on a status page; one that was up all along, one shape.
func TestStripIsAtMostAShapeADayHoweverOftenTheCheckFlipped(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	created := now.Add(-120 * 24 * time.Hour)
	var flips []store.Flip // newest first, the oldest 7 days ago
	for i := range 7 * 24 * 6 {
		flips = append(flips, store.Flip{N: int64(7*24*6 - i), At: now.Add(-time.Duration(i+1) * 10 * time.Minute), Up: i%2 == 0})
	}
	width := func(strip []Day) (w float64) {
		for _, d := range strip {
			w += d.Width
		}
		return w
	}

	strip := Strip(uptime.Of(uptime.Check{Created: created, Flips: flips, Status: monitor.StatusUp}, now), now)
	// Up until the first flip (83 days in one shape), then a shape for
	// each of the 8 days it flapped, today's included.
	if len(strip) != 9 || width(strip) != Days || strip[0].Class != "up" || strip[0].Width != 83 {
		t.Fatalf("flapping for a week: %+v", strip)
	}
	if !strings.HasPrefix(strip[0].Title, "Mon 7 Sep – Sat 28 Nov: up 100%") {
		t.Errorf("the days before: %q", strip[0].Title)
	}
	for i, d := range strip[1:] {
		if d.Class != "some" || d.Width != 1 || d.X != float64(83+i) {
			t.Errorf("flapping day %d: %+v", i, d)
		}
	}
	if d := strip[len(strip)-2]; !strings.HasPrefix(d.Title, "Sat 5 Dec: up 50") {
		t.Errorf("yesterday, half down: %+v", d)
	}

	strip = Strip(uptime.Of(uptime.Check{Created: created, Status: monitor.StatusUp}, now), now)
	if len(strip) != 1 || strip[0].Class != "up" || strip[0].Width != Days ||
		strip[0].Title != "Mon 7 Sep – Sun 6 Dec: up 100%" {
		t.Errorf("up all along: %+v", strip)
	}
}
