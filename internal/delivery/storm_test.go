package delivery

import (
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/store"
)

// TestPlanStorm is storm control's rule in a table: alone below the
// threshold; in a storm, wait until the oldest pending has waited the
// gather time, then all together (alone, if it is the only one).
func TestPlanStorm(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	o := Options{StormThreshold: 10, StormWindow: time.Minute, StormGather: 10 * time.Second}
	pending := func(ages ...time.Duration) []store.Delivery {
		var out []store.Delivery
		for _, a := range ages {
			out = append(out, store.Delivery{Queued: t0.Add(-a)})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		recent  int
		members []store.Delivery
		want    stormPlan
		sendAt  time.Time
	}{
		{"no storm", 9, pending(time.Second, 0), sendAlone, time.Time{}},
		{"a storm begins: the group waits", 10, pending(time.Second, 0), waitForGroup, t0.Add(9 * time.Second)},
		{"the oldest has waited: all go", 10, pending(10*time.Second, 5*time.Second, 0), sendGroup, time.Time{}},
		{"long past its time (a restart): all go", 50, pending(time.Hour, 0), sendGroup, time.Time{}},
		{"a storm, one pending that waited: alone", 10, pending(11 * time.Second), sendAlone, time.Time{}},
		{"a storm, one pending that has not: it waits", 10, pending(0), waitForGroup, t0.Add(10 * time.Second)},
		{"a storm, none pending (sent meanwhile)", 10, nil, sendAlone, time.Time{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, sendAt := planStorm(o, tc.recent, tc.members, t0)
			if plan != tc.want || !sendAt.Equal(tc.sendAt) {
				t.Errorf("planStorm = %d at %v, want %d at %v", plan, sendAt, tc.want, tc.sendAt)
			}
		})
	}
}
