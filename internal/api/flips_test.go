package api

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func TestWithPendingFlip(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	micro := func(t time.Time) *metav1.MicroTime { m := metav1.NewMicroTime(t); return &m }
	timeout := int64(3600)
	spec := v1.CheckSpec{Timeout: &timeout, Grace: 60, TZ: "UTC"}
	upThenFail := v1.CheckStatus{State: v1.CheckStateUp, StateSince: micro(t0), LastPing: micro(t0.Add(time.Minute)), LastPingType: v1.PingFail, NPings: 2}
	recorded := []v1.FlipRecord{{Flip: v1.Flip{Time: *micro(t0.Add(time.Minute)), Up: false}}}

	tests := []struct {
		name   string
		status v1.CheckStatus
		flips  []v1.FlipRecord
		want   []bool // the up values listed, oldest first
	}{
		{"a fail ping the controller has not seen yet", upThenFail, nil, []bool{false}},
		{"the same flip once recorded is not listed twice", upThenFail, recorded, []bool{false}},
		{"nothing due", v1.CheckStatus{State: v1.CheckStateUp, StateSince: micro(t0), LastPing: micro(t0), NPings: 1}, nil, nil},
		{"a new check never flips", v1.CheckStatus{}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &v1.Check{Spec: spec, Status: tt.status}
			got := withPendingFlip(c, tt.flips, t0.Add(2*time.Minute))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d flips %+v, want %v", len(got), got, tt.want)
			}
			for i := range got {
				if got[i].Up != tt.want[i] {
					t.Errorf("flip %d up=%v, want %v", i, got[i].Up, tt.want[i])
				}
			}
		})
	}
}
