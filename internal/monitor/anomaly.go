package monitor

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vigil-operator/vigil/internal/words"
)

// Duration anomalies learned from each check's own runs. A job that always
// takes 40 minutes and "succeeds" in 4 seconds has usually done nothing;
// one that suddenly takes 3 hours is stuck on something. A fixed
// MinRuntime/MaxRuntime needs someone to know the figures and keep them
// current; the usual range is learned instead, from the durations of the
// check's last successful timed runs, with robust statistics (the median
// and the median absolute deviation), so that one odd run in the history
// does not move it. With Config.Anomaly set, a success that ends a run
// outside the range is a failed run, reason ReasonAnomaly, in the words
// "ran 4 seconds; usually 38 minutes to 45 minutes over its last 30 runs".

// ReasonAnomaly: a success ended a run far outside the check's usual range
// of durations.
const ReasonAnomaly Reason = "anomaly"

// Anomaly is the alert policy's anomaly setting.
type Anomaly struct {
	// Runs is how many of the check's last successful timed runs the
	// usual range is learned from.
	Runs int
	// MinRuns is how many it needs before judging any run.
	MinRuns int
	// Tolerance is how many robust deviations from the median a run may
	// be and still be usual.
	Tolerance float64
}

// Defaults of Anomaly's settings, and the most runs it learns from (the
// CRD's bound as well).
const (
	MaxAnomalyRuns          = 100
	DefaultAnomalyRuns      = 30
	DefaultAnomalyMinRuns   = 10
	DefaultAnomalyTolerance = 5
)

// Usual is a check's usual range of run durations, learned from Runs
// runs; the zero Usual judges nothing.
type Usual struct {
	Low, High time.Duration
	Runs      int
}

// Judges reports whether the range is known (enough runs).
func (u Usual) Judges() bool { return u.Runs > 0 }

// Contains reports whether a run of duration d is usual.
func (u Usual) Contains(d time.Duration) bool {
	return !u.Judges() || (d >= u.Low && d <= u.High)
}

// UsualRange learns the usual range from durations (the last successful
// timed runs, in any order): the median, plus or minus Tolerance robust
// deviations. The deviation is the median absolute deviation scaled to a
// normal distribution's standard deviation (×1.4826), and at least a
// tenth of the median and a second: a job that always took exactly 40
// minutes is not anomalous at 41. Fewer than MinRuns durations judge
// nothing.
func (a Anomaly) UsualRange(durations []time.Duration) Usual {
	n := len(durations)
	if n == 0 || n < max(a.MinRuns, 1) {
		return Usual{}
	}
	sorted := slices.Sorted(slices.Values(durations))
	median := middle(sorted)
	dev := make([]time.Duration, n)
	for i, d := range sorted {
		dev[i] = d - median
		if dev[i] < 0 {
			dev[i] = -dev[i]
		}
	}
	slices.Sort(dev)
	spread := time.Duration(math.Round(1.4826 * float64(middle(dev))))
	spread = max(spread, median/10, time.Second)
	tol := a.Tolerance
	if tol <= 0 {
		tol = DefaultAnomalyTolerance
	}
	width := time.Duration(math.Min(tol*float64(spread), float64(math.MaxInt64/2)))
	return Usual{Low: max(median-width, 0), High: median + width, Runs: n}
}

// middle is the median of sorted durations.
func middle(sorted []time.Duration) time.Duration {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return sorted[n/2-1] + (sorted[n/2]-sorted[n/2-1])/2
}

// anomalyDetail words an anomalous run.
func anomalyDetail(d time.Duration, u Usual) string {
	return fmt.Sprintf("ran %s; usually %s to %s over its last %d runs", words.Duration(d), words.Duration(u.Low), words.Duration(u.High), u.Runs)
}
