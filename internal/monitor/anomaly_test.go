package monitor_test

import (
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

func minutes(ms ...float64) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, x := range ms {
		out[i] = time.Duration(x * float64(time.Minute))
	}
	return out
}

// TestUsualRange: the usual range is the median plus or minus Tolerance
// robust deviations, learned only from enough runs, unmoved by one odd
// run, and never narrower than a tenth of the median or a second.
func TestUsualRange(t *testing.T) {
	a := monitor.Anomaly{Runs: 30, MinRuns: 5, Tolerance: 3}
	tests := []struct {
		name      string
		durations []time.Duration
		low, high time.Duration // 0, 0: judges nothing
	}{
		{"too few runs judge nothing", minutes(40, 41, 39, 40), 0, 0},
		{"identical runs: a tenth of the median either way, times the tolerance", minutes(40, 40, 40, 40, 40), 28 * m, 52 * m},
		{"spread runs: MAD×1.4826", minutes(30, 35, 40, 45, 50),
			40*m - 3*time.Duration(1.4826*float64(5*m)), 40*m + 3*time.Duration(1.4826*float64(5*m))},
		{"one odd run does not move it", minutes(40, 40, 40, 40, 40, 400), 28 * m, 52 * m},
		{"an even count takes the middle two, for the median and the deviation", minutes(60, 38, 42, 50, 39, 41),
			41*m + 30*time.Second - 3*time.Duration(1.4826*float64(3*m)), 41*m + 30*time.Second + 3*time.Duration(1.4826*float64(3*m))},
		{"seconds-long jobs: at least a second of spread", []time.Duration{2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second, 2 * time.Second},
			0, 5 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := a.UsualRange(tt.durations)
			if tt.low == 0 && tt.high == 0 {
				if u.Judges() {
					t.Fatalf("UsualRange = %+v, want none", u)
				}
				return
			}
			if (u.Low-tt.low).Abs() > time.Millisecond || (u.High-tt.high).Abs() > time.Millisecond || u.Runs != len(tt.durations) {
				t.Fatalf("UsualRange = %s..%s over %d, want %s..%s over %d", u.Low, u.High, u.Runs, tt.low, tt.high, len(tt.durations))
			}
		})
	}
}

// TestAnomaly: with the anomaly setting, a success that ends a run outside
// the usual range is a failed run, in its words; inside, or without a
// range yet, or without the setting, it is a success.
func TestAnomaly(t *testing.T) {
	usual := monitor.Usual{Low: 38 * m, High: 45 * m, Runs: 30}
	on := simple
	on.Anomaly = &monitor.Anomaly{Runs: 30, MinRuns: 10, Tolerance: 5}
	three := on
	three.FailureThreshold = 3
	run := func(c monitor.Config, u monitor.Usual, took time.Duration) (monitor.Facts, monitor.PingResult, *monitor.Flip) {
		f, _ := run(t, c, success(0), start(h))
		f, res := c.RecordPing(f, monitor.Ping{Kind: monitor.PingSuccess, At: at(h + took), Usual: u})
		f, flip := c.Observe(f, at(h+took))
		return f, res, flip
	}
	tests := []struct {
		name   string
		cfg    monitor.Config
		usual  monitor.Usual
		took   time.Duration
		kind   monitor.PingKind
		detail string // the down flip's; "" for none
		status monitor.Status
	}{
		{"a run in its usual range", on, usual, 40 * m, monitor.PingSuccess, "", monitor.StatusUp},
		{"a run far too short", on, usual, 4 * time.Second, monitor.PingFail,
			"ran 4 seconds; usually 38 minutes to 45 minutes over its last 30 runs", monitor.StatusDown},
		{"a run far too long", on, usual, 3 * h, monitor.PingFail,
			"ran 3 hours; usually 38 minutes to 45 minutes over its last 30 runs", monitor.StatusDown},
		{"no usual range yet: nothing judged", on, monitor.Usual{}, 4 * time.Second, monitor.PingSuccess, "", monitor.StatusUp},
		{"without the setting, a range judges nothing", simple, usual, 4 * time.Second, monitor.PingSuccess, "", monitor.StatusUp},
		{"below the failure threshold: counted, still up", three, usual, 4 * time.Second, monitor.PingFail, "", monitor.StatusUp},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, res, flip := run(tt.cfg, tt.usual, tt.took)
			if res.Kind != tt.kind {
				t.Errorf("logged as %s, want %s", res.Kind, tt.kind)
			}
			if st := tt.cfg.Status(f, at(h+tt.took)); st != tt.status {
				t.Errorf("status %s, want %s", st, tt.status)
			}
			switch {
			case tt.detail == "" && flip != nil:
				t.Errorf("flip %+v, want none", flip)
			case tt.detail != "" && (flip == nil || flip.Reason != monitor.ReasonAnomaly || flip.Detail != tt.detail):
				t.Errorf("flip %+v, want an anomaly: %q", flip, tt.detail)
			}
		})
	}
	// A usual run after an anomaly clears its words with the count.
	f, _, _ := run(on, usual, 4*time.Second)
	f, _ = on.RecordPing(f, monitor.Ping{Kind: monitor.PingStart, At: at(3 * h)})
	f, _ = on.RecordPing(f, monitor.Ping{Kind: monitor.PingSuccess, At: at(3*h + 40*m), Usual: usual})
	if f.FailReason != "" || f.FailDetail != "" {
		t.Errorf("after a usual run: reason %q, detail %q", f.FailReason, f.FailDetail)
	}
}
