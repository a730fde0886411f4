package uptime

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// at is t0 plus n hours.
func at(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Hour))) }

func down(n float64, from monitor.Status) store.Flip {
	return store.Flip{At: at(n), Up: false, From: from, To: monitor.StatusDown}
}

func up(n, since float64) store.Flip {
	f := store.Flip{At: at(n), Up: true, From: monitor.StatusDown, To: monitor.StatusUp}
	if since >= 0 {
		f.Since = at(since)
	}
	return f
}

// newestFirst lists flips as the store does.
func newestFirst(flips ...store.Flip) []store.Flip {
	out := make([]store.Flip, len(flips))
	for i, f := range flips {
		out[len(flips)-1-i] = f
	}
	return out
}

// show writes a history as "state a-b" in hours from t0, a * for a down
// that began; the first span (from the zero time) as "unknown -b".
func show(h History) string {
	var parts []string
	hours := func(t time.Time) string { return fmt.Sprint(t.Sub(t0).Hours()) }
	for i, s := range h {
		from := hours(s.From)
		if i == 0 {
			from = ""
		}
		mark := ""
		if s.Began {
			mark = "*"
		}
		parts = append(parts, fmt.Sprintf("%s %s-%s%s", s.State, from, hours(s.To), mark))
	}
	return strings.Join(parts, ", ")
}

func TestOf(t *testing.T) {
	held := func(n, until float64) store.Flip {
		f := down(n, monitor.StatusUp)
		f.Held, f.HeldUntil = "upgrade", at(until)
		return f
	}
	for _, tc := range []struct {
		name string
		c    Check
		end  float64
		want string
	}{
		{"an up check that never flipped is up since its creation",
			Check{Created: at(10), Status: monitor.StatusUp}, 100,
			"unknown -10, up 10-100"},
		{"a new check that was never pinged counts as up, as the reference counts no downtime before a first ping",
			Check{Created: at(10), Status: monitor.StatusNew}, 100,
			"unknown -10, up 10-100"},
		{"up for a while, then down: up before the first flip, not unknown",
			Check{Created: at(10), Status: monitor.StatusDown, Flips: newestFirst(down(10.5, monitor.StatusUp))}, 11,
			"unknown -10, up 10-10.5, down 10.5-11*"},
		{"a down and back up",
			Check{Created: at(0), Status: monitor.StatusUp, Flips: newestFirst(down(5, monitor.StatusUp), up(7, 5))}, 10,
			"unknown -0, up 0-5, down 5-7*, up 7-10"},
		{"an oldest flip up (its down pruned, over 90 days ago): down from the down's beginning, unknown before",
			Check{Created: at(0), Status: monitor.StatusUp, Flips: newestFirst(up(7, 3))}, 10,
			"unknown -3, down 3-7*, up 7-10"},
		{"down since before the flips the store keeps",
			Check{Created: at(0), Status: monitor.StatusDown}, 10,
			"unknown -0, down 0-10"},
		{"a paused check that never flipped",
			Check{Created: at(0), Status: monitor.StatusPaused, PausedAt: at(4)}, 10,
			"unknown -0, up 0-4, paused 4-10"},
		{"down, paused, resumed and up again: the pause ends the down, and no flip follows",
			Check{Created: at(0), Status: monitor.StatusUp, Flips: newestFirst(down(2, monitor.StatusUp)), PausedAt: at(4), ResumedAt: at(6)}, 10,
			"unknown -0, up 0-2, down 2-4*, paused 4-6, up 6-10"},
		{"a down from paused: paused before it",
			Check{Created: at(0), Status: monitor.StatusDown, Flips: newestFirst(down(5, monitor.StatusPaused))}, 10,
			"unknown -0, paused 0-5, down 5-10*"},
		{"two downs with no pause known between: the first one's end is unknown",
			Check{Created: at(0), Status: monitor.StatusDown, Flips: newestFirst(down(2, monitor.StatusUp), down(6, monitor.StatusNew))}, 10,
			"unknown -0, up 0-2, unknown 2-6*, down 6-10*"},
		{"a down a window held, back up before the window ended: no down",
			Check{Created: at(0), Status: monitor.StatusUp, Flips: newestFirst(held(2, 5), up(3, 2))}, 10,
			"unknown -0, up 0-2, maintenance 2-3, up 3-10"},
		{"a down a window held that outlasts it: a down from the window's end",
			Check{Created: at(0), Status: monitor.StatusDown, Flips: newestFirst(held(2, 5))}, 10,
			"unknown -0, up 0-2, maintenance 2-5, down 5-10*"},
		{"a down a window held, paused inside it",
			Check{Created: at(0), Status: monitor.StatusPaused, Flips: newestFirst(held(2, 5)), PausedAt: at(3)}, 10,
			"unknown -0, up 0-2, maintenance 2-3, paused 3-10"},
		{"a hold of flapping is no maintenance",
			Check{Created: at(0), Status: monitor.StatusDown, Flips: func() []store.Flip {
				f := down(2, monitor.StatusUp)
				f.Held, f.HeldUntil = store.HeldFlapping, at(5)
				return []store.Flip{f}
			}()}, 10,
			"unknown -0, up 0-2, down 2-10*"},
		{"only the newest flips, read: unknown before them",
			Check{Created: at(0), Status: monitor.StatusUp, Truncated: true, Flips: newestFirst(down(5, monitor.StatusUp), up(7, 5))}, 10,
			"unknown -5, down 5-7*, up 7-10"},
		{"only the newest flips, the oldest up: known from its down's beginning",
			Check{Created: at(0), Status: monitor.StatusUp, Truncated: true, Flips: newestFirst(up(7, 4))}, 10,
			"unknown -4, down 4-7*, up 7-10"},
		{"notices are no flips",
			Check{Created: at(0), Status: monitor.StatusUp, Flips: []store.Flip{{At: at(5), Notice: "reminder"}}}, 10,
			"unknown -0, up 0-10"},
		{"what comes after the end is left out",
			Check{Created: at(0), Status: monitor.StatusUp, Flips: newestFirst(down(5, monitor.StatusUp), up(12, 5)), PausedAt: at(13)}, 10,
			"unknown -0, up 0-5, down 5-10*"},
		// A report asks after its period's end, when the check may have
		// changed since: it was what it was at the end.
		{"down since just after the end, nothing before: up until the end",
			Check{Created: at(0), Status: monitor.StatusDown, Flips: newestFirst(down(10.1, monitor.StatusUp))}, 10,
			"unknown -0, up 0-10"},
		{"paused since the end, nothing before: up until the end",
			Check{Created: at(0), Status: monitor.StatusPaused, PausedAt: at(10.5)}, 10,
			"unknown -0, up 0-10"},
		{"paused since before the end: paused",
			Check{Created: at(0), Status: monitor.StatusPaused, PausedAt: at(4)}, 10,
			"unknown -0, up 0-4, paused 4-10"},
		{"up since just after the end: down until then, since the flip's down began",
			Check{Created: at(0), Status: monitor.StatusUp, Flips: newestFirst(up(11, 3))}, 10,
			"unknown -3, down 3-10*"},
		{"up since after the end, its down's beginning unknown: down all along",
			Check{Created: at(0), Status: monitor.StatusUp, Flips: newestFirst(up(11, -1))}, 10,
			"unknown -0, down 0-10"},
		{"created after the end: nothing but unknown",
			Check{Created: at(20), Status: monitor.StatusUp}, 10,
			"unknown -10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := show(Of(tc.c, at(tc.end))); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestMeasure(t *testing.T) {
	h := Of(Check{Created: at(0), Status: monitor.StatusPaused,
		Flips:    newestFirst(down(2, monitor.StatusUp), up(3, 2), func() store.Flip { f := down(5, monitor.StatusUp); f.Held, f.HeldUntil = "w", at(6); return f }()),
		PausedAt: at(8)}, at(10))
	// up 0-2, down 2-3*, up 3-5, maintenance 5-6, down 6-8*, paused 8-10
	for _, tc := range []struct {
		from, to float64
		want     Figures
		uptime   float64
	}{
		{-5, 10, Figures{Up: 4 * time.Hour, Down: 3 * time.Hour, Maintenance: time.Hour, Paused: 2 * time.Hour, Unknown: 5 * time.Hour, Downs: 2}, 4.0 / 7},
		// A down that began before the span is in it, but did not begin in it.
		{2.5, 4, Figures{Up: time.Hour, Down: 30 * time.Minute}, 2.0 / 3},
		{6, 7, Figures{Down: time.Hour, Downs: 1}, 0},
		{8, 10, Figures{Paused: 2 * time.Hour}, -1},
	} {
		got := h.Measure(at(tc.from), at(tc.to))
		if got != tc.want {
			t.Errorf("[%v, %v): %+v, want %+v", tc.from, tc.to, got, tc.want)
		}
		share, ok := got.Uptime()
		if ok != (tc.uptime >= 0) || ok && share != tc.uptime {
			t.Errorf("[%v, %v): uptime %v %v, want %v", tc.from, tc.to, share, ok, tc.uptime)
		}
	}
}

// FuzzOf checks what holds for any flips: the spans lie back to back from
// the zero time to the end, nothing before the creation is known, the
// figures of a stretch add up to its length, and no more downs begin than
// there are down flips.
func FuzzOf(f *testing.F) {
	f.Add([]byte{1, 20, 2, 30, 3, 40}, uint8(5), uint8(0), uint8(0), uint8(2), false)
	f.Add([]byte{0, 5, 0, 7, 1, 9}, uint8(0), uint8(6), uint8(8), uint8(1), true)
	f.Fuzz(func(t *testing.T, raw []byte, created, paused, resumed, status uint8, truncated bool) {
		var flips []store.Flip
		downs := 0
		for i := 0; i+1 < len(raw) && len(flips) < 50; i += 2 {
			kind, n := raw[i]%4, float64(raw[i+1])
			switch kind {
			case 0:
				flips = append(flips, up(n, n-float64(raw[i]%7)))
			case 1:
				flips = append(flips, down(n, monitor.StatusUp))
				downs++
			case 2:
				fl := down(n, monitor.StatusPaused)
				fl.Held, fl.HeldUntil = "w", at(n+float64(raw[i]%5))
				flips = append(flips, fl)
				downs++
			default:
				flips = append(flips, store.Flip{At: at(n), Notice: "reminder"})
			}
		}
		slices.SortStableFunc(flips, func(a, b store.Flip) int { return b.At.Compare(a.At) })
		c := Check{Created: at(float64(created)), Flips: flips, Truncated: truncated,
			Status: []monitor.Status{monitor.StatusNew, monitor.StatusUp, monitor.StatusDown, monitor.StatusPaused}[status%4]}
		if paused > 0 {
			c.PausedAt, c.ResumedAt = at(float64(paused)), at(float64(resumed))
		}
		end := at(260)
		h := Of(c, end)
		if !h[0].From.IsZero() || !h[len(h)-1].To.Equal(end) {
			t.Fatalf("not from the zero time to the end: %s", show(h))
		}
		for i, s := range h {
			if !s.To.After(s.From) && (i != 0 || !s.To.IsZero()) {
				t.Fatalf("an empty span: %s", show(h))
			}
			if i > 0 && !s.From.Equal(h[i-1].To) {
				t.Fatalf("not back to back: %s", show(h))
			}
			if s.State != Unknown && s.From.Before(c.Created) {
				t.Fatalf("known before the creation: %s", show(h))
			}
		}
		from, to := at(float64(raw0(raw))), at(200)
		fig := h.Measure(from, to)
		if total := fig.Up + fig.Down + fig.Maintenance + fig.Paused + fig.Unknown; total != to.Sub(from) {
			t.Fatalf("figures %+v add up to %v, not %v: %s", fig, total, to.Sub(from), show(h))
		}
		if fig.Downs > downs+1 { // +1: the down an up flip ended
			t.Fatalf("%d downs from %d down flips: %s", fig.Downs, downs, show(h))
		}
	})
}

func raw0(raw []byte) byte {
	if len(raw) == 0 {
		return 0
	}
	return raw[0] % 150
}
