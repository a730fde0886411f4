package ping

import (
	"testing"

	"github.com/vigil-operator/vigil/internal/monitor"
)

func TestClassify(t *testing.T) {
	kw := Keywords{Start: "STARTING", Success: "SUCCESS, all good ,", Failure: "ERROR,FAIL"}
	for _, tc := range []struct {
		name        string
		texts       []string
		kw          Keywords
		defaultFail bool
		want        monitor.PingKind
	}{
		{"failure wins over success", []string{"SUCCESS with 1 ERROR"}, kw, false, monitor.PingFail},
		{"success", []string{"backup: SUCCESS"}, kw, false, monitor.PingSuccess},
		{"trimmed keyword", []string{"all good here"}, kw, false, monitor.PingSuccess},
		{"start", []string{"STARTING backup"}, kw, false, monitor.PingStart},
		{"success wins over start", []string{"STARTING ... SUCCESS"}, kw, false, monitor.PingSuccess},
		{"case-sensitive", []string{"error"}, kw, false, monitor.PingIgnored},
		{"no keyword, ignored", []string{"hello"}, kw, false, monitor.PingIgnored},
		{"no keyword, default fail", []string{"hello"}, kw, true, monitor.PingFail},
		{"empty lists match nothing", []string{"anything"}, Keywords{Success: " , "}, false, monitor.PingIgnored},
		{"any of several texts", []string{"subject", "body with FAIL"}, kw, false, monitor.PingFail},
		{"no texts", nil, kw, false, monitor.PingIgnored},
	} {
		if got := Classify(tc.texts, tc.kw, tc.defaultFail); got != tc.want {
			t.Errorf("%s: Classify = %s, want %s", tc.name, got, tc.want)
		}
	}
}
