package monitor_test

import (
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/schedule"
)

func mustSchedule(t testing.TB, expr, tz string) schedule.Schedule {
	t.Helper()
	s, err := schedule.Parse(expr, tz)
	if err != nil {
		t.Fatalf("schedule.Parse(%q, %q): %v", expr, tz, err)
	}
	return s
}

func utc(tb testing.TB, s string) time.Time {
	tb.Helper()
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// TestScheduledChecks runs the reference's schedule examples (7.2, 9.4) and
// checks across month ends and daylight-saving changes through the real
// dispatcher: the status at given instants after one success ping, and
// next_ping.
func TestScheduledChecks(t *testing.T) {
	type probe struct {
		now  string
		want monitor.Status
	}
	tests := []struct {
		name, expr, tz string
		grace          time.Duration
		lastPing       string
		nextPing       string
		probes         []probe
	}{
		{
			name: "cron 0 * * * * (7.2)", expr: "0 * * * *", tz: "UTC", grace: h,
			lastPing: "2000-01-01T00:00:00Z", nextPing: "2000-01-01T01:00:00Z",
			probes: []probe{{"2000-01-01T00:59:59Z", monitor.StatusUp}, {"2000-01-01T01:00:00Z", monitor.StatusGrace}, {"2000-01-01T02:00:00Z", monitor.StatusDown}},
		},
		{
			name: "Australia/Brisbane 0 10 * * * (9.4)", expr: "0 10 * * *", tz: "Australia/Brisbane", grace: h,
			lastPing: "2000-01-01T00:00:00Z", nextPing: "2000-01-02T00:00:00Z",
			probes: []probe{{"2000-01-01T23:59:00Z", monitor.StatusUp}, {"2000-01-02T00:00:00Z", monitor.StatusGrace}, {"2000-01-02T01:00:00Z", monitor.StatusDown}},
		},
		{
			name: "Europe/Riga 15 * * * * across the fall-back hour (9.4)", expr: "15 * * * *", tz: "Europe/Riga", grace: 5 * m,
			lastPing: "2023-10-29T00:55:00Z", nextPing: "2023-10-29T01:15:00Z",
			probes: []probe{{"2023-10-29T01:05:00Z", monitor.StatusUp}, {"2023-10-29T01:15:00Z", monitor.StatusGrace}, {"2023-10-29T01:20:00Z", monitor.StatusDown}},
		},
		{
			name: "Europe/Riga 30 3 * * * on the spring-forward day", expr: "30 3 * * *", tz: "Europe/Riga", grace: h,
			lastPing: "2023-03-25T01:30:00Z", nextPing: "2023-03-26T01:00:00Z",
			probes: []probe{{"2023-03-26T00:59:59Z", monitor.StatusUp}, {"2023-03-26T01:00:00Z", monitor.StatusGrace}, {"2023-03-26T02:00:00Z", monitor.StatusDown}},
		},
		{
			name: "Europe/Riga 30 3 * * * after the fall-back run: a 25-hour day", expr: "30 3 * * *", tz: "Europe/Riga", grace: h,
			lastPing: "2023-10-29T00:30:00Z", nextPing: "2023-10-30T01:30:00Z",
			probes: []probe{{"2023-10-29T01:30:00Z", monitor.StatusUp}, {"2023-10-30T01:29:59Z", monitor.StatusUp}, {"2023-10-30T02:30:00Z", monitor.StatusDown}},
		},
		{
			name: "America/New_York 30 2 * * * in the spring-forward gap", expr: "30 2 * * *", tz: "America/New_York", grace: 30 * m,
			lastPing: "2023-03-11T07:30:00Z", nextPing: "2023-03-12T07:00:00Z",
			probes: []probe{{"2023-03-12T06:59:59Z", monitor.StatusUp}, {"2023-03-12T07:29:59Z", monitor.StatusGrace}, {"2023-03-12T07:30:00Z", monitor.StatusDown}},
		},
		{
			name: "last day of the month, into a leap February", expr: "0 0 L * *", tz: "UTC", grace: h,
			lastPing: "2024-01-31T00:00:05Z", nextPing: "2024-02-29T00:00:00Z",
			probes: []probe{{"2024-02-28T23:59:59Z", monitor.StatusUp}, {"2024-02-29T00:30:00Z", monitor.StatusGrace}, {"2024-02-29T01:00:00Z", monitor.StatusDown}},
		},
		{
			name: "the 31st skips February", expr: "0 6 31 * *", tz: "Europe/Berlin", grace: h,
			lastPing: "2024-01-31T05:00:00Z", nextPing: "2024-03-31T04:00:00Z", // 06:00 CEST on the DST day
			probes: []probe{{"2024-02-29T05:00:00Z", monitor.StatusUp}, {"2024-03-31T04:00:00Z", monitor.StatusGrace}, {"2024-03-31T05:00:00Z", monitor.StatusDown}},
		},
		{
			name: "year end in Sydney (summer time)", expr: "0 0 1 1 *", tz: "Australia/Sydney", grace: h,
			lastPing: "2023-12-31T13:00:00Z", nextPing: "2024-12-31T13:00:00Z",
			probes: []probe{{"2024-06-30T00:00:00Z", monitor.StatusUp}, {"2024-12-31T13:59:59Z", monitor.StatusGrace}, {"2024-12-31T14:00:00Z", monitor.StatusDown}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := monitor.Config{Schedule: mustSchedule(t, tt.expr, tt.tz), Grace: tt.grace}
			f, _ := cfg.RecordPing(monitor.Facts{}, monitor.Ping{Kind: monitor.PingSuccess, At: utc(t, tt.lastPing)})
			np, ok := cfg.NextPing(f)
			if got := optTime(np, ok); got != tt.nextPing {
				t.Errorf("NextPing = %s, want %s", got, tt.nextPing)
			}
			for _, p := range tt.probes {
				if got := cfg.Status(f, utc(t, p.now)); got != p.want {
					t.Errorf("Status at %s = %s, want %s", p.now, got, p.want)
				}
			}
		})
	}
}

// TestScheduledTimeline runs a daily job for a week with the reconciler
// requeueing at NextChange: it pings on time for three days, misses a day,
// and recovers.
func TestScheduledTimeline(t *testing.T) {
	cfg := monitor.Config{Schedule: mustSchedule(t, "30 2 * * *", "America/New_York"), Grace: 30 * m}
	var f monitor.Facts
	var flips []monitor.Flip
	observe := func(now time.Time) {
		var flip *monitor.Flip
		f, flip = cfg.Observe(f, now)
		if flip != nil {
			flips = append(flips, *flip)
		}
	}
	pingAt := func(s string) {
		f, _ = cfg.RecordPing(f, monitor.Ping{Kind: monitor.PingSuccess, At: utc(t, s)})
		observe(utc(t, s))
	}
	// The job runs a minute after its schedule, 2023-03-10 to 03-12 (the
	// spring-forward night runs at 03:00 EDT), then not on 03-13.
	pingAt("2023-03-10T07:31:00Z")
	pingAt("2023-03-11T07:31:00Z")
	pingAt("2023-03-12T07:01:00Z")
	// The reconciler wakes up exactly when told to, until nothing is due.
	now := utc(t, "2023-03-12T07:01:00Z")
	for i := 0; i < 10; i++ {
		next, ok := cfg.NextChange(f, now)
		if !ok {
			break
		}
		now = next
		observe(now)
	}
	if f.State != monitor.StatusDown {
		t.Fatalf("state %s after the missed run, want down", f.State)
	}
	// 03-13 02:30 EDT = 06:30Z; down at 07:00Z.
	if len(flips) != 1 || !flips[0].At.Equal(utc(t, "2023-03-13T07:00:00Z")) || flips[0].Reason != monitor.ReasonTimeout {
		t.Fatalf("flips %+v, want one timeout flip at 2023-03-13T07:00:00Z", flips)
	}
	pingAt("2023-03-13T09:00:00Z")
	if len(flips) != 2 || !flips[1].Up() || !flips[1].At.Equal(utc(t, "2023-03-13T09:00:00Z")) {
		t.Fatalf("flips %+v, want an up flip at the late run", flips)
	}
	if np, ok := cfg.NextPing(f); optTime(np, ok) != "2023-03-14T06:30:00Z" {
		t.Errorf("NextPing = %s, want 2023-03-14T06:30:00Z", optTime(np, ok))
	}
}

// BenchmarkDeadlineSimple measures Deadline for a Simple check.
func BenchmarkDeadlineSimple(b *testing.B) {
	cfg := monitor.Config{Timeout: d, Grace: h}
	f := monitor.Facts{LastPing: utc(b, "2024-01-01T00:00:00Z"), State: monitor.StatusUp, StateSince: utc(b, "2024-01-01T00:00:00Z")}
	b.ReportAllocs()
	for b.Loop() {
		f.LastPing = f.LastPing.Add(time.Second)
		if _, ok := cfg.Deadline(f); !ok {
			b.Fatal("no deadline")
		}
	}
}

// BenchmarkDeadlineCron measures Deadline for Cron checks, in UTC and in
// zones with and without daylight saving time.
func BenchmarkDeadlineCron(b *testing.B) {
	for _, c := range []struct{ name, expr, tz string }{
		{"hourly/UTC", "0 * * * *", "UTC"},
		{"daily-10am/Australia-Brisbane", "0 10 * * *", "Australia/Brisbane"},
		{"daily-3:30/Europe-Riga", "30 3 * * *", "Europe/Riga"},
		{"every-15-min-business-hours/America-New_York", "*/15 9-17 * * MON-FRI", "America/New_York"},
		{"last-friday/Europe-Riga", "0 18 * * 5L", "Europe/Riga"},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := monitor.Config{Schedule: mustSchedule(b, c.expr, c.tz), Grace: h}
			start := utc(b, "2024-01-01T00:00:00Z")
			f := monitor.Facts{LastPing: start, State: monitor.StatusUp, StateSince: start}
			b.ReportAllocs()
			for b.Loop() {
				// A different last ping each time: one hour and seven
				// seconds later, wrapping after about ten years.
				f.LastPing = f.LastPing.Add(h + 7*time.Second)
				if f.LastPing.Year() > 2033 {
					f.LastPing = start
				}
				if _, ok := cfg.Deadline(f); !ok {
					b.Fatal("no deadline")
				}
			}
		})
	}
}
