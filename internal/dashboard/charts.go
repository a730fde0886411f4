package dashboard

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/runstats"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/uptime"
	"github.com/vigil-operator/vigil/internal/webpage"
	"github.com/vigil-operator/vigil/internal/words"
)

// The charts are SVG drawn on the server: no script is needed to see them,
// and their viewBox scales them to a phone's width. Coordinates are in the
// viewBox's units.
const (
	chartW, chartH       = 600.0, 180.0
	plotLeft, plotRight  = 56.0, 592.0
	plotTop, plotBottom  = 10.0, 150.0
	rateH                = 70.0
	rateTop, rateBottom  = 8.0, 52.0
	calCell, calGap      = 11.0, 2.0
	maxChartPoints       = 2000
	sparkW, sparkH       = 80.0, 20.0
	sparkRuns            = 20
	minRateBucketRuns    = 1
	rateBucketsPerWindow = 24
)

// runsView is a check's runs as its page shows them: the figures, a chart
// of durations, a success-rate line and the window to pick.
type runsView struct {
	Window  string
	Windows []windowLink
	Stats   runstats.Stats
	// Sentences that say the figures.
	Summary, Durations, Trend, LastSuccess string
	Partial                                string
	Chart                                  durationChart
	Rate                                   rateChart
}

type windowLink struct {
	Label, URL string
	Current    bool
}

// durationChart plots each run that has a duration at its end time and
// height, coloured by outcome, with the window's p50 and p95 as lines.
type durationChart struct {
	Points   []chartPoint
	Untimed  []chartPoint // runs without a start: ticks on the time axis
	P50, P95 chartLine
	// Usual is the check's usual range (alertPolicy.anomaly), a band
	// Usual.Height high from Usual.Top down.
	Usual         chartBand
	YMax          string // the top of the scale, in words
	From, To, Mid string // the time axis's labels
	Label         string // what a screen reader says of it
}

type chartPoint struct {
	X, Y  float64
	Class string // ok, fail
	Title string
}

type chartLine struct {
	Y     float64
	Label string
	Show  bool
}

type chartBand struct {
	Top, Height float64
	Label       string
	Show        bool
}

// rateChart is the success rate over the window, a point per slice of it.
type rateChart struct {
	Line   string // a polyline's points
	Dots   []chartPoint
	Label  string
	Has    bool
	Bucket string // each point's slice, in words
}

// runsViewOf lays out a check's statistics for its page.
func runsViewOf(st runstats.Stats, usual monitor.Usual, window time.Duration, tz *time.Location, pageURL func(window string) string) runsView {
	v := runsView{Window: runstats.FormatWindow(window), Stats: st}
	for _, w := range []time.Duration{runstats.Day, runstats.Week, runstats.Month} {
		f := runstats.FormatWindow(w)
		v.Windows = append(v.Windows, windowLink{Label: windowLabel(w), URL: pageURL(f), Current: w == window})
	}
	span := windowLabel(window)
	switch {
	case st.Runs == 0 && st.Missed == 0:
		v.Summary = "No run ended in the " + span + "."
	default:
		v.Summary = fmt.Sprintf("%s in the %s: %d succeeded, %d failed", words.Plural(int64(st.Runs), "run"), span, st.Succeeded, st.Failed)
		if st.Missed > 0 {
			v.Summary += fmt.Sprintf(", %s", words.Plural(int64(st.Missed), "missed deadline"))
		}
		v.Summary += "."
		if st.HasRate {
			v.Summary += fmt.Sprintf(" Success rate %s.", words.Percent(st.SuccessRate))
		}
	}
	if st.Timed > 0 {
		v.Durations = fmt.Sprintf("Duration p50 %s, p95 %s, p99 %s, longest %s (%s timed from a start signal).",
			words.Duration(st.P50), words.Duration(st.P95), words.Duration(st.P99), words.Duration(st.Max), words.Plural(int64(st.Timed), "run"))
	} else if st.Runs > 0 {
		v.Durations = "No run was timed: send a start signal (/start) before the end to measure how long runs take."
	}
	v.Trend = st.TrendWords()
	if v.Trend != "" {
		v.Trend = strings.ToUpper(v.Trend[:1]) + v.Trend[1:] + "."
	}
	if !st.LastSuccess.IsZero() {
		v.LastSuccess = "Last success " + words.Relative(st.LastSuccess, st.To) + "."
	}
	if st.Partial {
		v.Partial = "Vigil keeps the runs of a check's last pings; these figures cover the runs since " +
			st.HeldSince.In(tz).Format("2 Jan 15:04 MST") + "."
	}
	v.Chart = durationChartOf(st, usual, tz)
	v.Rate = rateChartOf(st)
	return v
}

// windowLabel names a window among the page's choices: "last 7 days".
func windowLabel(w time.Duration) string { return "last " + runstats.WindowWords(w) }

// niceCeil is the smallest of 1, 2, 2.5, 5 × 10^k, in the unit words.Short
// writes d in (ms, s, min, h), at or above d: a scale's top that reads
// well.
func niceCeil(d time.Duration) time.Duration {
	unit := time.Millisecond
	switch {
	case d >= time.Hour:
		unit = time.Hour
	case d >= time.Minute:
		unit = time.Minute
	case d >= time.Second:
		unit = time.Second
	}
	v := float64(d) / float64(unit)
	if v <= 1 {
		return unit
	}
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*exp >= v {
			return time.Duration(m * exp * float64(unit))
		}
	}
	return d
}

func durationChartOf(st runstats.Stats, usual monitor.Usual, tz *time.Location) durationChart {
	var ch durationChart
	span := st.To.Sub(st.From)
	if span <= 0 {
		return ch
	}
	top := niceCeil(st.Max)
	if usual.Judges() {
		top = niceCeil(max(st.Max, usual.High))
	}
	ch.YMax = words.Short(top)
	layout := "2 Jan"
	if span <= 2*runstats.Day {
		layout = "2 Jan 15:04"
	}
	ch.From, ch.Mid, ch.To = st.From.In(tz).Format(layout), st.From.Add(span/2).In(tz).Format(layout), st.To.In(tz).Format(layout)
	x := func(t time.Time) float64 {
		return round1(plotLeft + (plotRight-plotLeft)*float64(t.Sub(st.From))/float64(span))
	}
	y := func(d time.Duration) float64 {
		return round1(plotBottom - (plotBottom-plotTop)*float64(d)/float64(top))
	}
	runs := st.InWindow
	if len(runs) > maxChartPoints {
		runs = runs[len(runs)-maxChartPoints:]
	}
	for _, r := range runs {
		class, word := "ok", "succeeded"
		if r.Failed {
			class, word = "fail", "failed"
		}
		when := r.Ended.In(tz).Format("2 Jan 15:04:05")
		if !r.HasDuration {
			ch.Untimed = append(ch.Untimed, chartPoint{X: x(r.Ended), Y: plotBottom, Class: class, Title: word + " at " + when + ", untimed"})
			continue
		}
		ch.Points = append(ch.Points, chartPoint{X: x(r.Ended), Y: y(r.Duration), Class: class,
			Title: fmt.Sprintf("%s at %s after %s", word, when, words.Duration(r.Duration))})
	}
	if usual.Judges() {
		label := "usual " + words.Short(usual.Low) + " to " + words.Short(usual.High)
		ch.Usual = chartBand{Top: y(usual.High), Height: round1(y(usual.Low) - y(usual.High)), Label: label, Show: true}
	}
	if st.Timed > 0 {
		ch.P50 = chartLine{Y: y(st.P50), Label: "p50 " + words.Short(st.P50), Show: true}
		ch.P95 = chartLine{Y: y(st.P95), Label: "p95 " + words.Short(st.P95), Show: true}
		ch.Label = fmt.Sprintf("Run durations from %s to %s: %s timed, p50 %s, p95 %s, longest %s.",
			ch.From, ch.To, words.Plural(int64(st.Timed), "run"), words.Duration(st.P50), words.Duration(st.P95), words.Duration(st.Max))
	} else {
		ch.Label = fmt.Sprintf("No timed run from %s to %s.", ch.From, ch.To)
	}
	if ch.Usual.Show {
		ch.Label += fmt.Sprintf(" Its usual range, learned from its last %s, is %s to %s.",
			words.Plural(int64(usual.Runs), "run"), words.Duration(usual.Low), words.Duration(usual.High))
	}
	return ch
}

// rateChartOf is the success rate in rateBucketsPerWindow slices of the
// window: runs and misses in each slice, slices without any left out.
func rateChartOf(st runstats.Stats) rateChart {
	var rc rateChart
	span := st.To.Sub(st.From)
	if span <= 0 {
		return rc
	}
	bucket := span / rateBucketsPerWindow
	rc.Bucket = words.Duration(bucket)
	var ok, all [rateBucketsPerWindow]int
	slot := func(t time.Time) int {
		return min(max(int(t.Sub(st.From)/bucket), 0), rateBucketsPerWindow-1)
	}
	for _, r := range st.InWindow {
		i := slot(r.Ended)
		all[i]++
		if !r.Failed {
			ok[i]++
		}
	}
	for _, m := range st.MissedInWindow {
		all[slot(m)]++
	}
	var pts []string
	for i := range rateBucketsPerWindow {
		if all[i] < minRateBucketRuns {
			continue
		}
		rate := float64(ok[i]) / float64(all[i])
		px := round1(plotLeft + (plotRight-plotLeft)*(float64(i)+0.5)/rateBucketsPerWindow)
		py := round1(rateBottom - (rateBottom-rateTop)*rate)
		pts = append(pts, fmt.Sprintf("%v,%v", px, py))
		class := "ok"
		if rate < 1 {
			class = "fail"
		}
		from := st.From.Add(time.Duration(i) * bucket)
		rc.Dots = append(rc.Dots, chartPoint{X: px, Y: py, Class: class,
			Title: fmt.Sprintf("%s of %s from %s", words.Percent(rate), words.Plural(int64(all[i]), "run"), from.UTC().Format("2 Jan 15:04 UTC"))})
	}
	rc.Line, rc.Has = strings.Join(pts, " "), len(pts) > 0
	if st.HasRate {
		rc.Label = fmt.Sprintf("Success rate over the window, %s in all, a point per %s.", words.Percent(st.SuccessRate), rc.Bucket)
	}
	return rc
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// calendar is the last 13 weeks as squares, a column a week (Monday on
// top), in the check's time zone, like a contribution graph.
type calendar struct {
	Days          []webpage.Day
	Width, Height float64
	Label         string
	Months        []calendarMonth
}

type calendarMonth struct {
	X    float64
	Name string
}

// calendarOf colours each of the last webpage.Days days (in tz) by the
// check's uptime that day.
func calendarOf(h uptime.History, now time.Time, tz *time.Location) calendar {
	ty, tm, td := now.In(tz).Date()
	first := dayStart(ty, tm, td-(webpage.Days-1), tz)
	// Monday of the first day's week: the columns are weeks.
	offset := (int(first.Weekday()) + 6) % 7
	var cal calendar
	full, some, down := 0, 0, 0
	lastMonth := -1
	for i := range webpage.Days {
		day := dayStart(ty, tm, td-(webpage.Days-1)+i, tz)
		next := dayStart(ty, tm, td-(webpage.Days-1)+i+1, tz)
		col, rowN := (i+offset)/7, (i+offset)%7
		d := webpage.DayOf(h, day, next, now)
		d.X, d.Y = float64(col)*(calCell+calGap), 14+float64(rowN)*(calCell+calGap)
		switch d.Class {
		case "up":
			full++
		case "mostly", "some":
			some++
		case "down":
			down++
		}
		// A month is named above the week its first day is in (or the
		// first week), unless that crowds the previous name.
		if m := int(day.Month()); m != lastMonth {
			lastMonth = m
			if n := len(cal.Months); n == 0 || d.X-cal.Months[n-1].X >= 3*(calCell+calGap) {
				cal.Months = append(cal.Months, calendarMonth{X: d.X, Name: day.Format("Jan")})
			}
		}
		cal.Days = append(cal.Days, d)
	}
	cols := (webpage.Days + offset + 6) / 7
	// Room on the right for a month named above the last week.
	cal.Width, cal.Height = float64(cols)*(calCell+calGap)+16, 14+7*(calCell+calGap)
	cal.Label = fmt.Sprintf("Uptime by day for the last %d days (%s): %d days fully up, %d partly down, %d down.",
		webpage.Days, tz.String(), full, some, down)
	return cal
}

// dayStart is the first instant of the day (normalized as time.Date does)
// in tz. Where the clocks skip midnight (Chile's summer time begins at
// 24:00), time.Date answers an hour of the day before; the day begins
// when that hour's offset ends.
func dayStart(y int, m time.Month, d int, tz *time.Location) time.Time {
	noon := time.Date(y, m, d, 12, 0, 0, 0, tz)
	t := time.Date(y, m, d, 0, 0, 0, 0, tz)
	if t.Day() != noon.Day() {
		_, end := t.ZoneBounds()
		return end
	}
	return t
}

// sparkline is a board row's recent durations as a small line, and the
// figures the board sorts by.
type sparkline struct {
	Line  string
	Dots  []chartPoint // the failed runs, in red
	Label string
	Has   bool
	Rate  string // success rate over the window, "97%"
	P95   string
}

// sparklineOf draws the last sparkRuns timed runs of the window.
func sparklineOf(st runstats.Stats) sparkline {
	var sp sparkline
	if st.HasRate {
		sp.Rate = words.Percent(st.SuccessRate)
	}
	if st.Timed > 0 {
		sp.P95 = words.Short(st.P95)
	}
	var timed []store.Run
	for i := len(st.InWindow) - 1; i >= 0 && len(timed) < sparkRuns; i-- {
		if st.InWindow[i].HasDuration {
			timed = append(timed, st.InWindow[i])
		}
	}
	if len(timed) == 0 {
		return sp
	}
	var top time.Duration
	for _, r := range timed {
		top = max(top, r.Duration)
	}
	top = max(top, time.Millisecond)
	var pts []string
	n := len(timed)
	for i := range timed {
		r := timed[n-1-i] // oldest first
		x := round1(2 + (sparkW-4)*float64(i)/float64(max(n-1, 1)))
		y := round1(sparkH - 2 - (sparkH-4)*float64(r.Duration)/float64(top))
		pts = append(pts, fmt.Sprintf("%v,%v", x, y))
		if r.Failed {
			sp.Dots = append(sp.Dots, chartPoint{X: x, Y: y, Class: "fail"})
		}
	}
	sp.Line, sp.Has = strings.Join(pts, " "), true
	sp.Label = fmt.Sprintf("Last %s: longest %s", words.Plural(int64(n), "timed run"), words.Duration(top))
	return sp
}
