package api

import (
	"net/http"
	"time"

	"github.com/vigil-operator/vigil/internal/runstats"
)

// runStats answers GET /checks/<uuid or unique_key>/stats/?window=7d, a
// Vigil extension: how the check's runs behaved over the window (1h to
// 31d, default 7d), and against the window before it. Durations are in
// seconds, rates in [0, 1]; null where there is nothing to say.
func (s *Server) runStats(w http.ResponseWriter, r *request) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	if len(q["window"]) > 1 {
		writeError(w, http.StatusBadRequest, "window: give it once")
		return
	}
	window, err := runstats.ParseWindow(q.Get("window"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	st, err := s.Checks.RunStats(r.Context(), c, window)
	if err != nil {
		s.internalError(w, r, "reading the runs", err)
		return
	}
	o := newObject()
	defer o.release()
	o.str("window", runstats.FormatWindow(window))
	o.time("from", st.From, true)
	o.time("to", st.To, true)
	o.num("runs", int64(st.Runs))
	o.num("successes", int64(st.Succeeded))
	o.num("failures", int64(st.Failed))
	o.num("missed", int64(st.Missed))
	o.add("success_rate", optional(st.SuccessRate, st.HasRate))
	o.num("timed_runs", int64(st.Timed))
	if st.Timed > 0 {
		d := &object{}
		d.add("p50", seconds(st.P50))
		d.add("p95", seconds(st.P95))
		d.add("p99", seconds(st.P99))
		d.add("max", seconds(st.Max))
		o.add("duration", d)
	} else {
		o.add("duration", nil)
	}
	o.time("last_success", st.LastSuccess, true)
	o.flag("partial", st.Partial)
	o.time("held_since", st.HeldSince, st.Partial)
	trend := &object{}
	trend.add("p95_before", optional(seconds(st.Trend.P95Before), st.Trend.HasP95))
	trend.add("p95_change", optional(st.Trend.P95Change, st.Trend.HasP95))
	trend.add("success_rate_before", optional(st.Trend.RateBefore, st.Trend.HasRate))
	if words := st.TrendWords(); words != "" {
		trend.str("summary", words)
	} else {
		trend.add("summary", nil)
	}
	o.add("trend", trend)
	writeRawJSON(w, http.StatusOK, o.bytes())
}

// optional is v, or nil (null) when !ok.
func optional(v float64, ok bool) any {
	if !ok {
		return nil
	}
	return v
}

// seconds is d in seconds, to the millisecond.
func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }
