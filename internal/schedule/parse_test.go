package schedule

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, expr, tz string
		prefix         string // the error message starts with it
		kind           Kind   // for expression errors; "" for a zone error
	}{
		{"six-field cron goes to OnCalendar", "* * * * * *", "UTC", "invalid OnCalendar expression: ", KindOnCalendar},
		{"macro", "@daily", "UTC", "invalid OnCalendar expression: ", KindOnCalendar},
		{"empty", "", "UTC", "invalid OnCalendar expression: ", KindOnCalendar},
		{"minute out of range", "61 * * * *", "UTC", "invalid cron expression: ", KindCron},
		{"impossible date", "0 0 30 2 *", "UTC", "invalid cron expression: ", KindCron},
		{"no occurrence within 50 years", "* * */20 * 1L", "UTC", "invalid cron expression: ", KindCron},
		{"question mark", "0 0 ? * *", "UTC", "invalid cron expression: ", KindCron},
		{"zone in the wrong case", "0 * * * *", "utc", `invalid timezone: "utc"`, ""},
		{"unknown zone", "0 * * * *", "Mars/Olympus_Mons", `invalid timezone: "Mars/Olympus_Mons"`, ""},
		{"empty zone", "0 * * * *", "", `invalid timezone: ""`, ""},
		{"a bad expression is reported before a bad zone", "61 * * * *", "utc", "invalid cron expression: ", KindCron},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.expr, tt.tz)
			if err == nil {
				t.Fatalf("Parse(%q, %q) = %v, want an error", tt.expr, tt.tz, s)
			}
			if !strings.HasPrefix(err.Error(), tt.prefix) {
				t.Errorf("error %q, want prefix %q", err, tt.prefix)
			}
			if tt.kind == "" {
				if !errors.Is(err, ErrInvalidTimezone) || errors.Is(err, ErrInvalidExpression) {
					t.Errorf("error %v: want ErrInvalidTimezone only", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidExpression) || errors.Is(err, ErrInvalidTimezone) {
				t.Errorf("error %v: want ErrInvalidExpression only", err)
			}
			var ee *ExpressionError
			if !errors.As(err, &ee) || ee.Kind != tt.kind || ee.Expr != tt.expr || errors.Unwrap(err) == nil {
				t.Errorf("error %#v: want an *ExpressionError of kind %s wrapping the dialect's error", err, tt.kind)
			}
			if v := Validate(tt.expr); v == nil || v.Error() != err.Error() {
				t.Errorf("Validate(%q) = %v, want %v", tt.expr, v, err)
			}
		})
	}
}

// TestParseAccepts: expressions and zones the reference accepts (its tests
// create checks with each of these).
func TestParseAccepts(t *testing.T) {
	tests := []struct{ expr, tz string }{
		{"* * * * *", "UTC"},
		{"0 * * * *", "UTC"},
		{"0 10 * * *", "Australia/Brisbane"},
		{"30 3 * * *", "US/Eastern"},
		{" 5 4 * * sun ", "Europe/Kiev"},
		{"0 0 31 4,5 *", "UTC"},
		{"12:34", "UTC"},
		{"daily", "Europe/Riga"},
	}
	for _, tt := range tests {
		if _, err := Parse(tt.expr, tt.tz); err != nil {
			t.Errorf("Parse(%q, %q): %v", tt.expr, tt.tz, err)
		}
		if err := Validate(tt.expr); err != nil {
			t.Errorf("Validate(%q): %v", tt.expr, err)
		}
	}
}

// never is an expression without occurrences.
type never struct{}

func (never) Next(time.Time, *time.Location) (time.Time, bool) { return time.Time{}, false }

func TestNoOccurrenceError(t *testing.T) {
	// A parsed expression without an occurrence after 2000-01-01 is rejected
	// by the dispatcher itself, whatever its dialect's Parse checked.
	err := checkOccurrence(never{}, KindOnCalendar, "2199-01-01")
	if want := "invalid OnCalendar expression: no occurrence after 2000-01-01 00:00 UTC"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if !errors.Is(err, ErrInvalidExpression) {
		t.Errorf("error %v is not ErrInvalidExpression", err)
	}
}

// TestNext checks the bound schedules against the reference's vectors
// (9.4): truncation to whole seconds, zones, daylight saving time, month
// ends.
func TestNext(t *testing.T) {
	tests := []struct {
		name, expr, tz string
		after, want    string // RFC 3339; want "" means none
	}{
		{"hourly, from the hour", "0 * * * *", "UTC", "2000-01-01T00:00:00Z", "2000-01-01T01:00:00Z"},
		{"strictly after", "0 * * * *", "UTC", "2000-01-01T01:00:00Z", "2000-01-01T02:00:00Z"},
		{"truncated to the second", "0 * * * *", "UTC", "2000-01-01T00:59:59.5Z", "2000-01-01T01:00:00Z"},
		{"half a second past the hour", "0 * * * *", "UTC", "2000-01-01T01:00:00.5Z", "2000-01-01T02:00:00Z"},
		{"Brisbane 10:00 is 00:00Z", "0 10 * * *", "Australia/Brisbane", "2000-01-01T00:00:00Z", "2000-01-02T00:00:00Z"},
		{"legacy alias", "0 10 * * *", "Australia/Queensland", "2000-01-01T00:00:00Z", "2000-01-02T00:00:00Z"},
		{"Riga spring-forward gap fires at the first valid minute", "30 3 * * *", "Europe/Riga", "2023-03-25T12:00:00Z", "2023-03-26T01:00:00Z"},
		{"Riga fall-back fires once", "30 3 * * *", "Europe/Riga", "2023-10-28T12:00:00Z", "2023-10-29T00:30:00Z"},
		{"Riga fall-back, the day after", "30 3 * * *", "Europe/Riga", "2023-10-29T00:30:00Z", "2023-10-30T01:30:00Z"},
		{"Riga every hour: the repeated 03:30, first", "30 * * * *", "Europe/Riga", "2023-10-29T00:00:00Z", "2023-10-29T00:30:00Z"},
		{"Riga every hour: the repeated 03:30, second", "30 * * * *", "Europe/Riga", "2023-10-29T00:30:00Z", "2023-10-29T01:30:00Z"},
		{"New York spring-forward gap", "30 2 * * *", "America/New_York", "2023-03-11T12:00:00Z", "2023-03-12T07:00:00Z"},
		{"last day of a leap February", "0 0 L * *", "UTC", "2024-01-31T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"31st skips short months", "0 0 31 * *", "UTC", "2024-01-31T00:00:00Z", "2024-03-31T00:00:00Z"},
		{"year end", "59 23 31 12 *", "UTC", "2023-12-31T23:59:00Z", "2024-12-31T23:59:00Z"},
		{"OnCalendar in a zone", "12:34", "Europe/Riga", "2024-01-01T00:00:00Z", "2024-01-01T10:34:00Z"},
		{"OnCalendar fall-back fires once", "hourly", "America/New_York", "2023-11-05T05:20:38Z", "2023-11-05T07:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse(tt.expr, tt.tz)
			if err != nil {
				t.Fatal(err)
			}
			after, err := time.Parse(time.RFC3339Nano, tt.after)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := s.Next(after)
			if !ok {
				t.Fatalf("Next(%s): none, want %s", tt.after, tt.want)
			}
			if g := got.Format(time.RFC3339Nano); g != tt.want {
				t.Errorf("Next(%s) = %s, want %s", tt.after, g, tt.want)
			}
			if got.Location() != time.UTC {
				t.Errorf("Next returned an instant in %s, want UTC", got.Location())
			}
		})
	}
}

func TestNextNone(t *testing.T) {
	// The dialects report no occurrence far outside any real instant.
	s, err := Parse("0 0 29 2 *", "UTC")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := s.Next(time.Date(200000, 1, 1, 0, 0, 0, 0, time.UTC)); ok {
		t.Errorf("Next after year 200000 = %s, want none", n)
	}
}

func TestScheduleString(t *testing.T) {
	s, err := Parse("0 10 * * *", "Australia/Queensland")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(s), `cron "0 10 * * *" in Australia/Brisbane`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
}
