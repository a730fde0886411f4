package project

import (
	"reflect"
	"testing"
)

func TestLimits(t *testing.T) {
	l := &Limits{DefaultCheckLimit: 20, DefaultPingLogLimit: 100}
	problems := l.SetOverrides(map[string]string{
		"big.check-limit":     "500",
		"big.ping-log-limit":  " 250 ",
		"huge.ping-log-limit": "100000",
		"junk.check-limit":    "lots",
		"junk.ping-log-limit": "-5",
		"nodot":               "5",
		"x.max-checks":        "5",
		"big.egress-allow":    "10.1.2.0/24, smtp.mail.svc",
		"junk.egress-allow":   "10.1.2.0/24, http://smtp",
		"egress-allow":        "127.0.0.0/8",
	})
	want := []string{
		`key "egress-allow": want <namespace>.check-limit, <namespace>.ping-log-limit or <namespace>.egress-allow`,
		`key "junk.check-limit": "lots" is not a positive integer`,
		`key "junk.egress-allow": "http://smtp": want CIDRs, IP addresses or host names`,
		`key "junk.ping-log-limit": "-5" is not a positive integer`,
		`key "nodot": want <namespace>.check-limit, <namespace>.ping-log-limit or <namespace>.egress-allow`,
		`key "x.max-checks": want <namespace>.check-limit, <namespace>.ping-log-limit or <namespace>.egress-allow`,
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems = %q, want %q", problems, want)
	}
	for _, tc := range []struct {
		ns               string
		checks, pingLogs int
	}{
		{"big", 500, 250},
		{"huge", 20, MaxPingLogLimit},
		{"junk", 20, 100},
		{"x", 20, 100},
		{"no-project", 20, 100},
	} {
		if got := l.CheckLimit(tc.ns); got != tc.checks {
			t.Errorf("CheckLimit(%q) = %d, want %d", tc.ns, got, tc.checks)
		}
		if got := l.PingLogLimit(tc.ns); got != tc.pingLogs {
			t.Errorf("PingLogLimit(%q) = %d, want %d", tc.ns, got, tc.pingLogs)
		}
	}
	// An allowlist is its namespace's alone; one that does not parse
	// allows nothing.
	for ns, want := range map[string]string{"big": "10.1.2.0/24, smtp.mail.svc", "junk": "", "x": "", "": ""} {
		if got := l.EgressAllow(ns).String(); got != want {
			t.Errorf("EgressAllow(%q) = %q, want %q", ns, got, want)
		}
	}
	// A deleted ConfigMap leaves the defaults.
	l.SetOverrides(nil)
	if got := l.EgressAllow("big").String(); got != "" {
		t.Errorf("after clearing, EgressAllow(big) = %q", got)
	}
	if got := l.CheckLimit("big"); got != 20 {
		t.Errorf("after clearing, CheckLimit(big) = %d, want 20", got)
	}
}
