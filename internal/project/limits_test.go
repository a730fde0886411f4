package project

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vigil-operator/vigil/internal/egress"
)

func TestLimits(t *testing.T) {
	l := &Limits{DefaultCheckLimit: 20, DefaultPingLogLimit: 100}
	var changed [][]string
	l.OnChange = func(namespaces []string) { changed = append(changed, namespaces) }
	problems := l.SetOverrides(map[string]string{
		"big.check-limit":          "500",
		"big.ping-log-limit":       " 250 ",
		"big.project-secret-limit": "40",
		"big.api-key-limit":        "5000",
		"huge.ping-log-limit":      "100000",
		"junk.check-limit":         "lots",
		"junk.ping-log-limit":      "-5",
		"junk.api-key-limit":       "0",
		"nodot":                    "5",
		"x.max-checks":             "5",
		"big.egress-allow":         "10.1.2.0/24, smtp.mail.svc",
		"junk.egress-allow":        "10.1.2.0/24, http://smtp",
		"egress-allow":             "127.0.0.0/8",
	})
	want := []string{
		`key "egress-allow": want <namespace>.<check-limit|ping-log-limit|body-bytes-limit|project-secret-limit|api-key-limit|egress-allow|channel-limit|maintenance-window-limit|status-page-limit|cronjob-policy-limit>`,
		`key "junk.api-key-limit": "0" is not a positive integer`,
		`key "junk.check-limit": "lots" is not a positive integer`,
		`key "junk.egress-allow": "http://smtp": want CIDRs, IP addresses or host names`,
		`key "junk.ping-log-limit": "-5" is not a positive integer`,
		`key "nodot": want <namespace>.<check-limit|ping-log-limit|body-bytes-limit|project-secret-limit|api-key-limit|egress-allow|channel-limit|maintenance-window-limit|status-page-limit|cronjob-policy-limit>`,
		`key "x.max-checks": want <namespace>.<check-limit|ping-log-limit|body-bytes-limit|project-secret-limit|api-key-limit|egress-allow|channel-limit|maintenance-window-limit|status-page-limit|cronjob-policy-limit>`,
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems = %q, want %q", problems, want)
	}
	if want := [][]string{{"big"}}; !reflect.DeepEqual(changed, want) {
		t.Errorf("OnChange heard %q, want %q: the namespaces whose Secret or key limit changed", changed, want)
	}
	for _, tc := range []struct {
		ns               string
		checks, pingLogs int
		secrets, keys    int
	}{
		{"big", 500, 250, 40, 5000},
		{"huge", 20, MaxPingLogLimit, DefaultSecretLimit, DefaultKeyLimit},
		{"junk", 20, 100, DefaultSecretLimit, DefaultKeyLimit},
		{"x", 20, 100, DefaultSecretLimit, DefaultKeyLimit},
		{"no-project", 20, 100, DefaultSecretLimit, DefaultKeyLimit},
	} {
		if got := l.CheckLimit(tc.ns); got != tc.checks {
			t.Errorf("CheckLimit(%q) = %d, want %d", tc.ns, got, tc.checks)
		}
		if got := l.PingLogLimit(tc.ns); got != tc.pingLogs {
			t.Errorf("PingLogLimit(%q) = %d, want %d", tc.ns, got, tc.pingLogs)
		}
		if got := l.SecretLimit(tc.ns); got != tc.secrets {
			t.Errorf("SecretLimit(%q) = %d, want %d", tc.ns, got, tc.secrets)
		}
		if got := l.KeyLimit(tc.ns); got != tc.keys {
			t.Errorf("KeyLimit(%q) = %d, want %d", tc.ns, got, tc.keys)
		}
	}
	// The manager's flags set the defaults; a nil Limits has the package's.
	flags := &Limits{DefaultSecretLimit: 3, DefaultKeyLimit: 7}
	if flags.SecretLimit("a") != 3 || flags.KeyLimit("a") != 7 {
		t.Errorf("flag defaults: %d secrets, %d keys; want 3, 7", flags.SecretLimit("a"), flags.KeyLimit("a"))
	}
	negative := &Limits{DefaultSecretLimit: -1, DefaultKeyLimit: -1}
	if negative.SecretLimit("a") != DefaultSecretLimit || negative.KeyLimit("a") != DefaultKeyLimit {
		t.Error("a negative flag does not give the defaults")
	}
	var none *Limits
	if none.SecretLimit("a") != DefaultSecretLimit || none.KeyLimit("a") != DefaultKeyLimit {
		t.Error("a nil Limits does not give the defaults")
	}
	if got := none.EgressAllow("a"); !got.Equal(egress.Allowlist{}) {
		t.Errorf("a nil Limits allows %q, want nothing", got)
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
	if got := l.KeyLimit("big"); got != DefaultKeyLimit {
		t.Errorf("after clearing, KeyLimit(big) = %d, want %d", got, DefaultKeyLimit)
	}
}

// A namespace's ping body limit is bytes, written as a number or a
// quantity; anything else leaves the manager's default.
func TestBodyBytesLimit(t *testing.T) {
	l := &Limits{DefaultBodyBytesLimit: 1 << 20}
	problems := l.SetOverrides(map[string]string{
		"bytes.body-bytes-limit": "5000",
		"mi.body-bytes-limit":    " 256Mi ",
		"g.body-bytes-limit":     "2G",
		"zero.body-bytes-limit":  "0",
		"neg.body-bytes-limit":   "-1Ki",
		"junk.body-bytes-limit":  "lots",
	})
	want := []string{
		`key "junk.body-bytes-limit": "lots" is not a positive number of bytes (such as 268435456 or 256Mi)`,
		`key "neg.body-bytes-limit": "-1Ki" is not a positive number of bytes (such as 268435456 or 256Mi)`,
		`key "zero.body-bytes-limit": "0" is not a positive number of bytes (such as 268435456 or 256Mi)`,
	}
	if !reflect.DeepEqual(problems, want) {
		t.Errorf("problems = %q, want %q", problems, want)
	}
	for ns, want := range map[string]int64{"bytes": 5000, "mi": 256 << 20, "g": 2e9, "zero": 1 << 20, "junk": 1 << 20, "other": 1 << 20} {
		if got := l.BodyBytesLimit(ns); got != want {
			t.Errorf("BodyBytesLimit(%q) = %d, want %d", ns, got, want)
		}
	}
	var none *Limits
	if got := none.BodyBytesLimit("a"); got != DefaultBodyBytesLimit {
		t.Errorf("a nil Limits gives %d, want %d", got, DefaultBodyBytesLimit)
	}
	if got := (&Limits{}).BodyBytesLimit("a"); got != DefaultBodyBytesLimit {
		t.Errorf("no flag gives %d, want %d", got, DefaultBodyBytesLimit)
	}
}

// The registry hears of a ConfigMap event only when a project Secret or API
// key limit changed, and of the namespaces whose did: every event (a
// resync, an edit of another limit) used to rebuild every namespace.
func TestLimitsOnChangeOnlyWhenSecretBoundsChange(t *testing.T) {
	l := &Limits{}
	var heard [][]string
	l.OnChange = func(namespaces []string) { heard = append(heard, namespaces) }
	data := map[string]string{"a.api-key-limit": "50", "b.project-secret-limit": "3", "c.check-limit": "5"}
	for _, tc := range []struct {
		name string
		set  map[string]string
		want []string // nil: not called
	}{
		{"first read", data, []string{"a", "b"}},
		{"the same again (a resync)", data, nil},
		{"another limit changes", map[string]string{"a.api-key-limit": "50", "b.project-secret-limit": "3", "c.check-limit": "9",
			"c.egress-allow": "10.0.0.0/8", "d.ping-log-limit": "200"}, nil},
		{"one key limit changes", map[string]string{"a.api-key-limit": "60", "b.project-secret-limit": "3"}, []string{"a"}},
		{"a limit set to what it was by default", map[string]string{"a.api-key-limit": "60", "b.project-secret-limit": "3",
			"e.api-key-limit": "junk"}, nil},
		{"the ConfigMap goes", nil, []string{"a", "b"}},
	} {
		heard = nil
		l.SetOverrides(tc.set)
		var want [][]string
		if tc.want != nil {
			want = [][]string{tc.want}
		}
		if !reflect.DeepEqual(heard, want) {
			t.Errorf("%s: OnChange heard %q, want %q", tc.name, heard, want)
		}
	}
}

func TestObjectLimits(t *testing.T) {
	l := &Limits{DefaultObjects: map[ObjectKind]int{Channels: 30}}
	problems := l.SetOverrides(map[string]string{
		"team-a.channel-limit":            "5",
		"team-a.status-page-limit":        "2",
		"team-b.maintenance-window-limit": "0",
		"team-b.cronjob-policy-limit":     "7",
	})
	if want := []string{`key "team-b.maintenance-window-limit": "0" is not a positive integer`}; !reflect.DeepEqual(problems, want) {
		t.Errorf("problems = %q, want %q", problems, want)
	}
	for _, tc := range []struct {
		ns   string
		kind ObjectKind
		want int
	}{
		{"team-a", Channels, 5},
		{"team-a", StatusPages, 2},
		{"team-a", MaintenanceWindows, DefaultObjectLimits[MaintenanceWindows]},
		{"team-b", Channels, 30}, // the flag's
		{"team-b", MaintenanceWindows, DefaultObjectLimits[MaintenanceWindows]},
		{"team-b", CronJobPolicies, 7},
		{"team-c", StatusPages, DefaultObjectLimits[StatusPages]},
	} {
		if got := l.ObjectLimit(tc.ns, tc.kind); got != tc.want {
			t.Errorf("ObjectLimit(%s, %s) = %d, want %d", tc.ns, tc.kind, got, tc.want)
		}
	}
	var none *Limits
	if got := none.ObjectLimit("x", Channels); got != DefaultObjectLimits[Channels] {
		t.Errorf("nil limits: %d", got)
	}
}

func TestOldestCountFirst(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.NewTime(time.Unix(1_700_000_000+sec, 0)) }
	items := []corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "newest", CreationTimestamp: at(30)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b-same-second", CreationTimestamp: at(10)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "oldest", CreationTimestamp: at(0)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a-same-second", CreationTimestamp: at(10)}},
	}
	var names []string
	for _, o := range Oldest(items, 3) {
		names = append(names, o.Name)
	}
	if want := []string{"oldest", "a-same-second", "b-same-second"}; !reflect.DeepEqual(names, want) {
		t.Errorf("counted %q, want %q", names, want)
	}
	if n := len(Oldest(items, 10)); n != 4 {
		t.Errorf("a limit above the count: %d", n)
	}
	if n := len(Oldest(items, 0)); n != 0 {
		t.Errorf("a limit of 0: %d", n)
	}
}
