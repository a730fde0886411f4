package checkstate

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

func TestCatchUp(t *testing.T) {
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	at := func(s int) metav1.MicroTime { return metav1.NewMicroTime(t0.Add(time.Duration(s) * time.Second)) }
	cfg := monitor.Config{Timeout: time.Minute, Grace: time.Minute}
	hist := &v1.CheckHistory{LastN: 4, Pings: []v1.PingRecord{
		{N: 1, Type: v1.PingSuccess, Date: at(0)},
		{N: 2, Type: v1.PingStart, Date: at(10), RID: "r1"},
		{N: 3, Type: v1.PingLog, Date: at(20)},
		{N: 4, Type: v1.PingFail, Date: at(30), RID: "r1"},
	}}
	tests := []struct {
		name         string
		seen         int64
		wantLastPing time.Time
		wantFailed   bool
		wantDuration time.Duration
		wantStarted  bool
	}{
		{name: "status has counted everything", seen: 4, wantLastPing: time.Time{}},
		{name: "a status beyond history changes nothing", seen: 9, wantLastPing: time.Time{}},
		{name: "the last ping only", seen: 3, wantLastPing: at(30).Time, wantFailed: true},
		{name: "a start, a log line and its failure", seen: 1, wantLastPing: at(30).Time, wantFailed: true, wantDuration: 20 * time.Second},
		{name: "from nothing", seen: 0, wantLastPing: at(30).Time, wantFailed: true, wantDuration: 20 * time.Second},
		{name: "a start still running", seen: 0, wantLastPing: at(0).Time, wantStarted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := hist
			if tt.wantStarted {
				h = &v1.CheckHistory{LastN: 2, Pings: hist.Pings[:2]}
			}
			f := CatchUp(cfg, monitor.Facts{}, tt.seen, h)
			if !f.LastPing.Equal(tt.wantLastPing) || f.LastPingFailed != tt.wantFailed {
				t.Errorf("last ping %s (failed %v), want %s (failed %v)", f.LastPing, f.LastPingFailed, tt.wantLastPing, tt.wantFailed)
			}
			if f.LastDuration != tt.wantDuration {
				t.Errorf("duration %s, want %s", f.LastDuration, tt.wantDuration)
			}
			if f.Started() != tt.wantStarted {
				t.Errorf("started %v, want %v", f.Started(), tt.wantStarted)
			}
		})
	}
}
