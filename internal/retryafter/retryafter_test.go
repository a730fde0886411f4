package retryafter

import (
	"net/http"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-3", 0},
		{"7", 7 * time.Second},
		{" 2 ", 2 * time.Second},
		{"999999999", Max},
		{"99999999999999999999", 0}, // not a number Go can hold: not delay-seconds
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30 * time.Second},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(72 * time.Hour).Format(http.TimeFormat), Max},
		{"soon", 0},
		{"1.5", 0},
	} {
		if got := Parse(tc.in, now); got != tc.want {
			t.Errorf("Parse(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, seed := range []string{"", "7", " 2 ", "-1", "Fri, 02 Jan 2026 03:04:35 GMT", "soon"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if d := Parse(v, now); d < 0 || d > Max {
			t.Errorf("Parse(%q) = %s, outside 0..%s", v, d, Max)
		}
	})
}
