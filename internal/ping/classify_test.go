package ping

import (
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func TestClassify(t *testing.T) {
	kw := Keywords{Start: "STARTING", Success: "SUCCESS, all good ,", Failure: "ERROR,FAIL"}
	for _, tc := range []struct {
		name        string
		texts       []string
		kw          Keywords
		defaultFail bool
		want        v1.PingType
	}{
		{"failure wins over success", []string{"SUCCESS with 1 ERROR"}, kw, false, v1.PingFail},
		{"success", []string{"backup: SUCCESS"}, kw, false, v1.PingSuccess},
		{"trimmed keyword", []string{"all good here"}, kw, false, v1.PingSuccess},
		{"start", []string{"STARTING backup"}, kw, false, v1.PingStart},
		{"success wins over start", []string{"STARTING ... SUCCESS"}, kw, false, v1.PingSuccess},
		{"case-sensitive", []string{"error"}, kw, false, v1.PingIgnored},
		{"no keyword, ignored", []string{"hello"}, kw, false, v1.PingIgnored},
		{"no keyword, default fail", []string{"hello"}, kw, true, v1.PingFail},
		{"empty lists match nothing", []string{"anything"}, Keywords{Success: " , "}, false, v1.PingIgnored},
		{"any of several texts", []string{"subject", "body with FAIL"}, kw, false, v1.PingFail},
		{"no texts", nil, kw, false, v1.PingIgnored},
	} {
		if got := Classify(tc.texts, tc.kw, tc.defaultFail); got != tc.want {
			t.Errorf("%s: Classify = %s, want %s", tc.name, got, tc.want)
		}
	}
}
