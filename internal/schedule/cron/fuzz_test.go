package cron

import (
	"testing"
	"time"
)

// FuzzParseNext checks that Parse never panics and that, for every expression it
// accepts, Next never panics, always moves strictly forward and is monotonic.
func FuzzParseNext(f *testing.F) {
	for _, c := range nextCases {
		f.Add(c.expr)
	}
	for _, s := range []string{
		"", "* * * *", "* * * * * *", "@daily", "0 0 30 2 *", "* * */20 * 1L", "0 0 * * FRIL",
		"0 0 1-L * *", "0 0 * * 1#6", "*/0 * * * *", "5-1 * * * *", "0 0 ? * *", "H * * * *",
		"0 0 * JANUARY *", "1-1_0 * * * *", "¹ * * * *", "0 0 LWX * *", "*/99999999999999999999 * * * *",
		"0 0 * * 0L,7L", "1 1 */100,1-7 * MON", "0 0 LW,L * *", "0 0 ß * *", "0 0 * * ſun\x1c",
	} {
		f.Add(s)
	}

	locs := []*time.Location{nil}
	for _, name := range []string{"Europe/Riga", "America/New_York", "Australia/Lord_Howe", "America/Santiago", "Pacific/Apia", "America/St_Johns"} {
		locs = append(locs, loadLocation(f, name))
	}
	starts := []time.Time{
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2023, 10, 29, 0, 45, 30, 0, time.UTC),          // Riga: repeated hour
		time.Date(2023, 10, 29, 1, 15, 0, 0, time.UTC),           // Riga: second 03:15
		time.Date(2023, 3, 26, 0, 59, 59, 500_000_000, time.UTC), // Riga: just before the gap
		time.Date(2023, 11, 5, 5, 45, 0, 0, time.UTC),            // New York: repeated hour
		time.Date(2011, 12, 29, 9, 59, 0, 0, time.UTC),           // Apia: skipped day
		time.Date(2040, 12, 31, 12, 0, 0, 0, time.UTC),           // Go issue 81583
		time.Date(2008, 11, 2, 2, 30, 30, 0, time.UTC),           // St Johns: fall back at 00:01
		time.Date(1969, 12, 31, 23, 59, 59, 999, time.UTC),
	}

	f.Fuzz(func(t *testing.T, expr string) {
		e, err := Parse(expr)
		if err != nil {
			if e != nil {
				t.Fatalf("Parse(%q) returned both an Expression and an error", expr)
			}
			if err.Error() == "" {
				t.Fatalf("Parse(%q): empty error message", expr)
			}
			return
		}
		if e.String() != expr {
			t.Fatalf("String() = %q, want %q", e.String(), expr)
		}
		for _, loc := range locs {
			for _, start := range starts {
				n1, ok := e.Next(start, loc)
				if !ok {
					continue
				}
				if !n1.After(start.Truncate(time.Second)) {
					t.Fatalf("%q in %v: Next(%v) = %v, not after the start", expr, loc, start, n1)
				}
				n2, ok := e.Next(n1, loc)
				if ok && !n2.After(n1) {
					t.Fatalf("%q in %v: Next(%v) = %v, not after it", expr, loc, n1, n2)
				}
			}
		}
	})
}
