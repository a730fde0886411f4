package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/runstats"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/uptime"
	"github.com/vigil-operator/vigil/internal/webpage"
)

func TestNiceCeil(t *testing.T) {
	for _, tc := range []struct{ in, want time.Duration }{
		{0, time.Millisecond},
		{700 * time.Millisecond, time.Second},
		{time.Second, time.Second},
		{1100 * time.Millisecond, 2 * time.Second},
		{2100 * time.Millisecond, 2500 * time.Millisecond},
		{3 * time.Second, 5 * time.Second},
		{42 * time.Minute, 50 * time.Minute},
		{90 * time.Second, 2 * time.Minute},
		{3 * time.Hour, 5 * time.Hour},
	} {
		if got := niceCeil(tc.in); got != tc.want {
			t.Errorf("niceCeil(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestDurationChart(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	h := store.History{Runs: []store.Run{
		{N: 1, Ended: now.Add(-6 * 24 * time.Hour), Duration: time.Second, HasDuration: true},
		{N: 2, Ended: now.Add(-3*24*time.Hour - 12*time.Hour), Duration: 4 * time.Second, HasDuration: true, Failed: true},
		{N: 3, Ended: now.Add(-time.Hour)},
	}}
	st := runstats.Summarize(h, now, runstats.Week)
	ch := durationChartOf(st, monitor.Usual{}, time.UTC)
	if len(ch.Points) != 2 || len(ch.Untimed) != 1 {
		t.Fatalf("points %+v, untimed %+v", ch.Points, ch.Untimed)
	}
	// The scale's top is 5 s: 4 s is 4/5 of the way up; the time axis
	// runs from a week ago to now.
	if p := ch.Points[1]; p.Class != "fail" || p.Y != round1(plotBottom-(plotBottom-plotTop)*0.8) || p.X != round1(plotLeft+(plotRight-plotLeft)*0.5) {
		t.Errorf("the failed run at %+v", p)
	}
	if p := ch.Points[0]; p.Class != "ok" || p.X != round1(plotLeft+(plotRight-plotLeft)/7) || !strings.Contains(p.Title, "succeeded at 22 Nov 12:00:00 after 1 s") {
		t.Errorf("the first run at %+v", p)
	}
	if ch.YMax != "5 s" || !ch.P95.Show || ch.P95.Label != "p95 4 s" || ch.P50.Label != "p50 1 s" {
		t.Errorf("scale %q, p95 %+v, p50 %+v", ch.YMax, ch.P95, ch.P50)
	}
	if ch.From != "21 Nov" || ch.To != "28 Nov" {
		t.Errorf("axis %q..%q", ch.From, ch.To)
	}
	if ch.Usual.Show {
		t.Errorf("a band without the anomaly setting: %+v", ch.Usual)
	}
	// The usual range is a band, and the scale reaches its top.
	banded := durationChartOf(st, monitor.Usual{Low: time.Second, High: 8 * time.Second, Runs: 12}, time.UTC)
	y := func(frac float64) float64 { return round1(plotBottom - (plotBottom-plotTop)*frac) }
	if b := banded.Usual; !b.Show || banded.YMax != "10 s" || b.Top != y(0.8) || b.Height != round1(y(0.1)-y(0.8)) || b.Label != "usual 1 s to 8 s" {
		t.Errorf("scale %q, band %+v", banded.YMax, b)
	}
	if !strings.HasSuffix(banded.Label, " Its usual range, learned from its last 12 runs, is 1 second to 8 seconds.") {
		t.Errorf("label %q", banded.Label)
	}
	empty := durationChartOf(runstats.Summarize(store.History{}, now, runstats.Day), monitor.Usual{}, time.UTC)
	if len(empty.Points) != 0 || empty.P95.Show || !strings.HasPrefix(empty.Label, "No timed run") {
		t.Errorf("no runs: %+v", empty)
	}
}

func TestRateChart(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	// A day in 24 slices of an hour: two runs in the first hour, one
	// failed; a miss in the last.
	h := store.History{
		Runs: []store.Run{
			{N: 1, Ended: now.Add(-24*time.Hour + time.Minute)},
			{N: 2, Ended: now.Add(-24*time.Hour + 2*time.Minute), Failed: true},
		},
		Missed: []time.Time{now.Add(-time.Minute)},
	}
	rc := rateChartOf(runstats.Summarize(h, now, runstats.Day))
	if !rc.Has || len(rc.Dots) != 2 || rc.Bucket != "1 hour" {
		t.Fatalf("%+v", rc)
	}
	if rc.Dots[0].Y != round1(rateBottom-(rateBottom-rateTop)*0.5) || rc.Dots[1].Y != rateBottom || rc.Dots[1].Class != "fail" {
		t.Errorf("dots %+v", rc.Dots)
	}
}

// downFor is the history of a check up since long before now but for one
// down at at, for d.
func downFor(now, at time.Time, d time.Duration) uptime.History {
	return historyAt([]store.Flip{{N: 2, At: at.Add(d), Up: true, Since: at}, {N: 1, At: at}},
		monitor.StatusUp, now.Add(-400*24*time.Hour), now)
}

func TestCalendarDaysWhereMidnightIsSkipped(t *testing.T) {
	santiago, err := time.LoadLocation("America/Santiago")
	if err != nil {
		t.Fatalf("no time-zone data: %v", err)
	}
	// Chile's summer time began at 24:00 on Sat 5 Sep 2026: Sun 6 Sep had
	// no midnight (it began at 01:00) and 23 hours. The calendar's first
	// day is then that day, and each day after it still starts at its
	// midnight: a down from 00:10 to 00:50 on Mon 7 Sep is Monday's.
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, santiago)
	downAt := time.Date(2026, 9, 7, 0, 10, 0, 0, santiago)
	h := downFor(now, downAt, 40*time.Minute)
	cal := calendarOf(h, now, santiago)
	for i, want := range []struct{ title, class string }{{"Sun 6 Sep", "up"}, {"Mon 7 Sep", "some"}, {"Tue 8 Sep", "up"}} {
		if d := cal.Days[i]; !strings.HasPrefix(d.Title, want.title) || d.Class != want.class {
			t.Errorf("day %d: %+v, want %s %s", i, d, want.title, want.class)
		}
	}
	if last := cal.Days[len(cal.Days)-1]; !strings.HasPrefix(last.Title, "Sat 5 Dec") {
		t.Errorf("today: %+v", last)
	}
}

func TestCalendarIsInTheCheckZone(t *testing.T) {
	riga, err := time.LoadLocation("Europe/Riga")
	if err != nil {
		t.Fatalf("no time-zone data: %v", err)
	}
	// 23:30 UTC on 27 Nov is 01:30 on 28 Nov in Riga: today there is the
	// 28th. Down from 22:30 to 23:00 UTC: 00:30 to 01:00 of the 28th in
	// Riga, the 27th in UTC.
	now := time.Date(2026, 11, 27, 23, 30, 0, 0, time.UTC)
	h := downFor(now, now.Add(-time.Hour), 30*time.Minute)
	for _, tc := range []struct {
		loc            *time.Location
		today, lastDay string
	}{
		{riga, "some", "up"},
		{time.UTC, "some", "up"},
	} {
		cal := calendarOf(h, now, tc.loc)
		if len(cal.Days) != webpage.Days {
			t.Fatalf("%d days", len(cal.Days))
		}
		last, before := cal.Days[len(cal.Days)-1], cal.Days[len(cal.Days)-2]
		if last.Class != tc.today || before.Class != tc.lastDay {
			t.Errorf("%s: today %+v, yesterday %+v", tc.loc, last, before)
		}
		wantDay := now.In(tc.loc).Format("Mon 2 Jan")
		if !strings.HasPrefix(last.Title, wantDay) {
			t.Errorf("%s: today is %q, want %s", tc.loc, last.Title, wantDay)
		}
	}
	// Before the check existed, no data.
	cal := calendarOf(historyAt(nil, monitor.StatusUp, now, now), now, time.UTC)
	for _, d := range cal.Days {
		if d.Class != "unknown" {
			t.Fatalf("created now, yet %+v", d)
		}
	}
	if !strings.Contains(cal.Label, "0 days fully up") {
		t.Errorf("label %q", cal.Label)
	}
}

func TestSparkline(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	var h store.History
	for i := range 30 {
		h.Runs = append(h.Runs, store.Run{N: int64(i + 1), Ended: now.Add(-time.Duration(30-i) * time.Hour),
			Duration: time.Duration(i+1) * time.Second, HasDuration: i != 29, Failed: i == 28})
	}
	sp := sparklineOf(runstats.Summarize(h, now, runstats.Week))
	if !sp.Has || strings.Count(sp.Line, ",") != sparkRuns || len(sp.Dots) != 1 {
		t.Fatalf("%+v", sp)
	}
	// The newest timed run (29 s, failed) is the highest and last point.
	if !strings.HasSuffix(sp.Line, " 78,2") || sp.Dots[0].X != 78 {
		t.Errorf("line %q, dots %+v", sp.Line, sp.Dots)
	}
	if sp.Rate != "96.67%" || sp.P95 != "28 s" {
		t.Errorf("rate %q, p95 %q", sp.Rate, sp.P95)
	}
	if none := sparklineOf(runstats.Stats{}); none.Has || none.Rate != "" {
		t.Errorf("no runs: %+v", none)
	}
}
