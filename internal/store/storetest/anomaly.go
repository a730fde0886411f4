package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// anomalyTest is the contract of runs judged against the check's own usual
// duration (anomaly.go): nothing is judged before MinRuns timed successes;
// then a run far outside the range they make is a failed run, in words
// that give the range, kept across a restart; the range is learned from
// runs the ping log has let go as well as from those it holds.
func anomalyTest(ctx context.Context, t *testing.T, dsn string) {
	tg := simple("anomalous", "ops")
	tg.Config.Timeout, tg.Config.Grace = 24*time.Hour, time.Hour
	tg.Config.Anomaly = &monitor.Anomaly{Runs: 30, MinRuns: 10, Tolerance: 5}
	tg.PingLogLimit = 8 // most runs learned from are in the runs table
	s, err := store.Open(ctx, dsn, store.Options{RunLimit: 100})
	must(t, err)
	defer func() { _ = s.Close() }()
	at := t0
	timed := func(took time.Duration) store.Recorded {
		t.Helper()
		_, err := s.RecordPing(ctx, tg, ping(monitor.PingStart, at))
		must(t, err)
		rec, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, at.Add(took)))
		must(t, err)
		at = at.Add(time.Hour)
		return rec
	}
	// Nine runs of about 40 minutes, then one of 4 s: too few to judge.
	for i := range 9 {
		timed(38*time.Minute + time.Duration(i)*30*time.Second)
	}
	if rec := timed(4 * time.Second); rec.Kind != monitor.PingSuccess || rec.Flip != nil {
		t.Fatalf("the tenth run judged with nine behind it: %+v", rec)
	}
	// The 4 s run is one of ten now; the median stays near 40 minutes.
	for range 5 {
		timed(40 * time.Minute)
	}
	rec := timed(4 * time.Second)
	if rec.Kind != monitor.PingFail || rec.Flip == nil || rec.Flip.Reason != monitor.ReasonAnomaly {
		t.Fatalf("a 4 s run among 40-minute ones: %+v, want a fail with an anomaly flip", rec)
	}
	if d := rec.Flip.Detail; !strings.HasPrefix(d, "ran 4 seconds; usually ") || !strings.HasSuffix(d, " over its last 15 runs") {
		t.Fatalf("detail %q", d)
	}
	must(t, s.Close())
	s, err = store.Open(ctx, dsn, store.Options{RunLimit: 100})
	must(t, err)
	c, _, err := s.Check(ctx, tg.UID)
	must(t, err)
	if c.Facts.State != monitor.StatusDown || c.Facts.FailReason != monitor.ReasonAnomaly || c.Facts.FailDetail != rec.Flip.Detail {
		t.Fatalf("after a restart: %s, %q, %q", c.Facts.State, c.Facts.FailReason, c.Facts.FailDetail)
	}
	// A usual run brings it back up.
	if rec := timed(41 * time.Minute); rec.Flip == nil || !rec.Flip.Up {
		t.Fatalf("a usual run after the anomaly: %+v, want an up flip", rec)
	}
}
