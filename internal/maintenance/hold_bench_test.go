package maintenance

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// BenchmarkHoldRareWindows is #46's probe: 300 recurring windows of one namespace on
// a schedule that rarely fires (a Monday 29 February, in a zone with
// summer time) cover a check, and each of its pings asks which holds it,
// a second apart. It prints what one ping's question costs.
//
//	go test ./internal/maintenance -run x -bench HoldRareWindows -benchtime 200x
func BenchmarkHoldRareWindows(b *testing.B) {
	schedule := "Mon *-02-29 00:00:00"
	var set Set
	for i := range 300 {
		mw := &v1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rare-%d", i)},
			Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Checks: []string{"backup"}}, Schedule: &schedule, TZ: "Europe/Riga",
				Duration: &metav1.Duration{Duration: time.Hour}}}
		w, err := Compile(mw)
		if err != nil {
			b.Fatal(err)
		}
		set = append(set, w)
	}
	t := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		name, _, next := set.Hold(t.Add(time.Duration(i) * time.Second))
		if name != "" || next.IsZero() {
			b.Fatalf("held by %q, next %v", name, next)
		}
	}
}
