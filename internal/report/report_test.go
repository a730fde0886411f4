package report

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/runstats"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/uptime"
)

var (
	from = time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)
	to   = from.AddDate(0, 0, 7)
	week = to.Sub(from)
)

// flips lists flips newest first, as the store does, from oldest-first
// arguments.
func flips(fs ...store.Flip) []store.Flip {
	out := make([]store.Flip, len(fs))
	for i, f := range fs {
		out[len(fs)-1-i] = f
	}
	return out
}

func down(at time.Time) store.Flip { return store.Flip{At: at} }
func up(at time.Time) store.Flip   { return store.Flip{At: at, Up: true} }

// TestUptime checks that a report's figures are the uptime rule's
// (package uptime has the rule's own tests): the share of the check's up
// and down time, downs counted where they began.
func TestUptime(t *testing.T) {
	h := time.Hour
	for _, tc := range []struct {
		name    string
		flips   []store.Flip
		status  monitor.Status
		paused  time.Time
		created time.Time
		ok      bool
		downs   int
		downFor time.Duration
		span    time.Duration // what the uptime is a share of
	}{
		{name: "up throughout", created: from.Add(-week), ok: true, span: week},
		{name: "created after the period", created: to, ok: false},
		{name: "created inside: the share of its time", created: from.Add(week / 2), ok: true, span: week / 2,
			flips: flips(down(to.Add(-h))), downs: 1, downFor: h},
		{name: "down from before the period until a day in", created: from.Add(-week), ok: true, span: week,
			flips: flips(down(from.Add(-h)), up(from.Add(24*h))), downs: 0, downFor: 24 * h},
		{name: "two downs, one still down at the end", created: from.Add(-week), ok: true, span: week,
			flips: flips(down(from.Add(h)), up(from.Add(2*h)), down(to.Add(-3*h))), downs: 2, downFor: 4 * h},
		{name: "down since before the oldest flip held, which brought it up", created: from.Add(-week), ok: true, span: week,
			flips: flips(store.Flip{At: from.Add(2 * h), Up: true, Since: from.Add(-40 * 24 * h)}), downFor: 2 * h},
		{name: "no flip held, down now: down since before the period", created: from.Add(-week), ok: true, span: week,
			status: monitor.StatusDown, downFor: week},
		{name: "flips after the period do not count", created: from.Add(-week), ok: true, span: week,
			flips: flips(down(to.Add(h)), up(to.Add(2*h)))},
		{name: "down since just after the period, when the report is written: up all the period", created: from.Add(-week), ok: true,
			span: week, flips: flips(store.Flip{At: to.Add(2 * time.Minute), From: monitor.StatusUp}), status: monitor.StatusDown},
		{name: "down from before the oldest flip held until after the period", created: from.Add(-week), ok: true, span: week,
			flips: flips(store.Flip{At: to.Add(h), Up: true, From: monitor.StatusDown}), downFor: week},
		{name: "paused after the period: up all of it", created: from.Add(-week), ok: true, span: week,
			status: monitor.StatusPaused, paused: to.Add(time.Minute)},
		{name: "a down held by a maintenance window counts from its end, and the window counts neither way", created: from.Add(-week), ok: true,
			span:  week - 2*h,
			flips: flips(store.Flip{At: from.Add(h), Held: "upgrade", HeldUntil: from.Add(3 * h)}, up(from.Add(4*h))),
			downs: 1, downFor: h},
		{name: "a held down that came up inside its window is no down", created: from.Add(-week), ok: true, span: week - h,
			flips: flips(store.Flip{At: from.Add(h), Held: "upgrade", HeldUntil: from.Add(3 * h)}, up(from.Add(2*h)))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := tc.status
			if status == "" {
				status = monitor.StatusUp
			}
			c, ok := Uptime(uptime.Check{Created: tc.created, Flips: tc.flips, Status: status, PausedAt: tc.paused}, from, to)
			if ok != tc.ok {
				t.Fatalf("ok = %v", ok)
			}
			if !ok {
				return
			}
			want := 1 - float64(tc.downFor)/float64(tc.span)
			if c.Downs != tc.downs || c.DownFor != tc.downFor || math.Abs(c.Uptime-want) > 1e-12 || !c.HasUptime {
				t.Errorf("downs %d for %v, uptime %v; want %d for %v, %v", c.Downs, c.DownFor, c.Uptime, tc.downs, tc.downFor, want)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	run := func(ago time.Duration, took time.Duration) store.Run {
		return store.Run{Ended: to.Add(-ago), Duration: took, HasDuration: true}
	}
	stats := func(runs ...store.Run) runstats.Stats {
		return runstats.Summarize(store.History{Runs: runs}, to.Add(-time.Microsecond), week)
	}
	p := Project{Namespace: "team-a", Period: Period{From: from, To: to, ID: "2026-W47"}, URL: "https://vigil.example.com/",
		Checks: []Check{
			{Name: "fine", Uptime: 1, HasUptime: true, Runs: stats(run(time.Hour, time.Second))},
			{Name: "<script>flaky</script>", Uptime: 0.9, HasUptime: true, Downs: 3, DownFor: 16*time.Hour + 48*time.Minute,
				Runs: stats(run(2*time.Hour, 5*time.Minute), run(3*time.Hour, 7*time.Minute))},
			{Name: "new", Runs: stats()},
		}}
	r, err := Write(p)
	if err != nil {
		t.Fatal(err)
	}
	if r.Subject != "Vigil report for team-a: the week of 16 November 2026" {
		t.Errorf("subject %q", r.Subject)
	}
	// The least available first; the one without data last.
	flaky, fine, newer := strings.Index(r.Text, "<script>flaky"), strings.Index(r.Text, "\nfine\n"), strings.Index(r.Text, "\nnew\n")
	if flaky < 0 || fine < flaky || newer < fine {
		t.Errorf("order: flaky %d, fine %d, new %d in\n%s", flaky, fine, newer, r.Text)
	}
	for _, want := range []string{
		"3 checks; 1 went down. 3 runs, 0 failed, 0 missed.",
		"uptime 90%, downs 3 (16 hours 48 minutes)",
		"duration p95 7 minutes, slowest 7 minutes",
		"uptime no data, downs 0",
		"Slowest runs:\n  7 minutes  <script>flaky</script>, ended Sun 22 Nov 21:00 UTC\n  5 minutes  <script>flaky</script>, ended Sun 22 Nov 22:00 UTC\n  1 second  fine,",
		"https://vigil.example.com/",
	} {
		if !strings.Contains(r.Text, want) {
			t.Errorf("the text lacks %q:\n%s", want, r.Text)
		}
	}
	if strings.Contains(r.HTML, "<script>") || !strings.Contains(r.HTML, "&lt;script&gt;flaky") {
		t.Errorf("the HTML does not escape a check's name:\n%s", r.HTML)
	}
}

func TestWriteListsAtMostMaxRows(t *testing.T) {
	p := Project{Namespace: "big", Period: Period{From: from, To: to}}
	for i := range MaxRows + 50 {
		p.Checks = append(p.Checks, Check{Name: fmt.Sprintf("check-%03d", i), Uptime: 1 - float64(i)/1000, HasUptime: true})
	}
	r, err := Write(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.Text, "and 50 more checks") || strings.Count(r.Text, "\ncheck-") != MaxRows {
		t.Errorf("%d rows listed:\n%s", strings.Count(r.Text, "\ncheck-"), r.Text[len(r.Text)-300:])
	}
	// The least available are the ones listed.
	if !strings.Contains(r.Text, "\ncheck-249\n") || strings.Contains(r.Text, "\ncheck-000\n") {
		t.Error("listed the wrong checks")
	}
}
