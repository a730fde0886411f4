package sla

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/runstats"
	"github.com/vigil-operator/vigil/internal/store"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// hourly is an hourly job's history over the two days before now: each
// run as outcome(i) and duration(i) say, run 0 the newest.
func hourly(n int, failed func(i int) bool, duration func(i int) time.Duration) store.History {
	var h store.History
	for i := n - 1; i >= 0; i-- {
		r := store.Run{N: int64(n - i), Ended: now.Add(-time.Duration(i)*time.Hour - time.Minute), Failed: failed(i)}
		if d := duration(i); d > 0 {
			r.Duration, r.HasDuration = d, true
		}
		h.Runs = append(h.Runs, r)
	}
	return h
}

func never(int) bool { return false }

// untimed: runs without a start signal have no duration.
func untimed(int) time.Duration { return 0 }

// TestJudge holds real histories, summarized as the watcher does, to
// rules: rates at and around the limit, too few runs, a slowdown against
// the day before, and both rules breached.
func TestJudge(t *testing.T) {
	day := 24 * time.Hour
	slower := func(i int) time.Duration { // the last day's runs take 15 min, the day before's 10
		if i < 24 {
			return 15 * time.Minute
		}
		return 10 * time.Minute
	}
	tests := []struct {
		name       string
		rules      Rules
		h          store.History
		judged     bool
		breach     string
		detailHas  []string
		detailNone string
	}{
		{"every run succeeded", Rules{Window: day, MinRate: 0.95}, hourly(48, never, untimed),
			true, "", []string{"success rate 100% over the last day (24 of 24 runs)"}, "below"},
		{"one of 24 failed: 95.8% meets 95%", Rules{Window: day, MinRate: 0.95}, hourly(48, func(i int) bool { return i == 3 }, untimed),
			true, "", []string{"success rate 95.83% over the last day (23 of 24 runs)"}, "below"},
		{"two of 24 failed: 91.7% breaches 95%", Rules{Window: day, MinRate: 0.95}, hourly(48, func(i int) bool { return i == 3 || i == 7 }, untimed),
			true, BreachRate, []string{"success rate 91.67% over the last day (22 of 24 runs), below 95%"}, ""},
		{"failures before the window do not count", Rules{Window: day, MinRate: 0.95}, hourly(48, func(i int) bool { return i >= 24 }, untimed),
			true, "", []string{"100%"}, ""},
		{"four runs are too few to judge a rate", Rules{Window: day, MinRate: 0.95}, hourly(4, func(int) bool { return true }, untimed),
			false, "", nil, ""},
		{"five runs are enough", Rules{Window: day, MinRate: 0.95}, hourly(5, func(i int) bool { return i == 0 }, untimed),
			true, BreachRate, []string{"80%", "(4 of 5 runs)"}, ""},
		{"runs 50% slower breach a 40% limit", Rules{Window: day, MaxIncrease: 0.4}, hourly(48, never, slower),
			true, BreachDuration, []string{"p95 run time 15 minutes, up 50% on the day before (10 minutes), more than the 40% allowed"}, ""},
		{"runs 50% slower meet a 50% limit", Rules{Window: day, MaxIncrease: 0.5}, hourly(48, never, slower),
			true, "", []string{"up 50%"}, "allowed"},
		{"runs without a start are not timed", Rules{Window: day, MaxIncrease: 0.1}, hourly(48, never, untimed),
			false, "", nil, ""},
		{"no window before: no trend to judge", Rules{Window: day, MaxIncrease: 0.1}, hourly(24, never, slower),
			false, "", nil, ""},
		{"both breached: the rate is named, both are told", Rules{Window: day, MinRate: 0.99, MaxIncrease: 0.2},
			hourly(48, func(i int) bool { return i == 1 }, slower),
			true, BreachRate, []string{"below 99%", "more than the 20% allowed"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := runstats.Summarize(tt.h, now, tt.rules.Window)
			v, judged := Judge(tt.rules, st)
			if judged != tt.judged || v.Breach != tt.breach {
				t.Fatalf("judged %v, breach %q (%s); want %v, %q", judged, v.Breach, v.Detail, tt.judged, tt.breach)
			}
			for _, s := range tt.detailHas {
				if !strings.Contains(v.Detail, s) {
					t.Errorf("detail %q lacks %q", v.Detail, s)
				}
			}
			if tt.detailNone != "" && strings.Contains(v.Detail, tt.detailNone) {
				t.Errorf("detail %q says %q", v.Detail, tt.detailNone)
			}
		})
	}
}

// TestCondition: the condition's status follows the verdict, Unknown
// while too few runs say anything.
func TestCondition(t *testing.T) {
	for _, tt := range []struct {
		v      store.SLAVerdict
		judged bool
		status metav1.ConditionStatus
		reason string
	}{
		{store.SLAVerdict{}, false, metav1.ConditionUnknown, v1.ReasonTooFewRuns},
		{store.SLAVerdict{Detail: "success rate 100%"}, true, metav1.ConditionTrue, v1.ReasonWithinSLA},
		{store.SLAVerdict{Breach: BreachDuration, Detail: "p95 up"}, true, metav1.ConditionFalse, v1.ReasonDurationRegressed},
	} {
		c := Condition(tt.v, tt.judged, 3)
		if c.Type != v1.ConditionSLAMet || c.Status != tt.status || c.Reason != tt.reason || c.ObservedGeneration != 3 ||
			!strings.Contains(c.Message, tt.v.Detail) {
			t.Errorf("%+v: condition %+v", tt.v, c)
		}
	}
}

// TestRulesOf reads specs as the API server lets them through, and
// refuses what got past it.
func TestRulesOf(t *testing.T) {
	d := func(s string) *metav1.Duration {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return &metav1.Duration{Duration: v}
	}
	for _, tt := range []struct {
		spec v1.CheckSLA
		want Rules
		err  string
	}{
		{v1.CheckSLA{MinSuccessRate: "99.5"}, Rules{Window: runstats.Week, MinRate: 0.995}, ""},
		{v1.CheckSLA{Window: d("24h"), MaxDurationIncrease: 50}, Rules{Window: 24 * time.Hour, MaxIncrease: 0.5}, ""},
		{v1.CheckSLA{MinSuccessRate: "100", MaxDurationIncrease: 10000}, Rules{Window: runstats.Week, MinRate: 1, MaxIncrease: 100}, ""},
		{v1.CheckSLA{MinSuccessRate: "101"}, Rules{}, "minSuccessRate"},
		{v1.CheckSLA{MinSuccessRate: "NaN"}, Rules{}, "minSuccessRate"},
		{v1.CheckSLA{MinSuccessRate: "0"}, Rules{}, "minSuccessRate"},
		{v1.CheckSLA{Window: d("30m"), MinSuccessRate: "90"}, Rules{}, "window"},
		{v1.CheckSLA{Window: d("745h"), MinSuccessRate: "90"}, Rules{}, "window"},
		{v1.CheckSLA{MaxDurationIncrease: -5}, Rules{}, "maxDurationIncrease"},
	} {
		got, err := RulesOf(&tt.spec)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%+v: error %v, want one about %s", tt.spec, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("%+v: %+v, %v; want %+v", tt.spec, got, err, tt.want)
		}
	}
}

// FuzzRulesOf: whatever the spec says, RulesOf either refuses it or gives
// rules the judge can use.
func FuzzRulesOf(f *testing.F) {
	for _, s := range []string{"95", "99.5", "100", "0", "-1", "1e2", "NaN", "Inf", ""} {
		f.Add(s, int32(50), int64(time.Hour))
	}
	f.Fuzz(func(t *testing.T, rate string, increase int32, window int64) {
		spec := v1.CheckSLA{MinSuccessRate: rate, MaxDurationIncrease: increase, Window: &metav1.Duration{Duration: time.Duration(window)}}
		r, err := RulesOf(&spec)
		if err != nil {
			return
		}
		if r.MinRate < 0 || r.MinRate > 1 || r.MaxIncrease < 0 || r.Window < time.Hour || r.Window > runstats.MaxWindow {
			t.Fatalf("%+v gave %+v", spec, r)
		}
	})
}

// TestDescribe: the check's page says the rules in words.
func TestDescribe(t *testing.T) {
	for r, want := range map[Rules]string{
		{Window: runstats.Month, MinRate: 0.95, MaxIncrease: 0.5}: "SLA over the last 30 days: at least 95% of runs succeed; p95 run time at most 50% above the 30 days before.",
		{Window: runstats.Day, MinRate: 0.995}:                    "SLA over the last day: at least 99.5% of runs succeed.",
		{Window: 12 * time.Hour, MaxIncrease: 2}:                  "SLA over the last 12 hours: p95 run time at most 200% above the 12 hours before.",
	} {
		if got := r.Describe(); got != want {
			t.Errorf("%+v: %q, want %q", r, got, want)
		}
	}
}
