package project

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestLimits(t *testing.T) {
	r := NewRegistry()
	big := projectSecret("big", "vigil-project", nil)
	big.Annotations = map[string]string{AnnotationCheckLimit: "500", AnnotationPingLogLimit: " 250 "}
	huge := projectSecret("huge", "vigil-project", nil)
	huge.Annotations = map[string]string{AnnotationPingLogLimit: "100000"}
	junk := projectSecret("junk", "vigil-project", nil)
	junk.Annotations = map[string]string{AnnotationCheckLimit: "lots", AnnotationPingLogLimit: "-5"}
	for _, s := range []*corev1.Secret{big, huge, junk} {
		r.Upsert(s)
	}
	l := &Limits{Registry: r, DefaultCheckLimit: 20, DefaultPingLogLimit: 100}
	for _, tc := range []struct {
		ns               string
		checks, pingLogs int
	}{
		{"big", 500, 250},
		{"huge", 20, MaxPingLogLimit},
		{"junk", 20, 100},
		{"no-project", 20, 100},
	} {
		if got := l.CheckLimit(tc.ns); got != tc.checks {
			t.Errorf("CheckLimit(%q) = %d, want %d", tc.ns, got, tc.checks)
		}
		if got := l.PingLogLimit(tc.ns); got != tc.pingLogs {
			t.Errorf("PingLogLimit(%q) = %d, want %d", tc.ns, got, tc.pingLogs)
		}
	}
}
