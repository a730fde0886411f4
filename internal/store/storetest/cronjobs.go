package storetest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/store"
)

// cronJobTests are the contract of what the CronJob controller keeps of
// each CronJob's suspension: the last seen, per CronJob, forgotten a week
// after.
func cronJobTests(ctx context.Context) map[string]func(t *testing.T, s *store.Store) {
	return map[string]func(t *testing.T, s *store.Store){
		"a CronJob's suspension is the last seen of it, and forgotten a week after": func(t *testing.T, s *store.Store) {
			seen := func(uid types.UID) (store.CronJobSuspension, bool) {
				t.Helper()
				got, ok, err := s.CronJobSuspension(ctx, uid)
				must(t, err)
				return got, ok
			}
			if _, ok := seen("cj-1"); ok {
				t.Fatal("a CronJob never seen suspended has a suspension")
			}
			must(t, s.SeeCronJobSuspension(ctx, "team-a", "cj-1", store.CronJobSuspension{Suspended: true, Until: t0}))
			must(t, s.SeeCronJobSuspension(ctx, "team-b", "cj-2", store.CronJobSuspension{Suspended: true, Until: t0}))
			resumed := store.CronJobSuspension{Suspended: false, Until: t0.Add(35*time.Minute + 1500*time.Nanosecond)}
			must(t, s.SeeCronJobSuspension(ctx, "team-a", "cj-1", resumed))
			if got, ok := seen("cj-1"); !ok || got.Suspended || !got.Until.Equal(t0.Add(35*time.Minute+time.Microsecond)) {
				t.Errorf("after the resume: %+v, %v; want resumed at the microsecond", got, ok)
			}
			if got, ok := seen("cj-2"); !ok || !got.Suspended || !got.Until.Equal(t0) {
				t.Errorf("another CronJob's: %+v, %v", got, ok)
			}
			// A week later, what was seen of the others is forgotten.
			must(t, s.SeeCronJobSuspension(ctx, "team-a", "cj-3", store.CronJobSuspension{Suspended: true, Until: t0.Add(8 * 24 * time.Hour)}))
			for _, uid := range []types.UID{"cj-1", "cj-2"} {
				if got, ok := seen(uid); ok {
					t.Errorf("%s still has %+v a week later", uid, got)
				}
			}
			if _, ok := seen("cj-3"); !ok {
				t.Error("the newest is forgotten")
			}
		},
	}
}
