package history

import (
	"bytes"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func pings(n int, bodySize int) []v1.PingRecord {
	out := make([]v1.PingRecord, n)
	for i := range out {
		out[i] = v1.PingRecord{N: int64(i + 1), Type: v1.PingSuccess}
		if bodySize > 0 {
			out[i].Body = bytes.Repeat([]byte{'x'}, bodySize)
		}
	}
	return out
}

func TestTrimPings(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		pings       []v1.PingRecord
		lim         Limits
		wantN       []int64 // serials kept, oldest first
		wantBodies  int     // pings that still have a body
		wantDropped int
	}{
		{"under the limit", pings(3, 0), Limits{PingLog: 100, BodyBytes: 1000}, []int64{1, 2, 3}, 0, 0},
		{"over the limit keeps the newest", pings(5, 0), Limits{PingLog: 3, BodyBytes: 1000}, []int64{3, 4, 5}, 0, 0},
		{"bodies within budget", pings(4, 10), Limits{PingLog: 10, BodyBytes: 40}, []int64{1, 2, 3, 4}, 4, 0},
		{"oldest bodies dropped first", pings(4, 10), Limits{PingLog: 10, BodyBytes: 25}, []int64{1, 2, 3, 4}, 2, 2},
		{"a body larger than the budget is dropped", pings(1, 50), Limits{PingLog: 10, BodyBytes: 40}, []int64{1}, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &v1.CheckHistory{Pings: tc.pings}
			Trim(h, tc.lim, now)
			var got []int64
			bodies, dropped := 0, 0
			for _, p := range h.Pings {
				got = append(got, p.N)
				if len(p.Body) > 0 {
					bodies++
				}
				if p.BodyDropped {
					dropped++
				}
			}
			if len(got) != len(tc.wantN) {
				t.Fatalf("kept %v, want %v", got, tc.wantN)
			}
			for i := range got {
				if got[i] != tc.wantN[i] {
					t.Fatalf("kept %v, want %v", got, tc.wantN)
				}
			}
			if bodies != tc.wantBodies || dropped != tc.wantDropped {
				t.Errorf("bodies kept %d dropped %d, want %d and %d", bodies, dropped, tc.wantBodies, tc.wantDropped)
			}
			// The newest bodies are the ones kept.
			for i := len(h.Pings) - 1; i >= len(h.Pings)-tc.wantBodies; i-- {
				if len(h.Pings[i].Body) == 0 {
					t.Errorf("ping %d lost its body while an older one kept it", h.Pings[i].N)
				}
			}
		})
	}
}

func TestTrimFlips(t *testing.T) {
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	flip := func(age time.Duration, pending bool) v1.FlipRecord {
		f := v1.FlipRecord{Flip: v1.Flip{Time: metav1.NewMicroTime(now.Add(-age))}}
		if pending {
			f.Deliveries = []v1.FlipDelivery{{Channel: "c", State: v1.DeliveryPending}}
		}
		return f
	}
	day := 24 * time.Hour
	lim := Limits{PingLog: 10, FlipAge: 90 * day, FlipCount: 2, MaxFlips: 4}
	for _, tc := range []struct {
		name  string
		flips []v1.FlipRecord
		want  int
	}{
		{"young flips are kept", []v1.FlipRecord{flip(3*day, false), flip(2*day, false), flip(day, false)}, 3},
		{"old flips beyond the newest count go", []v1.FlipRecord{flip(200*day, false), flip(150*day, false), flip(100*day, false), flip(1*day, false)}, 2},
		{"the newest count is kept even when old", []v1.FlipRecord{flip(300*day, false), flip(200*day, false)}, 2},
		{"never more than MaxFlips", []v1.FlipRecord{flip(6*day, false), flip(5*day, false), flip(4*day, false), flip(3*day, false), flip(2*day, false), flip(day, false)}, 4},
		{"a flip owing notifications is always kept", []v1.FlipRecord{flip(400*day, true), flip(300*day, false), flip(200*day, false), flip(day, false)}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &v1.CheckHistory{Flips: tc.flips}
			Trim(h, lim, now)
			if len(h.Flips) != tc.want {
				t.Fatalf("kept %d flips, want %d", len(h.Flips), tc.want)
			}
			for i := 1; i < len(h.Flips); i++ {
				if h.Flips[i].Time.Before(&h.Flips[i-1].Time) {
					t.Fatal("flips are no longer oldest first")
				}
			}
		})
	}
}

func TestPendingLabel(t *testing.T) {
	h := &v1.CheckHistory{Flips: []v1.FlipRecord{{Deliveries: []v1.FlipDelivery{{Channel: "a", State: v1.DeliveryPending}}}}}
	setPendingLabel(h)
	if h.Labels[PendingLabel] != "true" {
		t.Fatal("a pending delivery must label the history")
	}
	h.Flips[0].Deliveries[0].State = v1.DeliveryDelivered
	setPendingLabel(h)
	if _, ok := h.Labels[PendingLabel]; ok {
		t.Fatal("the label must go once nothing is pending")
	}
}
