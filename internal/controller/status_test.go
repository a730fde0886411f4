package controller

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// The status write patches what changed, except the first time, when the
// whole status is written: zero values too, which a printer column shows.
func TestStatusPatch(t *testing.T) {
	ready := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonScheduled, Message: "m",
		LastTransitionTime: metav1.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)}
	page := func(gen, checks int32, url string, conds ...metav1.Condition) *v1.StatusPage {
		sp := &v1.StatusPage{}
		sp.Name, sp.Namespace, sp.Generation, sp.ResourceVersion = "p", "team", 2, "7"
		sp.Spec.Title = "T"
		sp.Status.ObservedGeneration, sp.Status.Checks, sp.Status.URL = int64(gen), checks, url
		for _, c := range conds {
			meta.SetStatusCondition(&sp.Status.Conditions, c)
		}
		return sp
	}
	for _, tc := range []struct {
		name          string
		before, after *v1.StatusPage
		want          map[string]any // the patch's status; nil: no status in the patch
	}{
		{"first write: the whole status, zero values included",
			page(0, 0, ""), page(2, 0, "", ready),
			map[string]any{"observedGeneration": 2.0, "checks": 0.0, "conditions": []any{map[string]any{
				"type": "Ready", "status": "True", "reason": "Scheduled", "message": "m", "lastTransitionTime": "2026-12-07T08:00:00Z"}}}},
		{"later: what changed, a zero value too",
			page(2, 5, "https://x", ready), page(2, 0, "https://x", ready),
			map[string]any{"checks": 0.0}},
		{"a field cleared",
			page(2, 5, "https://x", ready), page(2, 5, "", ready),
			map[string]any{"url": nil}},
		{"nothing changed", page(2, 5, "https://x", ready), page(2, 5, "https://x", ready), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := statusPatch(tc.before, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			var patch map[string]any
			if err := json.Unmarshal(b, &patch); err != nil {
				t.Fatal(err)
			}
			for k := range patch {
				if k != "status" {
					t.Errorf("the patch writes %q: %s", k, b)
				}
			}
			got, _ := patch["status"].(map[string]any)
			if tc.want == nil {
				if got != nil {
					t.Errorf("patch %s, want no status", b)
				}
				return
			}
			wantJSON, _ := json.Marshal(tc.want)
			gotJSON, _ := json.Marshal(got)
			if string(wantJSON) != string(gotJSON) {
				t.Errorf("patch's status\n got %s\nwant %s", gotJSON, wantJSON)
			}
		})
	}
}
