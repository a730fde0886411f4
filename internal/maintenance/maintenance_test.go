package maintenance

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func oneOff(name, from, to string) *v1.MaintenanceWindow {
	f, t := metav1.NewTime(ts(from)), metav1.NewTime(ts(to))
	return &v1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Checks: []string{"backup"}}, From: &f, To: &t}}
}

func recurring(name, sched, dur, tz string) *v1.MaintenanceWindow {
	d, err := time.ParseDuration(dur)
	if err != nil {
		panic(err)
	}
	return &v1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Checks: []string{"backup"}}, Schedule: &sched,
			Duration: &metav1.Duration{Duration: d}, TZ: v1.TimeZone(tz)}}
}

func compile(t *testing.T, mw *v1.MaintenanceWindow) *Window {
	t.Helper()
	w, err := Compile(mw)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return w
}

func TestAt(t *testing.T) {
	for _, tc := range []struct {
		name       string
		window     *v1.MaintenanceWindow
		at         string
		active     bool
		start, end string // "": no span
	}{
		{"one-off, before", oneOff("w", "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"), "2026-11-28T01:00:00Z", false, "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"},
		{"one-off, at its start", oneOff("w", "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"), "2026-11-28T02:00:00Z", true, "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"},
		{"one-off, inside", oneOff("w", "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"), "2026-11-28T03:59:59Z", true, "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"},
		{"one-off, at its end (ends are exclusive)", oneOff("w", "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"), "2026-11-28T04:00:00Z", false, "", ""},
		{"one-off, after", oneOff("w", "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"), "2026-12-01T00:00:00Z", false, "", ""},
		{"nightly, before tonight's", recurring("w", "0 2 * * *", "2h", "UTC"), "2026-11-28T01:00:00Z", false, "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"},
		{"nightly, at its start", recurring("w", "0 2 * * *", "2h", "UTC"), "2026-11-28T02:00:00Z", true, "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"},
		{"nightly, inside", recurring("w", "0 2 * * *", "2h", "UTC"), "2026-11-28T03:30:00Z", true, "2026-11-28T02:00:00Z", "2026-11-28T04:00:00Z"},
		{"nightly, at its end: the next night's", recurring("w", "0 2 * * *", "2h", "UTC"), "2026-11-28T04:00:00Z", false, "2026-11-29T02:00:00Z", "2026-11-29T04:00:00Z"},
		{"nightly in Berlin (UTC+1 in winter)", recurring("w", "0 2 * * *", "1h", "Europe/Berlin"), "2026-11-28T01:30:00Z", true, "2026-11-28T01:00:00Z", "2026-11-28T02:00:00Z"},
		{"Saturdays, OnCalendar", recurring("w", "Sat *-*-* 22:00", "4h", "UTC"), "2026-11-29T01:00:00Z", true, "2026-11-28T22:00:00Z", "2026-11-29T02:00:00Z"},
		{"hourly for 90 minutes: one long span", recurring("w", "0 * * * *", "90m", "UTC"), "2026-11-28T05:10:00Z", true, "2026-11-28T04:00:00Z", "2026-11-28T05:00:00Z"},
		{"a past date: never again", recurring("w", "2020-01-01 00:00", "1h", "UTC"), "2026-11-28T05:10:00Z", false, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := compile(t, tc.window)
			span, active := w.At(ts(tc.at))
			if active != tc.active {
				t.Errorf("active = %v, want %v", active, tc.active)
			}
			if tc.start == "" {
				if !span.IsZero() {
					t.Errorf("span = %v, want none", span)
				}
				return
			}
			if tc.name == "hourly for 90 minutes: one long span" {
				// Instances overlap, so the span never ends within the merge
				// bound: it starts at the first instance running at t and
				// ends far beyond the hour.
				if !span.Start.Equal(ts(tc.start)) || span.End.Sub(span.Start) < 60*time.Hour {
					t.Errorf("span = %v, want from %s for many hours", span, tc.start)
				}
				return
			}
			if want := (Span{ts(tc.start), ts(tc.end)}); span != want {
				t.Errorf("span = %v, want %v", span, want)
			}
		})
	}
}

func TestCompileRefuses(t *testing.T) {
	bad := "61 * * * *"
	for _, tc := range []struct {
		name string
		mw   *v1.MaintenanceWindow
		want string
	}{
		{"a schedule that does not parse", recurring("w", bad, "1h", "UTC"), "spec.schedule"},
		{"an unknown zone", recurring("w", "0 2 * * *", "1h", "Mars/Olympus"), "spec.schedule"},
		{"to before from", oneOff("w", "2026-11-28T04:00:00Z", "2026-11-28T02:00:00Z"), "must be after"},
		{"neither kind", &v1.MaintenanceWindow{Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Checks: []string{"a"}}}}, "set either"},
		{"a bad selector", &v1.MaintenanceWindow{Spec: v1.MaintenanceWindowSpec{
			CheckSelection: v1.CheckSelection{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}},
			From:           &metav1.Time{Time: ts("2026-11-28T02:00:00Z")}, To: &metav1.Time{Time: ts("2026-11-28T03:00:00Z")}}}, "spec.selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.mw)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Compile error = %v, want one that says %q", err, tc.want)
			}
		})
	}
}

func TestSelects(t *testing.T) {
	check := func(name, tags string, labels map[string]string) *v1.Check {
		return &v1.Check{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: v1.CheckSpec{Tags: tags}}
	}
	span := func(spec v1.MaintenanceWindowSpec) *v1.MaintenanceWindow {
		spec.From, spec.To = &metav1.Time{Time: ts("2026-11-28T02:00:00Z")}, &metav1.Time{Time: ts("2026-11-28T03:00:00Z")}
		return &v1.MaintenanceWindow{Spec: spec}
	}
	for _, tc := range []struct {
		name  string
		spec  v1.MaintenanceWindowSpec
		check *v1.Check
		want  bool
	}{
		{"by name", v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Checks: []string{"backup"}}}, check("backup", "", nil), true},
		{"another name", v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Checks: []string{"backup"}}}, check("import", "", nil), false},
		{"by tag", v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Tags: []string{"db"}}}, check("x", "prod db", nil), true},
		{"a tag is a whole word", v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Tags: []string{"db"}}}, check("x", "dbs prod", nil), false},
		{"by label", v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}}}, check("x", "", map[string]string{"team": "data"}), true},
		{"another label", v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "data"}}}}, check("x", "", map[string]string{"team": "web"}), false},
		{"{} selects every check", v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Selector: &metav1.LabelSelector{}}}, check("x", "", nil), true},
		{"any criterion is enough", v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Tags: []string{"db"}, Checks: []string{"backup"}}}, check("backup", "web", nil), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := compile(t, span(tc.spec)).Selects(tc.check); got != tc.want {
				t.Errorf("Selects = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSetHold(t *testing.T) {
	nightly := compile(t, recurring("nightly", "0 2 * * *", "2h", "UTC"))
	upgrade := compile(t, oneOff("upgrade", "2026-11-28T03:00:00Z", "2026-11-28T06:00:00Z"))
	set := Set{nightly, upgrade}
	for _, tc := range []struct {
		at                string
		name, until, next string
	}{
		{"2026-11-28T01:00:00Z", "", "", "2026-11-28T02:00:00Z"},
		{"2026-11-28T02:30:00Z", "nightly", "2026-11-28T04:00:00Z", ""},
		{"2026-11-28T03:30:00Z", "upgrade", "2026-11-28T06:00:00Z", ""}, // both active: the one that ends last
		{"2026-11-28T05:00:00Z", "upgrade", "2026-11-28T06:00:00Z", ""},
		{"2026-11-28T06:00:00Z", "", "", "2026-11-29T02:00:00Z"},
	} {
		name, until, next := set.Hold(ts(tc.at))
		got := [3]string{name, fmtTime(until), fmtTime(next)}
		if want := [3]string{tc.name, tc.until, tc.next}; got != want {
			t.Errorf("Hold(%s) = %q, want %q", tc.at, got, want)
		}
	}
	if name, until, next := (Set{}).Hold(ts("2026-11-28T01:00:00Z")); name != "" || !until.IsZero() || !next.IsZero() {
		t.Errorf("an empty set holds: %q %v %v", name, until, next)
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func TestSnooze(t *testing.T) {
	c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "backup", UID: "u1"}}
	mw := Snooze(c, ts("2026-11-28T02:00:00Z"), 2*time.Hour)
	w := compile(t, mw)
	if mw.Name != "snooze-backup" || mw.Namespace != "team-a" || mw.Labels[v1.LabelSnooze] != "true" || mw.OwnerReferences[0].UID != "u1" {
		t.Errorf("snooze window = %+v", mw.ObjectMeta)
	}
	if !w.Selects(c) || w.Selects(&v1.Check{ObjectMeta: metav1.ObjectMeta{Name: "other"}}) {
		t.Error("a snooze must cover its check and no other")
	}
	if span, active := w.At(ts("2026-11-28T03:59:59Z")); !active || !span.End.Equal(ts("2026-11-28T04:00:00Z")) {
		t.Errorf("At = %v %v", span, active)
	}
	long := strings.Repeat("a", 253)
	if n := SnoozeName(long); len(n) != 253 || n == SnoozeName(long[:252]+"b") {
		t.Errorf("SnoozeName of a long name = %q (%d bytes)", n, len(n))
	}
}

// FuzzAt: whatever the schedule, an active span holds t and an inactive
// one is wholly after it, and Hold agrees with At.
func FuzzAt(f *testing.F) {
	f.Add("0 2 * * *", int64(7200), int64(1795000000), "UTC")
	f.Add("*/5 * * * *", int64(600), int64(1795000123), "Europe/Berlin")
	f.Add("Sat *-*-* 22:00", int64(14400), int64(1794000000), "America/New_York")
	f.Add("0 3 * * *", int64(3600), int64(1792292400), "Europe/London") // around a DST change
	f.Fuzz(func(t *testing.T, sched string, seconds, unix int64, tz string) {
		if seconds < 60 || seconds > int64(MaxSnooze/time.Second) || unix < 0 || unix > 4102444800 {
			return
		}
		mw := &v1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Spec: v1.MaintenanceWindowSpec{
			CheckSelection: v1.CheckSelection{Checks: []string{"c"}}, Schedule: &sched, Duration: &metav1.Duration{Duration: time.Duration(seconds) * time.Second}, TZ: v1.TimeZone(tz)}}
		w, err := Compile(mw)
		if err != nil {
			return
		}
		at := time.Unix(unix, 0).UTC()
		span, active := w.At(at)
		switch {
		case active && (at.Before(span.Start) || !at.Before(span.End)):
			t.Fatalf("active span %v does not hold %v", span, at)
		case !active && !span.IsZero() && !span.Start.After(at):
			t.Fatalf("next span %v does not start after %v", span, at)
		case !span.IsZero() && !span.Start.Before(span.End):
			t.Fatalf("span %v is empty", span)
		}
		name, until, next := Set{w}.Hold(at)
		if (name != "") != active || (active && !until.Equal(span.End)) || (!active && !next.Equal(span.Start)) {
			t.Fatalf("Hold = %q %v %v, At = %v %v", name, until, next, span, active)
		}
	})
}

// BenchmarkHold: what a ping to a check that two windows cover pays to
// learn whether its notifications are held (a recurring window's schedule
// is read on each call).
//
//	go test ./internal/maintenance -run x -bench Hold
func BenchmarkHold(b *testing.B) {
	nightly, err := Compile(recurring("nightly", "0 2 * * *", "2h", "Europe/Berlin"))
	if err != nil {
		b.Fatal(err)
	}
	upgrade, err := Compile(oneOff("upgrade", "2026-12-01T02:00:00Z", "2026-12-01T04:00:00Z"))
	if err != nil {
		b.Fatal(err)
	}
	set := Set{nightly, upgrade}
	at := ts("2026-11-28T12:00:00Z")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		set.Hold(at.Add(time.Duration(i) * time.Second))
	}
}

// TestAtRemembersOnlyWhatHolds: a window that keeps its last answer gives,
// at every instant, whether it is active, and when its span ends (active)
// or starts (not), as one that works each answer out: with the clock going
// forward by uneven steps across starts and ends, and back.
func TestAtRemembersOnlyWhatHolds(t *testing.T) {
	for _, mw := range []*v1.MaintenanceWindow{
		recurring("nightly", "0 2 * * *", "2h", "Europe/Berlin"),
		recurring("often", "*/10 * * * *", "15m", "UTC"), // instances overlap: merged spans
		recurring("rare", "Mon *-02-29 00:00:00", "1h", "Europe/Riga"),
		oneOff("upgrade", "2026-12-01T02:00:00Z", "2026-12-01T04:00:00Z"),
	} {
		remembering, err := Compile(mw)
		if err != nil {
			t.Fatal(err)
		}
		fresh := func(at time.Time) (Span, bool) {
			w, _ := Compile(mw)
			return w.at(at)
		}
		at := ts("2026-11-30T23:00:00Z")
		for i := range 400 {
			step := time.Duration(7*i%53) * time.Minute
			if i%50 == 49 {
				step = -3 * time.Hour // the clock goes back (a ping's own time)
			}
			at = at.Add(step)
			got, gotActive := remembering.At(at)
			want, wantActive := fresh(at)
			// A span merged from more than maxMerge instances ends where
			// the count stopped, which depends on the instance it was
			// counted from: a remembered one may end sooner (and is
			// continued from there), never later.
			endOK := got.End.Equal(want.End) || (mw.Name == "often" && got.End.After(at) && got.End.Before(want.End))
			if gotActive != wantActive || (wantActive && !endOK) || (!wantActive && got != want) {
				t.Fatalf("%s at %s: remembered %v %v, worked out %v %v", mw.Name, at, got, gotActive, want, wantActive)
			}
		}
	}
}
