package words

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0 seconds"},
		{400 * time.Microsecond, "1 millisecond"},
		{250 * time.Millisecond, "250 milliseconds"},
		{999 * time.Millisecond, "999 milliseconds"},
		{time.Second, "1 second"},
		{1400 * time.Millisecond, "1.4 seconds"},
		{1449 * time.Millisecond, "1.4 seconds"},
		{9940 * time.Millisecond, "9.9 seconds"},
		{9960 * time.Millisecond, "10 seconds"},
		{45 * time.Second, "45 seconds"},
		{time.Minute, "1 minute"},
		{90 * time.Second, "1 minute 30 seconds"},
		{90*time.Second + 600*time.Millisecond, "1 minute 31 seconds"},
		{time.Hour, "1 hour"},
		{2*time.Hour + 30*time.Minute, "2 hours 30 minutes"},
		{time.Hour + 30*time.Second, "1 hour"},
		{24 * time.Hour, "1 day"},
		{7 * 24 * time.Hour, "7 days"},
		{26*time.Hour + 5*time.Minute, "1 day 2 hours"},
		{24*time.Hour + 3*time.Minute, "1 day"},
		{-90 * time.Second, "1 minute 30 seconds"},
	} {
		if got := Duration(tc.d); got != tc.want {
			t.Errorf("Duration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestPercent(t *testing.T) {
	for _, tc := range []struct {
		share float64
		want  string
	}{
		{1, "100%"}, {0, "0%"}, {0.8, "80%"}, {0.9995, "99.95%"}, {0.995, "99.5%"}, {0.123456, "12.35%"},
		{0.9999999, "99.99%"}, {0.0000001, "0.01%"},
	} {
		if got := Percent(tc.share); got != tc.want {
			t.Errorf("Percent(%v) = %q, want %q", tc.share, got, tc.want)
		}
	}
}

func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		250 * time.Millisecond:  "250 ms",
		time.Second:             "1 s",
		1500 * time.Millisecond: "1.5 s",
		90 * time.Second:        "1.5 min",
		59 * time.Minute:        "59 min",
		2 * time.Hour:           "2 h",
		150 * time.Minute:       "2.5 h",
	} {
		if got := Short(d); got != want {
			t.Errorf("Short(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestRelative(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{now, "just now"},
		{now.Add(-3 * time.Second), "just now"},
		{now.Add(3 * time.Second), "just now"},
		{now.Add(-5 * time.Second), "5 seconds ago"},
		{now.Add(-42 * time.Second), "42 seconds ago"},
		{now.Add(-time.Minute), "1 minute ago"},
		{now.Add(-3*time.Minute - 59*time.Second), "3 minutes ago"},
		{now.Add(-time.Hour), "1 hour ago"},
		{now.Add(-26 * time.Hour), "26 hours ago"},
		{now.Add(-48 * time.Hour), "2 days ago"},
		{now.Add(-72*time.Hour - 5*time.Hour), "3 days ago"},
		{now.Add(time.Hour), "in 1 hour"},
		{now.Add(90 * time.Second), "in 1 minute"},
		{now.Add(-400 * 24 * time.Hour), "400 days ago"},
	} {
		if got := Relative(tc.t, now); got != tc.want {
			t.Errorf("Relative(%v before) = %q, want %q", now.Sub(tc.t), got, tc.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int64]string{0: "0 runs", 1: "1 run", 2: "2 runs"} {
		if got := Plural(n, "run"); got != want {
			t.Errorf("Plural(%d) = %q, want %q", n, got, want)
		}
	}
}

// FuzzDuration: whatever the duration, it is said in at most two units,
// and never as nothing.
func FuzzDuration(f *testing.F) {
	f.Add(int64(90 * time.Second))
	f.Add(int64(-1))
	f.Fuzz(func(t *testing.T, n int64) {
		if n == -1<<63 {
			return // its length does not fit a Duration
		}
		got := Duration(time.Duration(n))
		if got == "" {
			t.Fatalf("Duration(%d) is empty", n)
		}
		if fields := len(strings.Fields(got)); fields != 2 && fields != 4 {
			t.Fatalf("Duration(%d) = %q: not one or two units", n, got)
		}
	})
}

func TestCuts(t *testing.T) {
	for _, tc := range []struct {
		s          string
		limit      int
		cut, clip  string
		ellipsized string
	}{
		{"short", 10, "short", "short", "short"},
		{"exactly10!", 10, "exactly10!", "exactly10!", "exactly10!"},
		{"a longer string", 10, "a longer s", "a longe…", "a longer …"},
		// "é" is two bytes: a cut never splits it.
		{"ééééé", 5, "éé", "é…", "ééééé"},
		{"ééééé", 4, "éé", "…", "ééé…"},
		{"abc", 0, "", "…", ""},
	} {
		if got, cut := Cut(tc.s, tc.limit); got != tc.cut || cut != (tc.cut != tc.s) {
			t.Errorf("Cut(%q, %d) = %q, %v; want %q", tc.s, tc.limit, got, cut, tc.cut)
		}
		if got := Clip(tc.s, tc.limit); got != tc.clip {
			t.Errorf("Clip(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.clip)
		}
		if got := Ellipsize(tc.s, tc.limit); got != tc.ellipsized {
			t.Errorf("Ellipsize(%q, %d) = %q, want %q", tc.s, tc.limit, got, tc.ellipsized)
		}
	}
}

// FuzzCut: what Cut and Clip return is valid UTF-8 when s is, within the
// bound (Clip's ellipsis needs 3 bytes), and a prefix of s.
func FuzzCut(f *testing.F) {
	f.Add("ééé abc", 4)
	f.Fuzz(func(t *testing.T, s string, limit int) {
		if limit < 0 || limit > 1<<20 || !utf8.ValidString(s) {
			return
		}
		got, _ := Cut(s, limit)
		if len(got) > limit || !utf8.ValidString(got) || !strings.HasPrefix(s, got) {
			t.Fatalf("Cut(%q, %d) = %q", s, limit, got)
		}
		if clip := Clip(s, limit); limit >= 3 && (len(clip) > limit || !utf8.ValidString(clip)) {
			t.Fatalf("Clip(%q, %d) = %q", s, limit, clip)
		}
	})
}
