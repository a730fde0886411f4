package runstats

import (
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/store"
)

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// runs makes runs ending at now-ago[i], with durations d[i] (negative: no
// start ping), failed where fail[i].
func runs(ago []time.Duration, d []time.Duration, fail []bool) []store.Run {
	out := make([]store.Run, len(ago))
	for i := range ago {
		out[i] = store.Run{N: int64(i + 1), Ended: now.Add(-ago[i]), Failed: fail != nil && fail[i]}
		if d[i] >= 0 {
			out[i].Duration, out[i].HasDuration = d[i], true
		}
	}
	return out
}

// hourly is what the store reads of a check that succeeds every hour, from
// span ago to now, when it has let go the runs up to dropped: runs that
// took before until window ago, and after since.
func hourly(span, before, window, after time.Duration, dropped time.Time) store.History {
	h := store.History{Dropped: dropped}
	for at := now.Add(-span); !at.After(now); at = at.Add(time.Hour) {
		if !at.After(dropped) {
			continue
		}
		d := before
		if !at.Before(now.Add(-window)) {
			d = after
		}
		h.Runs = append(h.Runs, store.Run{N: int64(len(h.Runs) + 1), Ended: at, Duration: d, HasDuration: true})
	}
	return h
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1)
	}
	for _, tc := range []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"none", nil, 50, 0},
		{"one run is every percentile", []time.Duration{ms(7)}, 99, ms(7)},
		{"median of an odd count", []time.Duration{ms(1), ms(2), ms(3)}, 50, ms(2)},
		{"median of an even count is the lower middle", []time.Duration{ms(1), ms(2), ms(3), ms(4)}, 50, ms(2)},
		{"p95 of 1..100", hundred, 95, ms(95)},
		{"p99 of 1..100", hundred, 99, ms(99)},
		{"p100 is the slowest", hundred, 100, ms(100)},
		{"p95 of 10 runs is the slowest", hundred[:10], 95, ms(10)},
		{"p50 of 1..100", hundred, 50, ms(50)},
	} {
		if got := Percentile(tc.sorted, tc.p); got != tc.want {
			t.Errorf("%s: p%v = %v, want %v", tc.name, tc.p, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	h := time.Hour
	for _, tc := range []struct {
		name    string
		history store.History
		window  time.Duration
		check   func(t *testing.T, s Stats)
	}{
		{
			name:   "nothing ran",
			window: Week,
			check: func(t *testing.T, s Stats) {
				if s.Runs != 0 || s.HasRate || s.Timed != 0 || !s.LastSuccess.IsZero() || s.Partial || s.Trend.HasP95 {
					t.Errorf("%+v", s)
				}
			},
		},
		{
			name: "counts, rate and percentiles over the window; the edges: a run at its start or at now counts, one before it does not",
			history: store.History{
				Runs: runs(
					[]time.Duration{Day, Day - h, 5 * h, 3 * h, 2 * h, h, 0},
					[]time.Duration{ms(900), ms(100), ms(200), -1, ms(400), ms(300), ms(999)},
					[]bool{false, false, true, false, false, false, false}),
				Missed: []time.Time{now.Add(-Day - time.Second), now.Add(-4 * h)},
			},
			window: Day,
			check: func(t *testing.T, s Stats) {
				// In [now-1d, now]: the runs 1d, 23h, 5h, 3h, 2h, 1h and 0 ago; the miss 4h ago.
				if s.Runs != 7 || s.Succeeded != 6 || s.Failed != 1 || s.Missed != 1 {
					t.Errorf("runs %d, succeeded %d, failed %d, missed %d", s.Runs, s.Succeeded, s.Failed, s.Missed)
				}
				if !s.HasRate || s.SuccessRate != 6.0/8 {
					t.Errorf("success rate %v", s.SuccessRate)
				}
				// Timed: 900, 100, 200, 400, 300, 999 ms.
				if s.Timed != 6 || s.P50 != ms(300) || s.P95 != ms(999) || s.P99 != ms(999) || s.Max != ms(999) {
					t.Errorf("timed %d p50 %v p95 %v p99 %v max %v", s.Timed, s.P50, s.P95, s.P99, s.Max)
				}
				if !s.LastSuccess.Equal(now) {
					t.Errorf("last success %v: the newest success, even past the window", s.LastSuccess)
				}
				if len(s.InWindow) != 7 || s.InWindow[0].N != 1 || s.InWindow[6].N != 7 {
					t.Errorf("in the window: %+v", s.InWindow)
				}
				if !s.From.Equal(now.Add(-Day)) || !s.To.Equal(now) {
					t.Errorf("window %v..%v", s.From, s.To)
				}
			},
		},
		{
			name: "the last success is the newest that did not fail",
			history: store.History{Runs: runs([]time.Duration{3 * h, 2 * h, h}, []time.Duration{-1, -1, -1},
				[]bool{false, false, true})},
			window: Day,
			check: func(t *testing.T, s Stats) {
				if !s.LastSuccess.Equal(now.Add(-2 * h)) {
					t.Errorf("last success %v", s.LastSuccess)
				}
				if s.Timed != 0 || s.P95 != 0 {
					t.Errorf("untimed runs have no percentiles: %+v", s)
				}
			},
		},
		{
			name: "a trend: p95 of this week against last week's",
			history: store.History{Runs: runs(
				[]time.Duration{13 * Day, 12 * Day, 11 * Day, 10 * Day, 9 * Day, 6 * Day, 5 * Day, 4 * Day, 3 * Day, 2 * Day},
				[]time.Duration{ms(100), ms(100), ms(100), ms(100), ms(100), ms(140), ms(140), ms(140), ms(140), ms(140)},
				[]bool{false, true, false, false, false, false, false, false, false, false})},
			window: Week,
			check: func(t *testing.T, s Stats) {
				if !s.Trend.HasP95 || s.Trend.P95Before != ms(100) || s.Trend.P95Change < 0.399 || s.Trend.P95Change > 0.401 {
					t.Errorf("trend %+v", s.Trend)
				}
				if !s.Trend.HasRate || s.Trend.RateBefore != 0.8 {
					t.Errorf("rate before %+v", s.Trend)
				}
				if got, want := s.TrendWords(), "p95 up 40% against the previous 7 days"; got != want {
					t.Errorf("trend words %q, want %q", got, want)
				}
			},
		},
		{
			name:    "too few runs for a trend",
			history: store.History{Runs: runs([]time.Duration{10 * Day, 2 * Day}, []time.Duration{ms(100), ms(500)}, nil)},
			window:  Week,
			check: func(t *testing.T, s Stats) {
				if s.Trend.HasP95 || s.TrendWords() != "" {
					t.Errorf("trend %+v from one run a week", s.Trend)
				}
			},
		},
		{
			// The store let go the runs up to 3 days ago; the flips (misses)
			// outlive them. The figures are over the part held, misses too.
			name: "a store that let runs of the window go: partial, since then, misses too, and no trend",
			history: store.History{
				Runs: runs([]time.Duration{3*Day - h, 2 * Day, Day, h, h / 2, h / 4},
					[]time.Duration{ms(1), ms(1), ms(1), ms(1), ms(1), ms(1)}, nil),
				Missed:  []time.Time{now.Add(-5 * Day), now.Add(-4 * Day), now.Add(-Day - h)},
				Dropped: now.Add(-3 * Day),
			},
			window: Week,
			check: func(t *testing.T, s Stats) {
				if !s.Partial || !s.HeldSince.Equal(now.Add(-3*Day)) || s.Trend.HasP95 || s.Trend.HasRate {
					t.Errorf("%+v", s)
				}
				if s.Runs != 6 || s.Missed != 1 || len(s.MissedInWindow) != 1 || s.SuccessRate != 6.0/7 {
					t.Errorf("counts over the part held: %d runs, %d missed, rate %v", s.Runs, s.Missed, s.SuccessRate)
				}
			},
		},
		{
			// A check that pings every hour for months, of which the store
			// keeps 2,000 runs (83 days): what the store reads for a week
			// with its trend starts two weeks back, and the runs before
			// that, held or not, never show. Both windows are whole.
			name:    "a store that let runs go long before the windows: whole, with a trend",
			history: hourly(2*Week, ms(100), Week, ms(150), now.Add(-83*Day)),
			window:  Week,
			check: func(t *testing.T, s Stats) {
				if s.Partial {
					t.Errorf("partial: %+v", s)
				}
				if !s.Trend.HasP95 || s.Trend.P95Before != ms(100) || s.P95 != ms(150) || !s.Trend.HasRate {
					t.Errorf("trend %+v", s.Trend)
				}
			},
		},
		{
			name:    "a store that let runs of the window before go: the window whole, no trend",
			history: hourly(2*Week, ms(100), Week, ms(150), now.Add(-10*Day)),
			window:  Week,
			check: func(t *testing.T, s Stats) {
				if s.Partial || s.Runs != 7*24+1 { // both edges held
					t.Errorf("partial or short: %d runs, %+v", s.Runs, s.Partial)
				}
				if s.Trend.HasP95 || s.Trend.HasRate {
					t.Errorf("a trend against a window the store let go: %+v", s.Trend)
				}
			},
		},
		{
			// A report's week, read after the store let go its runs and
			// some after it, with a run dated before its ping was noted.
			name: "a window in the past whose runs were all let go: partial, nothing held, no panic",
			history: store.History{Runs: runs([]time.Duration{-h, -2 * h}, []time.Duration{ms(1), ms(1)}, nil),
				Dropped: now.Add(3 * h)},
			window: Week,
			check: func(t *testing.T, s Stats) {
				if !s.Partial || s.Runs != 0 || len(s.InWindow) != 0 || s.HasRate {
					t.Errorf("%+v", s)
				}
			},
		},
		{
			name:    "the last success from the check's row when no run of the history succeeded",
			history: store.History{Runs: runs([]time.Duration{h}, []time.Duration{-1}, []bool{true}), LastSuccess: now.Add(-40 * Day)},
			window:  Day,
			check: func(t *testing.T, s Stats) {
				if !s.LastSuccess.Equal(now.Add(-40 * Day)) {
					t.Errorf("last success %v", s.LastSuccess)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, Summarize(tc.history, now, tc.window))
		})
	}
}

func TestParseWindow(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  bool
	}{
		{"", Week, false},
		{"1d", Day, false},
		{"7d", Week, false},
		{"30d", Month, false},
		{"31d", 31 * Day, false},
		{"12h", 12 * time.Hour, false},
		{"32d", 0, true},
		{"0d", 0, true},
		{"-1d", 0, true},
		{"7", 0, true},
		{"1w", 0, true},
		{"d", 0, true},
		{"99999999999h", 0, true},
		{"1.5d", 0, true},
	} {
		got, err := ParseWindow(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseWindow(%q) = %v, %v", tc.in, got, err)
		}
		if err == nil && tc.in != "" {
			if back := FormatWindow(got); back != tc.in {
				t.Errorf("FormatWindow(%v) = %q, want %q", got, back, tc.in)
			}
		}
	}
}

func FuzzParseWindow(f *testing.F) {
	for _, s := range []string{"7d", "24h", "31d", "0h", "-3d", "1e9h"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWindow(s)
		if err != nil {
			return
		}
		if w < time.Hour || w > MaxWindow {
			t.Fatalf("ParseWindow(%q) = %v, out of range", s, w)
		}
		if again, err := ParseWindow(FormatWindow(w)); err != nil || again != w {
			t.Fatalf("round trip of %q: %v, %v", s, again, err)
		}
	})
}

func FuzzSummarize(f *testing.F) {
	f.Add([]byte{1, 2, 3, 200, 7, 9}, int64(Week))
	f.Fuzz(func(t *testing.T, data []byte, window int64) {
		w := time.Duration(window)
		if w <= 0 || w > MaxWindow {
			w = Week
		}
		var h store.History
		at := now.Add(-2 * w)
		for i, b := range data {
			at = at.Add(time.Duration(b) * time.Minute)
			switch b % 4 {
			case 0:
				h.Missed = append(h.Missed, at)
			default:
				h.Runs = append(h.Runs, store.Run{N: int64(i), Ended: at, Failed: b%4 == 1, Duration: time.Duration(b) * time.Second, HasDuration: b%3 != 0})
			}
		}
		s := Summarize(h, now, w)
		if s.Succeeded+s.Failed != s.Runs || s.Runs > len(h.Runs) || s.Missed > len(h.Missed) {
			t.Fatalf("counts %+v", s)
		}
		if s.HasRate && (s.SuccessRate < 0 || s.SuccessRate > 1) {
			t.Fatalf("rate %v", s.SuccessRate)
		}
		if len(s.InWindow) != s.Runs {
			t.Fatalf("%d runs in the window, %d counted", len(s.InWindow), s.Runs)
		}
		if s.Timed > 0 && (s.P50 > s.P95 || s.P95 > s.P99 || s.P99 > s.Max) {
			t.Fatalf("percentiles out of order: %+v", s)
		}
	})
}
