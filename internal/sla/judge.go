// Package sla holds checks' runs to their SLAs (spec.sla): a minimum
// success rate and a limit on how much slower they may get, over a
// rolling window. The leader judges them every few minutes from the ping
// store's runs (Watcher); the store tells the Channels of a breach and of
// its end, once each; the projector shows the SLAMet condition.
package sla

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/runstats"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/words"
)

// DefaultWindow is the window an SLA that names none is judged over.
const DefaultWindow = runstats.Week

// MinRuns is how many runs (ended or missed) the window needs before its
// success rate is judged: a new check's first failure says little of its
// rate. The duration rule needs runstats.MinTrendRuns timed runs in each
// window.
const MinRuns = 5

// Rules are an SLA, read from its spec.
type Rules struct {
	Window time.Duration
	// MinRate is the least success rate, in (0, 1]; 0: no such rule.
	MinRate float64
	// MaxIncrease is how much the p95 duration may grow (0.5: by half);
	// 0: no such rule.
	MaxIncrease float64
}

// RulesOf reads a check's SLA. The API server has validated it; an error
// is a spec that bypassed validation.
func RulesOf(s *v1.CheckSLA) (Rules, error) {
	r := Rules{Window: DefaultWindow, MaxIncrease: float64(s.MaxDurationIncrease) / 100}
	if s.Window != nil {
		r.Window = s.Window.Duration
	}
	if r.Window < time.Hour || r.Window > runstats.MaxWindow {
		return Rules{}, fmt.Errorf("sla.window %s: want 1h to 744h", r.Window)
	}
	if s.MinSuccessRate != "" {
		pct, err := strconv.ParseFloat(s.MinSuccessRate, 64)
		if err != nil || pct <= 0 || pct > 100 || math.IsNaN(pct) {
			return Rules{}, fmt.Errorf("sla.minSuccessRate %q: want a percentage above 0, at most 100", s.MinSuccessRate)
		}
		r.MinRate = pct / 100
	}
	if r.MaxIncrease < 0 {
		return Rules{}, fmt.Errorf("sla.maxDurationIncrease %d: want a positive percentage", s.MaxDurationIncrease)
	}
	return r, nil
}

// The rules a verdict names when the runs breach them: the SLAMet
// condition's reasons.
const (
	BreachRate     = v1.ReasonSuccessRateLow
	BreachDuration = v1.ReasonDurationRegressed
)

// Judge holds a window's run statistics to the rules. judged is false
// when the window holds too few runs for any rule to say. A low success
// rate is named before a slowdown when both are breached; Detail gives
// the figures of every rule judged.
func Judge(r Rules, st runstats.Stats) (v store.SLAVerdict, judged bool) {
	window := runstats.WindowWords(r.Window)
	var said []string
	if r.MinRate > 0 && st.HasRate && st.Runs+st.Missed >= MinRuns {
		judged = true
		rate := fmt.Sprintf("success rate %s over the last %s (%d of %d runs)", words.Percent(st.SuccessRate), window, st.Succeeded, st.Runs+st.Missed)
		if st.SuccessRate < r.MinRate {
			v.Breach = BreachRate
			rate += ", below " + words.Percent(r.MinRate)
		}
		said = append(said, rate)
	}
	if r.MaxIncrease > 0 && st.Trend.HasP95 {
		judged = true
		change := st.Trend.P95Change
		dir := "up"
		if change < 0 {
			dir = "down"
		}
		p95 := fmt.Sprintf("p95 run time %s, %s %s on the %s before (%s)", words.Duration(st.P95), dir,
			words.Percent(math.Abs(change)), window, words.Duration(st.Trend.P95Before))
		if change > r.MaxIncrease {
			if v.Breach == "" {
				v.Breach = BreachDuration
			}
			p95 += ", more than the " + words.Percent(r.MaxIncrease) + " allowed"
		}
		said = append(said, p95)
	}
	v.Detail = strings.Join(said, "; ")
	return v, judged
}

// Condition is the SLAMet condition of a verdict on the spec of
// generation gen.
func Condition(v store.SLAVerdict, judged bool, gen int64) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionSLAMet, ObservedGeneration: gen}
	switch {
	case !judged:
		c.Status, c.Reason = metav1.ConditionUnknown, v1.ReasonTooFewRuns
		c.Message = "Too few runs in the window to judge the SLA yet"
	case v.Breach == "":
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1.ReasonWithinSLA, "The runs meet the SLA: "+v.Detail
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v.Breach, "The runs breach the SLA: "+v.Detail
	}
	return c
}

// Describe says the rules as the check's page shows them: "Over the last
// 30 days: at least 95% of runs succeed; p95 run time at most 50% above
// the 30 days before."
func (r Rules) Describe() string {
	window := runstats.WindowWords(r.Window)
	var rules []string
	if r.MinRate > 0 {
		rules = append(rules, "at least "+words.Percent(r.MinRate)+" of runs succeed")
	}
	if r.MaxIncrease > 0 {
		rules = append(rules, "p95 run time at most "+words.Percent(r.MaxIncrease)+" above the "+window+" before")
	}
	return "SLA over the last " + window + ": " + strings.Join(rules, "; ") + "."
}
