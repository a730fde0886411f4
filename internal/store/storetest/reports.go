package storetest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/store"
)

// reportTests are the contract of the reports' record: each Channel's
// report for a period is owed until sent, and a failed attempt waits.
func reportTests(ctx context.Context) map[string]func(t *testing.T, s *store.Store) {
	return map[string]func(t *testing.T, s *store.Store){
		"a report is owed until sent, waits after a failure, and is never owed again once sent": func(t *testing.T, s *store.Store) {
			k := store.ReportKey{Namespace: "team-a", Channel: "weekly", Period: "2026-W47"}
			other := store.ReportKey{Namespace: "team-b", Channel: "weekly", Period: "2026-W47"}
			owed := func(k store.ReportKey, at time.Time) bool {
				t.Helper()
				ok, err := s.ReportOwed(ctx, k, at)
				must(t, err)
				return ok
			}
			if !owed(k, t0) {
				t.Fatal("a report never tried is not owed")
			}
			var tries []int
			retry := func(attempts int) time.Duration {
				tries = append(tries, attempts)
				return time.Duration(attempts) * time.Minute
			}
			// A long error is kept bounded.
			must(t, s.ReportFailed(ctx, k, t0, retry, errors.New(strings.Repeat("x", 5000))))
			if owed(k, t0.Add(59*time.Second)) || !owed(k, t0.Add(time.Minute)) {
				t.Error("after a failure, the report waits its first backoff, and no longer")
			}
			must(t, s.ReportFailed(ctx, k, t0.Add(time.Minute), retry, errors.New("451 try again later")))
			if owed(k, t0.Add(2*time.Minute)) || !owed(k, t0.Add(3*time.Minute)) {
				t.Error("after a second failure, the report waits the second backoff")
			}
			if len(tries) != 2 || tries[0] != 1 || tries[1] != 2 {
				t.Errorf("backoffs asked for attempts %v, want [1 2]", tries)
			}
			if !owed(other, t0) {
				t.Error("another project's report is its own")
			}
			must(t, s.ReportSent(ctx, k, t0.Add(3*time.Minute)))
			for _, at := range []time.Time{t0.Add(3 * time.Minute), t0.Add(24 * time.Hour)} {
				if owed(k, at) {
					t.Errorf("owed at %v once sent", at)
				}
			}
			// Sent rows are forgotten a long time later, with the periods
			// long past: the next period is owed.
			must(t, s.ReportSent(ctx, other, t0.Add(500*24*time.Hour)))
			if !owed(store.ReportKey{Namespace: "team-a", Channel: "weekly", Period: "2026-W48"}, t0) {
				t.Error("the next period is not owed")
			}
		},
	}
}
