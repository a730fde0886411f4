package maintenance

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// A snooze does not count against the namespace's window limit; a window
// that only wears the label does.
func TestIsSnooze(t *testing.T) {
	c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "backup", UID: "u1"}}
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	snooze := Snooze(c, now, time.Hour)
	recurring := snooze.DeepCopy()
	schedule := "Mon *-*-* 00:00:00"
	recurring.Spec.Schedule = &schedule
	renamed := snooze.DeepCopy()
	renamed.Name = "free-window"
	wider := snooze.DeepCopy()
	wider.Spec.Tags = []string{"prod"}
	unlabelled := snooze.DeepCopy()
	unlabelled.Labels = nil
	for _, tc := range []struct {
		name string
		mw   *v1.MaintenanceWindow
		want bool
	}{
		{"a snooze", snooze, true},
		{"recurring", recurring, false},
		{"another name", renamed, false},
		{"more checks", wider, false},
		{"no label", unlabelled, false},
	} {
		if got := IsSnooze(tc.mw); got != tc.want {
			t.Errorf("%s: IsSnooze = %v", tc.name, got)
		}
	}
	counted, snoozes := Counted([]v1.MaintenanceWindow{*snooze, *recurring, *renamed})
	if len(counted) != 2 || len(snoozes) != 1 || snoozes[0].Name != snooze.Name {
		t.Errorf("Counted: %d counted, snoozes %v", len(counted), snoozes)
	}
}
