// Package runstats computes how a check's runs behave over a window of
// time: how many ran, failed or were missed, the success rate, the
// duration percentiles and how they moved against the window before. It
// is pure: the store supplies the history, the API, the dashboard and the
// metrics show the result.
package runstats

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/words"
)

// The windows a user picks from, and the default.
const (
	Day     = 24 * time.Hour
	Week    = 7 * Day
	Month   = 30 * Day
	Default = Week
)

// MaxWindow is the longest window: the runs kept (store.RunLimit) rarely
// reach further, and the trend reads twice the window back.
const MaxWindow = 31 * Day

// ParseWindow reads a window as the API and the dashboard take it: a
// number of days ("7d") or hours ("12h"), from one hour to 31 days.
func ParseWindow(s string) (time.Duration, error) {
	if s == "" {
		return Default, nil
	}
	unit := time.Hour
	num, ok := strings.CutSuffix(s, "h")
	if !ok {
		num, ok = strings.CutSuffix(s, "d")
		unit = Day
	}
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n <= 0 || len(num) > 4 {
		return 0, fmt.Errorf("window %q: want a number of days or hours, such as 1d, 7d, 30d or 12h", s)
	}
	w := time.Duration(n) * unit
	if w > MaxWindow {
		return 0, fmt.Errorf("window %q: at most 31d", s)
	}
	return w, nil
}

// FormatWindow is the window as ParseWindow reads it.
func FormatWindow(w time.Duration) string {
	if w%Day == 0 {
		return fmt.Sprintf("%dd", w/Day)
	}
	return fmt.Sprintf("%dh", w/time.Hour)
}

// Stats are a check's runs over the window [From, To]: the window before
// it is [From - window, From).
type Stats struct {
	From, To time.Time
	// Runs ended in the window, by how: Succeeded + Failed = Runs.
	Runs, Succeeded, Failed int
	// Missed is how many times the check went down for lack of a ping in
	// the window (outside maintenance windows): a run that never reported.
	Missed int
	// SuccessRate is Succeeded / (Runs + Missed), in [0, 1]; valid when
	// HasRate (some run ended or was missed).
	SuccessRate float64
	HasRate     bool
	// Timed is how many of the runs had a duration (a start ping began
	// them); the percentiles are over those, valid when Timed > 0.
	Timed         int
	P50, P95, P99 time.Duration
	Max           time.Duration
	// LastSuccess is the newest successful run's end, in the window or
	// not (zero: none ever).
	LastSuccess time.Time
	// Partial: the store let go runs that ended in the window (the check
	// keeps its last store.RunLimit pings' runs), so the figures, misses
	// included, are over the window's part after HeldSince.
	Partial   bool
	HeldSince time.Time
	// Trend compares the window with the one before it, when both have
	// enough runs to say.
	Trend Trend
	// InWindow are the window's runs, oldest first (shared with the
	// history: read only), and MissedInWindow its missed deadlines, for
	// charts.
	InWindow       []store.Run
	MissedInWindow []time.Time
}

// Trend is how the window compares with the window of the same length
// before it.
type Trend struct {
	// P95Change is the p95 duration's relative change ((now - before) /
	// before); valid when HasP95.
	P95Before time.Duration
	P95Change float64
	HasP95    bool
	// RateBefore is the previous window's success rate; valid when HasRate.
	RateBefore float64
	HasRate    bool
}

// MinTrendRuns is how many timed runs each window needs before their p95
// are compared: fewer say more about chance than about the job.
const MinTrendRuns = 5

// Summarize computes the statistics of the window of the given length
// that ends at now, from a history that reaches back at least two windows
// (for the trend).
func Summarize(h store.History, now time.Time, window time.Duration) Stats {
	from := now.Add(-window)
	// The window ends at now, which it holds: a run that ended this
	// instant is in it. (end is now's next instant, the store's clocks
	// counting in microseconds.)
	end := now.Add(time.Microsecond)
	// Runs after Dropped are whole: where the window reaches back past
	// it, the figures are over what follows it, misses too (the flips
	// outlive the runs: counting them alone would sink the rate).
	held := from
	if !h.Dropped.IsZero() && !h.Dropped.Before(from) {
		// A window in the past (a report's) may end before it: then
		// nothing of it is held.
		held = h.Dropped.Add(time.Microsecond)
		if held.After(end) {
			held = end
		}
	}
	st := summarize(h, held, end)
	st.From, st.To = from, now
	if held.After(from) {
		st.Partial, st.HeldSince = true, h.Dropped
	}
	first, _ := slices.BinarySearchFunc(h.Runs, held, func(r store.Run, t time.Time) int { return r.Ended.Compare(t) })
	last, _ := slices.BinarySearchFunc(h.Runs, end, func(r store.Run, t time.Time) int { return r.Ended.Compare(t) })
	st.InWindow = h.Runs[first:last:last]
	for _, m := range h.Missed {
		if !m.Before(held) && m.Before(end) {
			st.MissedInWindow = append(st.MissedInWindow, m)
		}
	}
	st.LastSuccess = h.LastSuccess
	for _, r := range slices.Backward(h.Runs) {
		if !r.Failed {
			if r.Ended.After(st.LastSuccess) {
				st.LastSuccess = r.Ended
			}
			break
		}
	}
	// The trend needs the window before held whole too.
	if len(h.Runs) > 0 && (h.Dropped.IsZero() || h.Dropped.Before(from.Add(-window))) {
		before := summarize(h, from.Add(-window), from)
		if st.Timed >= MinTrendRuns && before.Timed >= MinTrendRuns && before.P95 > 0 {
			st.Trend.P95Before, st.Trend.HasP95 = before.P95, true
			st.Trend.P95Change = float64(st.P95-before.P95) / float64(before.P95)
		}
		if before.HasRate {
			st.Trend.RateBefore, st.Trend.HasRate = before.SuccessRate, true
		}
	}
	return st
}

// summarize counts the runs and misses in [from, to).
func summarize(h store.History, from, to time.Time) Stats {
	var st Stats
	var durations []time.Duration
	for _, r := range h.Runs {
		if r.Ended.Before(from) || !r.Ended.Before(to) {
			continue
		}
		st.Runs++
		if r.Failed {
			st.Failed++
		} else {
			st.Succeeded++
		}
		if r.HasDuration {
			durations = append(durations, r.Duration)
		}
	}
	for _, m := range h.Missed {
		if !m.Before(from) && m.Before(to) {
			st.Missed++
		}
	}
	if n := st.Runs + st.Missed; n > 0 {
		st.SuccessRate, st.HasRate = float64(st.Succeeded)/float64(n), true
	}
	if len(durations) > 0 {
		slices.Sort(durations)
		st.Timed = len(durations)
		st.P50, st.P95, st.P99 = Percentile(durations, 50), Percentile(durations, 95), Percentile(durations, 99)
		st.Max = durations[len(durations)-1]
	}
	return st
}

// Percentile is the nearest-rank percentile p (0 < p <= 100) of sorted
// durations: the smallest duration that at least p% of them do not
// exceed, always one of them (no interpolation invents a run that never
// happened). Zero for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// TrendWords says the trend as a person would: "p95 up 40% against the
// previous 7 days", or "" when there is none worth saying (under 10%).
func (s Stats) TrendWords() string {
	if !s.Trend.HasP95 {
		return ""
	}
	change := s.Trend.P95Change
	if math.Abs(change) < 0.10 {
		return ""
	}
	dir := "up"
	if change < 0 {
		dir = "down"
	}
	return fmt.Sprintf("p95 %s %.0f%% against the previous %s", dir, math.Abs(change)*100, WindowWords(s.To.Sub(s.From)))
}

// WindowWords says a window as a person would, after "last" or "the
// previous": "day", "hour", else its length in words ("7 days", "12
// hours").
func WindowWords(w time.Duration) string {
	switch w {
	case Day:
		return "day"
	case time.Hour:
		return "hour"
	}
	return words.Duration(w)
}
