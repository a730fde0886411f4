package report

import (
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func TestLast(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		kind     v1.ReportPeriod
		now      string
		from, to string
		id, name string
	}{
		// Saturday: the week before this one.
		{v1.ReportWeekly, "2026-11-28T12:00:00Z", "2026-11-16T00:00:00Z", "2026-11-23T00:00:00Z", "2026-W47", "the week of 16 November 2026"},
		// Monday at midnight: the week that just ended.
		{v1.ReportWeekly, "2026-11-23T00:00:00Z", "2026-11-16T00:00:00Z", "2026-11-23T00:00:00Z", "2026-W47", "the week of 16 November 2026"},
		// Sunday's last instant: still the week before.
		{v1.ReportWeekly, "2026-11-22T23:59:59.999999Z", "2026-11-09T00:00:00Z", "2026-11-16T00:00:00Z", "2026-W46", "the week of 9 November 2026"},
		// In UTC, whatever the zone of now: Monday 01:00 in Riga is Sunday in UTC.
		{v1.ReportWeekly, "2026-11-23T01:00:00+02:00", "2026-11-09T00:00:00Z", "2026-11-16T00:00:00Z", "2026-W46", "the week of 9 November 2026"},
		// Across a year: ISO week 53 of 2026 begins on 28 December.
		{v1.ReportWeekly, "2027-01-05T08:00:00Z", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z", "2026-W53", "the week of 28 December 2026"},
		{v1.ReportMonthly, "2026-11-28T12:00:00Z", "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", "2026-10", "October 2026"},
		{v1.ReportMonthly, "2026-11-01T00:00:00Z", "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z", "2026-10", "October 2026"},
		{v1.ReportMonthly, "2027-01-01T00:00:01Z", "2026-12-01T00:00:00Z", "2027-01-01T00:00:00Z", "2026-12", "December 2026"},
		{v1.ReportMonthly, "2026-03-15T00:00:00Z", "2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-02", "February 2026"},
	} {
		p, ok := Last(tc.kind, at(tc.now))
		if !ok || !p.From.Equal(at(tc.from)) || !p.To.Equal(at(tc.to)) || p.ID != tc.id || p.Name() != tc.name {
			t.Errorf("Last(%s, %s) = %v..%v %q %q, want %s..%s %q %q", tc.kind, tc.now, p.From, p.To, p.ID, p.Name(),
				tc.from, tc.to, tc.id, tc.name)
		}
	}
	if _, ok := Last("daily", time.Now()); ok {
		t.Error("a daily period")
	}
}

func FuzzLast(f *testing.F) {
	f.Add(int64(1795000000), true)
	f.Fuzz(func(t *testing.T, unix int64, weekly bool) {
		now := time.Unix(unix%(1<<34), 0)
		kind := v1.ReportMonthly
		if weekly {
			kind = v1.ReportWeekly
		}
		p, ok := Last(kind, now)
		if !ok || p.To.After(now) || !p.From.Before(p.To) || now.Sub(p.To) >= 31*24*time.Hour {
			t.Fatalf("Last(%s, %v) = %+v", kind, now, p)
		}
		if weekly && (p.To.Sub(p.From) != 7*24*time.Hour || p.From.Weekday() != time.Monday) {
			t.Fatalf("a week %v..%v", p.From, p.To)
		}
		if again, _ := Last(kind, p.To); again != p {
			t.Fatalf("at its end, the period is %+v, not %+v", again, p)
		}
	})
}
