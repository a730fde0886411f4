package oncalendar

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the DST vectors run on a host without zone files too
)

func mustParse(t testing.TB, expr string) *Expression {
	t.Helper()
	e, err := Parse(expr)
	if err != nil {
		t.Fatalf("Parse(%q): %v", expr, err)
	}
	return e
}

func zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func instant(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseRejects(t *testing.T) {
	tests := []struct{ expr, msg string }{
		{"", "empty expression"},
		{"   ", "empty expression"},
		{"Mon *-*-* *:*:* surprise", `unexpected "*-*-* *:*:* surprise"`},
		{"*-*-5..1", `bad day-of-month: "5..1"`},
		{"*:1..1_0", `bad minute: "1_0"`},
		{"*:*/0", `bad minute: "*/0"`},
		{"1-32", `bad day-of-month: "32"`},
		{"* 1-1", `bad day-of-week: "*"`},
		{"1~29", `bad day-of-month: "~29"`},
		{"12:34:56:78", `bad time: "12:34:56:78"`},
		{"1-2-3-4", `bad date: "1-2-3-4"`},
		{"24:00", `bad hour: "24"`},
		{"*:60", `bad minute: "60"`},
		{"*:*:60", `bad second: "60"`},
		{"2200-01-01", `bad year: "2200"`},
		{"1969-01-01", `bad year: "1969"`},
		{"*-13-01", `bad month: "13"`},
		{"*-00-01", `bad month: "00"`},
		{"Mon/1", `bad day-of-week: "Mon/1"`},
		{"Mo", `bad day-of-week: "Mo"`},
		{"@daily", `bad day-of-week: "@daily"`},
		{"* * * * * *", `bad day-of-week: "*"`},
		{"Europe/Riga", `bad day-of-week: "Europe/Riga"`},
		{"12:34\nEurope/Riga", `line 2: bad day-of-week`},
		{"daily\n\nhourly", "line 2: empty expression"},
		{"12:34\tEurope/Riga", `bad day-of-week: "12:34"`},
		{"12:34 Mars/Olympus", `unknown time zone "Mars/Olympus"`},
		{"12:34 */5", `bad day-of-week: "12:34"`},
		{"12:34 Local", `bad day-of-week: "12:34"`},
		{"*:+5", `bad minute: "+5"`},
		{"*:-5", `bad minute: "-5"`},
		{"*:٣", `bad minute: "٣"`},
		{"*:5/", `bad minute: "5/"`},
		{"*:5/x", `bad minute: "5/x"`},
		{"Mon..Sun..Tue", `bad day-of-week`},
		{"Sun..Mon", `bad day-of-week: "Sun..Mon"`},
		{"Mon,,Tue", `bad day-of-week: ""`},
		{"DAİLY", `bad day-of-week`},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			e, err := Parse(tt.expr)
			if err == nil {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", tt.expr, e, tt.msg)
			}
			if !strings.Contains(err.Error(), strings.ToLower(tt.msg[:1])+tt.msg[1:]) && !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Parse(%q): %q, want it to contain %q", tt.expr, err, tt.msg)
			}
		})
	}
}

// TestParseRejectsBadValues: every bad value in every position, as the
// reference library's own validation test.
func TestParseRejectsBadValues(t *testing.T) {
	patterns := []string{"%s *-*-* *:*:*", "%s-*-*", "*-%s-*", "*-*-%s", "*-*~%s", "%s:*:*", "*:%s:*", "*:*:%s"}
	values := []string{"-1", "1000", "ABC", "1-1", "1:1", "Mon/1", "~1"}
	for _, p := range patterns {
		for _, v := range values {
			expr := fmt.Sprintf(p, v)
			if e, err := Parse(expr); err == nil {
				t.Errorf("Parse(%q) = %+v, want an error", expr, e.events[0])
			}
		}
	}
}

// TestParseFields compares parsed events with the sets they stand for.
func TestParseFields(t *testing.T) {
	all := func(lo, hi int) []int {
		var out []int
		for v := lo; v <= hi; v++ {
			out = append(out, v)
		}
		return out
	}
	tests := []struct {
		expr                           string
		weekdays, months, days, rev    []int
		hours, minutes, seconds, years []int
	}{
		{expr: "*-*-* *:*:*", weekdays: all(0, 6), years: all(1970, 2199), months: all(1, 12), days: all(1, 31), hours: all(0, 23), minutes: all(0, 59), seconds: all(0, 59)},
		{expr: "Mon", weekdays: []int{0}, days: all(1, 31), hours: []int{0}, minutes: []int{0}, seconds: []int{0}},
		{expr: "MONDAY", weekdays: []int{0}},
		{expr: "Mon, 12:34", weekdays: []int{0}, hours: []int{12}, minutes: []int{34}, seconds: []int{0}},
		{expr: "Mon..Tue", weekdays: []int{0, 1}},
		{expr: "Mon-Tue", weekdays: []int{0, 1}},
		{expr: "Sat,Sun,Mon-Tue", weekdays: []int{0, 1, 5, 6}},
		{expr: "2023-11-30", years: []int{2023}, months: []int{11}, days: []int{30}},
		{expr: "11-30", years: all(1970, 2199), months: []int{11}, days: []int{30}},
		{expr: "69-*-*", years: []int{2069}},
		{expr: "70-*-*", years: []int{1970}},
		{expr: "0099-*-*", years: []int{1999}},
		{expr: "11:22:33", hours: []int{11}, minutes: []int{22}, seconds: []int{33}},
		{expr: "*:1,2,3", minutes: []int{1, 2, 3}},
		{expr: "*:1..3,7..9:*", minutes: []int{1, 2, 3, 7, 8, 9}},
		{expr: "*:*/15", minutes: []int{0, 15, 30, 45}},
		{expr: "*:0..10/2", minutes: []int{0, 2, 4, 6, 8, 10}},
		{expr: "*:5/15", minutes: []int{5, 20, 35, 50}},
		{expr: "*:5..5/20", minutes: []int{5, 25, 45}},
		{expr: "*:1,2,3,4,5/20", minutes: []int{1, 2, 3, 4, 5, 25, 45}},
		{expr: "*:1..5/2,9..12/2", minutes: []int{1, 3, 5, 9, 11}},
		{expr: "*:59/100000000000000000000", minutes: []int{59}},
		{expr: "*-*~1", rev: []int{1}},
		{expr: "*~1", rev: []int{1}},
		{expr: "*-*~1,8", rev: []int{1, 8}},
		{expr: "*-*~1..3", rev: []int{1, 2, 3}},
		{expr: "*-*~1..2,4..5", rev: []int{1, 2, 4, 5}},
		{expr: "*-*~1..5/2", rev: []int{1, 3, 5}},
		{expr: "*-*~3/2", rev: []int{1, 3}},
		{expr: "*-*~1..31", rev: all(1, 31)},
		{expr: "*-*-*/10", days: []int{1, 11, 21, 31}},
		{expr: "*/100-*-*", years: []int{1970, 2070, 2170}},
		{expr: "minutely", hours: all(0, 23), minutes: all(0, 59), seconds: []int{0}},
		{expr: "MiNuTeLy", hours: all(0, 23), minutes: all(0, 59), seconds: []int{0}},
		{expr: "weekly", weekdays: []int{0}, hours: []int{0}},
		{expr: "quarterly", months: []int{1, 4, 7, 10}, days: []int{1}},
		{expr: "semiannually", months: []int{1, 7}, days: []int{1}},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			ev := mustParse(t, tt.expr).events[0]
			check := func(name string, want []int, has func(int) bool, lo, hi int) {
				if want == nil {
					return
				}
				set := map[int]bool{}
				for _, v := range want {
					set[v] = true
				}
				for v := lo; v <= hi; v++ {
					if has(v) != set[v] {
						t.Errorf("%s %d: got %v, want %v", name, v, has(v), set[v])
					}
				}
			}
			check("weekday", tt.weekdays, func(v int) bool { return ev.weekdays&(1<<v) != 0 }, 0, 6)
			check("year", tt.years, ev.hasYear, 1900, 2300)
			check("month", tt.months, func(v int) bool { return ev.months&(1<<v) != 0 }, 0, 15)
			check("day", tt.days, func(v int) bool { return ev.days&(1<<v) != 0 }, 0, 31)
			check("day from the end", tt.rev, func(v int) bool { return ev.revDays&(1<<v) != 0 }, 1, 31)
			check("hour", tt.hours, func(v int) bool { return ev.hours&(1<<v) != 0 }, 0, 31)
			check("minute", tt.minutes, func(v int) bool { return ev.minutes&(1<<v) != 0 }, 0, 63)
			check("second", tt.seconds, func(v int) bool { return ev.seconds&(1<<v) != 0 }, 0, 63)
		})
	}
}

// nextCase is an expression evaluated in tz: the successive occurrences
// after an instant, or none when want is empty.
type nextCase struct {
	name, expr, tz string
	after          string
	want           []string
}

func testNextCases(t *testing.T, tests []nextCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := mustParse(t, tt.expr)
			loc := zone(t, tt.tz)
			at := instant(t, tt.after)
			for i, w := range tt.want {
				got, ok := e.Next(at, loc)
				if !ok || !got.Equal(instant(t, w)) {
					t.Fatalf("occurrence %d after %s: got %v (ok=%v), want %s", i+1, at.UTC().Format(time.RFC3339), got.UTC(), ok, w)
				}
				if got.Location() != loc {
					t.Errorf("result in %v, want %v", got.Location(), loc)
				}
				at = got
			}
			if len(tt.want) == 0 {
				if got, ok := e.Next(at, loc); ok {
					t.Errorf("got %v, want none", got.UTC())
				}
			}
		})
	}
}

func TestNext(t *testing.T) {
	testNextCases(t, []nextCase{
		{"every 5th second", "*:*:*/5", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-01T00:00:05Z", "2020-01-01T00:00:10Z"}},
		{"every minute", "*:*", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-01T00:01:00Z", "2020-01-01T00:02:00Z"}},
		{"Feb 29 on a Monday", "Mon 2-29", "UTC", "2020-01-01T00:00:00Z", []string{"2044-02-29T00:00:00Z", "2072-02-29T00:00:00Z"}},
		{"last day of the month", "*~1", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-31T00:00:00Z", "2020-02-29T00:00:00Z", "2020-03-31T00:00:00Z"}},
		{"last Sunday of the month", "Sun *~7/1", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-26T00:00:00Z", "2020-02-23T00:00:00Z", "2020-03-29T00:00:00Z"}},
		{"in the past", "2019-01-01", "UTC", "2020-01-01T00:00:00Z", nil},
		{"midnight", "00:00", "UTC", "2020-01-01T01:00:00Z", []string{"2020-01-02T00:00:00Z"}},
		{"strictly after", "12:34", "UTC", "2020-01-01T12:34:00Z", []string{"2020-01-02T12:34:00Z"}},
		{"truncated to the second", "12:34", "UTC", "2020-01-01T12:33:59.9Z", []string{"2020-01-01T12:34:00Z"}},
		{"truncated, not rounded", "12:34", "UTC", "2020-01-01T12:34:00.9Z", []string{"2020-01-02T12:34:00Z"}},
		{"daily", "daily", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-02T00:00:00Z"}},
		{"weekly is Monday", "weekly", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-06T00:00:00Z"}},
		{"quarterly", "quarterly", "UTC", "2020-01-01T00:00:00Z", []string{"2020-04-01T00:00:00Z", "2020-07-01T00:00:00Z"}},
		{"weekday range with time", "Mon..Fri 09:00", "UTC", "2020-01-03T10:00:00Z", []string{"2020-01-06T09:00:00Z"}},
		{"in the check's zone", "12:00", "Europe/Riga", "2020-01-01T00:00:00Z", []string{"2020-01-01T10:00:00Z"}},
		{"the line's own zone wins", "12:00 UTC", "Europe/Riga", "2020-01-01T00:00:00Z", []string{"2020-01-01T12:00:00Z"}},
		{"a legacy zone name on a line", "12:00 US/Eastern", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-01T17:00:00Z"}},
		{"several lines: the earliest wins", "12:00\n06:00 Asia/Tokyo", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-01T12:00:00Z", "2020-01-01T21:00:00Z"}},
		{"several lines, one exhausted", "2020-01-01 12:00\n2021-01-01 00:00", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-01T12:00:00Z", "2021-01-01T00:00:00Z"}},
		{"CRLF lines", "12:00\r\n13:00", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-01T12:00:00Z", "2020-01-01T13:00:00Z"}},
		{"last second before 2200", "2199-12-31 23:59:59", "UTC", "2150-01-01T00:00:00Z", []string{"2199-12-31T23:59:59Z"}},
		{"nothing at 2200", "*-01-01", "UTC", "2199-06-01T00:00:00Z", nil},
		{"from before 1970", "1970-01-01", "UTC", "1960-01-01T00:00:00Z", []string{"1970-01-01T00:00:00Z"}},
		{"Riga winter", "*-*-29 3:30", "Europe/Riga", "2020-01-01T00:00:00Z", []string{"2020-01-29T01:30:00Z", "2020-02-29T01:30:00Z", "2020-04-29T00:30:00Z"}},
		{"across Go's empty zone period at the end of 2040", "Mon 2-29", "Europe/Riga", "2020-01-01T00:00:00Z", []string{"2044-02-28T22:00:00Z", "2072-02-28T22:00:00Z"}},
	})
}

// TestNextSpringForward: a wall-clock time skipped by a spring-forward change
// never fires; the walk resumes after the gap.
func TestNextSpringForward(t *testing.T) {
	testNextCases(t, []nextCase{
		// Riga 2020-03-29: 03:00 EET -> 04:00 EEST at 01:00Z.
		{"skipped time never fires", "*-03-29 3:30", "Europe/Riga", "2020-01-01T00:00:00Z", []string{"2021-03-29T00:30:00Z"}},
		{"hourly over the gap", "*:30", "Europe/Riga", "2020-03-29T00:00:00Z", []string{"2020-03-29T00:30:00Z", "2020-03-29T01:30:00Z"}},
		// New York 2023-03-12: 02:00 EST -> 03:00 EDT at 07:00Z.
		{"New York: 02:30 skipped", "02:30", "America/New_York", "2023-03-11T12:00:00Z", []string{"2023-03-13T06:30:00Z"}},
		{"New York: hourly over the gap", "*:30", "America/New_York", "2023-03-12T06:10:00Z", []string{"2023-03-12T06:30:00Z", "2023-03-12T07:30:00Z"}},
		// Lord Howe 2023-10-01: 02:00 +10:30 -> 02:30 +11 at 15:30Z.
		{"Lord Howe: half an hour skipped", "*:45", "Australia/Lord_Howe", "2023-09-30T14:00:00Z", []string{"2023-09-30T14:15:00Z", "2023-09-30T15:15:00Z", "2023-09-30T15:45:00Z"}},
		// Chatham 2023-09-24: 02:45 +12:45 -> 03:45 +13:45 at 14:00Z.
		{"Chatham: before the gap", "02:30", "Pacific/Chatham", "2023-09-23T12:00:00Z", []string{"2023-09-23T13:45:00Z"}},
		{"Chatham: 03:00 skipped", "03:00", "Pacific/Chatham", "2023-09-23T12:00:00Z", []string{"2023-09-24T13:15:00Z", "2023-09-25T13:15:00Z"}},
	})
}

// TestNextFallBack: a wall-clock time repeated by a fall-back change fires
// once, at its first instant, as in the reference. Asked from the second pass
// of the repeated hour, where the reference answers that first instant
// (before the one asked about), Next answers the next later occurrence.
func TestNextFallBack(t *testing.T) {
	testNextCases(t, []nextCase{
		// Issue #16: the reference's answers.
		{"issue: hourly in New York", "hourly", "America/New_York", "2023-11-05T05:20:38Z", []string{"2023-11-05T07:00:00Z"}},
		{"issue: 02:30 in Sydney", "*-*-* 02:30", "Australia/Sydney", "2024-04-06T15:46:02Z", []string{"2024-04-07T16:30:00Z"}},
		{"issue: weekends 03:15 in Chatham", "Sat,Sun *-*-* 03:15:00", "Pacific/Chatham", "2024-04-06T13:54:26Z", []string{"2024-04-12T14:30:00Z"}},

		// New York 2023-11-05: 02:00 EDT -> 01:00 EST at 06:00Z; 01:00-02:00
		// is shown 05:00-06:00Z and again 06:00-07:00Z.
		{"New York: hourly across the fold", "hourly", "America/New_York", "2023-11-05T04:30:00Z", []string{"2023-11-05T05:00:00Z", "2023-11-05T07:00:00Z", "2023-11-05T08:00:00Z", "2023-11-05T09:00:00Z"}},
		{"New York: from the first pass", "*:30", "America/New_York", "2023-11-05T05:40:00Z", []string{"2023-11-05T07:30:00Z", "2023-11-05T08:30:00Z"}},
		{"New York: from the second pass, before the repeated match", "*:30", "America/New_York", "2023-11-05T06:10:00Z", []string{"2023-11-05T07:30:00Z"}},
		{"New York: from the second pass, after the repeated match", "*:30", "America/New_York", "2023-11-05T06:40:00Z", []string{"2023-11-05T07:30:00Z"}},
		{"New York: 01:30 before the fold", "01:30", "America/New_York", "2023-11-04T12:00:00Z", []string{"2023-11-05T05:30:00Z", "2023-11-06T06:30:00Z"}},
		{"New York: 01:30 from the second pass", "01:30", "America/New_York", "2023-11-05T06:10:00Z", []string{"2023-11-06T06:30:00Z"}},
		{"New York: 01:30 after its second instant", "01:30", "America/New_York", "2023-11-05T06:40:00Z", []string{"2023-11-06T06:30:00Z"}},
		{"New York: 02:30 after the fold", "02:30", "America/New_York", "2023-11-05T05:00:00Z", []string{"2023-11-05T07:30:00Z"}},
		{"New York: 00:30 from the second pass", "00:30", "America/New_York", "2023-11-05T06:10:00Z", []string{"2023-11-06T05:30:00Z"}},
		{"New York: a line's own zone", "*:30 America/New_York", "UTC", "2023-11-05T06:10:00Z", []string{"2023-11-05T07:30:00Z"}},

		// Berlin 2023-10-29: 03:00 CEST -> 02:00 CET at 01:00Z.
		{"Berlin: 02:30 before the fold", "02:30", "Europe/Berlin", "2023-10-28T12:00:00Z", []string{"2023-10-29T00:30:00Z", "2023-10-30T01:30:00Z"}},
		{"Berlin: from the first pass", "02:30", "Europe/Berlin", "2023-10-29T00:45:00Z", []string{"2023-10-30T01:30:00Z"}},
		{"Berlin: from the second pass", "02:30", "Europe/Berlin", "2023-10-29T01:15:00Z", []string{"2023-10-30T01:30:00Z"}},
		{"Berlin: after the second instant", "02:30", "Europe/Berlin", "2023-10-29T01:45:00Z", []string{"2023-10-30T01:30:00Z"}},
		{"Berlin: seconds at the end of the first pass", "*:*:0/20", "Europe/Berlin", "2023-10-29T00:59:30Z", []string{"2023-10-29T00:59:40Z", "2023-10-29T02:00:00Z", "2023-10-29T02:00:20Z"}},
		{"Berlin: seconds at the end of the second pass", "*:*:0/20", "Europe/Berlin", "2023-10-29T01:59:30Z", []string{"2023-10-29T02:00:00Z", "2023-10-29T02:00:20Z"}},

		// Sydney 2024-04-07: 03:00 AEDT -> 02:00 AEST at 2024-04-06T16:00Z.
		{"Sydney: from before the fold", "*-*-* 02:30", "Australia/Sydney", "2024-04-06T15:15:00Z", []string{"2024-04-06T15:30:00Z", "2024-04-07T16:30:00Z"}},
		{"Sydney: from the second pass", "*-*-* 02:30", "Australia/Sydney", "2024-04-06T16:45:00Z", []string{"2024-04-07T16:30:00Z"}},
		{"Sydney: an hour outside the fold", "*-*-* 03:30", "Australia/Sydney", "2024-04-06T15:45:00Z", []string{"2024-04-06T17:30:00Z"}},

		// Lord Howe 2024-04-07, a 30-minute change: 02:00 +11 -> 01:30
		// +10:30 at 2024-04-06T15:00Z.
		{"Lord Howe: quarter hours across the fold", "*:15,45", "Australia/Lord_Howe", "2024-04-06T14:00:00Z", []string{"2024-04-06T14:15:00Z", "2024-04-06T14:45:00Z", "2024-04-06T15:45:00Z", "2024-04-06T16:15:00Z"}},
		{"Lord Howe: from the second pass", "*:15,45", "Australia/Lord_Howe", "2024-04-06T15:10:00Z", []string{"2024-04-06T15:45:00Z"}},
		{"Lord Howe: 01:45 before the fold", "01:45", "Australia/Lord_Howe", "2024-04-05T12:00:00Z", []string{"2024-04-05T14:45:00Z", "2024-04-06T14:45:00Z", "2024-04-07T15:15:00Z"}},
		{"Lord Howe: 01:45 from the second pass", "01:45", "Australia/Lord_Howe", "2024-04-06T15:05:00Z", []string{"2024-04-07T15:15:00Z"}},
		{"Lord Howe: 02:00 only once", "02:00", "Australia/Lord_Howe", "2024-04-06T14:50:00Z", []string{"2024-04-06T15:30:00Z"}},

		// Chatham 2024-04-07, a 45-minute offset: 03:45 +13:45 -> 02:45
		// +12:45 at 2024-04-06T14:00Z.
		{"Chatham: 03:15 before the fold", "03:15", "Pacific/Chatham", "2024-04-06T12:00:00Z", []string{"2024-04-06T13:30:00Z", "2024-04-07T14:30:00Z"}},
		{"Chatham: 03:15 from the second pass", "03:15", "Pacific/Chatham", "2024-04-06T14:20:00Z", []string{"2024-04-07T14:30:00Z"}},
		{"Chatham: hourly across the fold", "*:15", "Pacific/Chatham", "2024-04-06T13:00:00Z", []string{"2024-04-06T13:30:00Z", "2024-04-06T15:30:00Z", "2024-04-06T16:30:00Z"}},
		{"Chatham: hourly from the second pass", "*:15", "Pacific/Chatham", "2024-04-06T14:20:00Z", []string{"2024-04-06T15:30:00Z"}},
		{"Chatham: the end of the repeated hour", "03:45", "Pacific/Chatham", "2024-04-06T13:50:00Z", []string{"2024-04-06T15:00:00Z"}},

		// St. John's 2023-11-05, a half-hour offset: 02:00 NDT (-2:30) ->
		// 01:00 NST (-3:30) at 04:30Z.
		{"St. John's: hourly across the fold", "*:00", "America/St_Johns", "2023-11-05T02:10:00Z", []string{"2023-11-05T02:30:00Z", "2023-11-05T03:30:00Z", "2023-11-05T05:30:00Z", "2023-11-05T06:30:00Z"}},
		{"St. John's: from the second pass", "00:30", "America/St_Johns", "2023-11-05T03:45:00Z", []string{"2023-11-06T04:00:00Z"}},

		// Kolkata has no DST: the same walk gives plain answers.
		{"Kolkata: hourly", "*:30", "Asia/Kolkata", "2023-11-05T05:20:00Z", []string{"2023-11-05T06:00:00Z", "2023-11-05T07:00:00Z"}},
		{"Kolkata: daily", "02:30", "Asia/Kolkata", "2023-10-28T12:00:00Z", []string{"2023-10-28T21:00:00Z", "2023-10-29T21:00:00Z"}},
	})
}

// TestNextFollowsFutureRules: zone transitions beyond the last listed one
// come from the zone's rule; 2150's fall-back in Riga repeats 03:30, which
// fires at its first instant only.
func TestNextFollowsFutureRules(t *testing.T) {
	e := mustParse(t, "*-*-* 03:30")
	loc := zone(t, "Europe/Riga")
	// The last Sunday of October 2150 is the 25th.
	at := instant(t, "2150-10-24T12:00:00Z")
	var got []string
	for range 3 {
		n, ok := e.Next(at, loc)
		if !ok {
			t.Fatal("no occurrence")
		}
		got = append(got, n.UTC().Format(time.RFC3339))
		at = n
	}
	want := []string{"2150-10-25T00:30:00Z", "2150-10-26T01:30:00Z", "2150-10-27T01:30:00Z"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("got %v, want %v", got, want)
	}
}

// matches reports whether a wall-clock time matches an event, straight from
// the definition.
func (ev *event) matches(w time.Time) bool {
	y, mo, d := w.Date()
	last := daysIn(y, int(mo))
	return ev.hasYear(y) && ev.months&(1<<int(mo)) != 0 &&
		ev.dayMatches(d, last, (int(w.Weekday())+6)%7) &&
		ev.hours&(1<<w.Hour()) != 0 && ev.minutes&(1<<w.Minute()) != 0 && ev.seconds&(1<<w.Second()) != 0
}

// TestNextAgainstBruteForce compares Next with a scan of every real minute
// over a window around DST changes, for random expressions with seconds 0:
// the answer is the first minute after the start whose wall-clock time
// matches and was not shown before (a repeated time fires at its first
// instant only).
func TestNextAgainstBruteForce(t *testing.T) {
	// Zones and instants where their offset changes; Kolkata and UTC have
	// none and are controls.
	changes := []struct {
		zone    string
		instant []string
	}{
		{"UTC", []string{"2023-03-11T00:00:00Z"}},
		{"Asia/Kolkata", []string{"2023-10-28T12:00:00Z"}},
		{"Europe/Riga", []string{"2023-03-26T01:00:00Z", "2023-10-29T01:00:00Z"}},
		{"America/New_York", []string{"2023-03-12T07:00:00Z", "2023-11-05T06:00:00Z"}},
		{"Australia/Lord_Howe", []string{"2023-04-01T15:00:00Z", "2023-09-30T15:30:00Z"}},
		{"America/Santiago", []string{"2023-04-02T03:00:00Z", "2023-09-03T04:00:00Z"}},
		{"Pacific/Chatham", []string{"2024-04-06T14:00:00Z", "2023-09-23T14:00:00Z"}},
		{"America/St_Johns", []string{"2023-03-12T05:30:00Z", "2023-11-05T04:30:00Z"}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(choices ...string) string { return choices[rng.IntN(len(choices))] }
	const window = 3 * 24 * time.Hour
	for i := 0; i < 500; i++ {
		expr := fmt.Sprintf("%s %s %s:%s",
			pick("Mon..Sun", "Sat,Sun", "Mon..Fri", "Sun"),
			pick("*-*-*", "*-*~1..8", "*-*-1..31/2", "*-*-*/3"),
			pick("*", "0..3", "1..3", "*/2", "0", "2"),
			pick("*", "30", "0,30", "*/15", "15..45/10"))
		e := mustParse(t, expr)
		c := changes[rng.IntN(len(changes))]
		loc := zone(t, c.zone)
		change := instant(t, c.instant[rng.IntN(len(c.instant))])
		at := change.Add(time.Duration(rng.IntN(12*60)-6*60) * time.Minute)
		var want, shown time.Time // shown: the latest wall-clock time so far
		for m := at.Truncate(time.Minute).Add(-24 * time.Hour); m.Before(at.Add(window)); m = m.Add(time.Minute) {
			l := m.In(loc)
			wall := time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
			if m.After(at) && wall.After(shown) && e.events[0].matches(l) {
				want = m
				break
			}
			if wall.After(shown) {
				shown = wall
			}
		}
		got, ok := e.Next(at, loc)
		switch {
		case want.IsZero() && ok && got.Before(at.Add(window)):
			t.Errorf("%q in %s after %s: got %s, the scan found nothing", expr, loc, at.Format(time.RFC3339), got.UTC())
		case !want.IsZero() && (!ok || !got.Equal(want)):
			t.Errorf("%q in %s after %s: got %s (ok=%v), want %s", expr, loc, at.Format(time.RFC3339), got.UTC(), ok, want.UTC())
		}
	}
}

func FuzzParseNext(f *testing.F) {
	for _, s := range []string{"daily", "12:34", "Mon..Fri 09:00", "*-*~1", "Sun *~7/1", "*:*:*/5", "12:00 Europe/Riga\n06:00", "2199-12-31 23:59:59", "*/100-*-*", "Mon, 1-2-3"} {
		f.Add(s, int64(946684800))
	}
	// From the second pass of repeated hours, where the reference can answer
	// an instant before the one asked about.
	f.Add("*:30", int64(1699164600))    // 2023-11-05T06:10Z, New York
	f.Add("03:15", int64(1712413200))   // 2024-04-06T14:20Z, Chatham
	f.Add("*:15,45", int64(1712416200)) // 2024-04-06T15:10Z, Lord Howe
	zones := []*time.Location{time.UTC, zone(f, "Europe/Riga"), zone(f, "Australia/Lord_Howe"), zone(f, "America/New_York"), zone(f, "Pacific/Chatham")}
	f.Fuzz(func(t *testing.T, expr string, unix int64) {
		e, err := Parse(expr)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		at := time.Unix(unix%(1<<33), 0)
		for _, loc := range zones {
			n, ok := e.Next(at, loc)
			if !ok {
				continue
			}
			if !n.After(at) || n.Year() >= maxYear+1 {
				t.Fatalf("%q after %v: %v", expr, at, n)
			}
			if m, ok := e.Next(n, loc); ok && !m.After(n) {
				t.Fatalf("%q: %v after %v", expr, m, n)
			}
			if len(e.events) == 1 && e.events[0].loc == nil && !e.events[0].matches(n.In(loc)) {
				t.Fatalf("%q: %v does not match", expr, n.In(loc))
			}
			// A repeated wall-clock time fires at its first instant only;
			// offsets change by multiples of a quarter hour.
			if len(e.events) == 1 && e.events[0].loc == nil {
				wall := n.In(loc).Format(time.DateTime)
				for d := 15 * time.Minute; d <= 3*time.Hour; d += 15 * time.Minute {
					if n.Add(-d).In(loc).Format(time.DateTime) == wall {
						t.Fatalf("%q after %v: %v shows %s again", expr, at, n, wall)
					}
				}
			}
		}
	})
}

func BenchmarkNext(b *testing.B) {
	riga := zone(b, "Europe/Riga")
	for _, expr := range []string{"daily", "*:*:*", "Mon..Fri 09:00", "Mon 2-29", "*-*~1 12:00\n06:00 Asia/Tokyo"} {
		e := mustParse(b, expr)
		at := time.Date(2023, 10, 1, 0, 0, 0, 0, time.UTC)
		b.Run(expr, func(b *testing.B) {
			for b.Loop() {
				if _, ok := e.Next(at, riga); !ok {
					b.Fatal("none")
				}
			}
		})
	}
}
