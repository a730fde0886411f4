package coverage

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func mustNamespaced(t *testing.T, name string, sel *metav1.LabelSelector, d v1.CronJobDefaults) Policy {
	t.Helper()
	p, err := Namespaced(&v1.CronJobPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name},
		Spec: v1.CronJobPolicySpec{Selector: sel, CronJobDefaults: d}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustCluster(t *testing.T, name string, ns metav1.LabelSelector, d v1.CronJobDefaults) Policy {
	t.Helper()
	p, err := Cluster(&v1.ClusterCronJobPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.ClusterCronJobPolicySpec{NamespaceSelector: ns, CronJobDefaults: d}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func dur(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

func TestDecide(t *testing.T) {
	batch := &metav1.LabelSelector{MatchLabels: map[string]string{"kind": "batch"}}
	all := mustNamespaced(t, "all", nil, v1.CronJobDefaults{Grace: dur(10 * time.Minute), Channels: []string{"ops"}, Tags: " nightly  prod "})
	onlyBatch := mustNamespaced(t, "batch", batch, v1.CronJobDefaults{Grace: dur(5 * time.Minute),
		AlertPolicy: v1.AlertPolicy{FailureThreshold: 3, MaxRuntime: dur(time.Hour)}})
	zBatch := mustNamespaced(t, "z-batch", batch, v1.CronJobDefaults{})
	platform := mustCluster(t, "platform", metav1.LabelSelector{MatchLabels: map[string]string{"vigil": "on"}},
		v1.CronJobDefaults{Channels: []string{"*"}, MaxSuspended: dur(24 * time.Hour)})
	another := mustCluster(t, "another", metav1.LabelSelector{}, v1.CronJobDefaults{})

	onNS := map[string]string{"vigil": "on"}
	tests := []struct {
		name               string
		cj                 CronJob
		namespaced         []Policy
		cluster            []Policy
		covered            bool
		policy             string
		also               []string
		grace              time.Duration
		channels           []string
		tags               string
		maxSuspended       time.Duration
		policyF, annotated []string
	}{
		{name: "nothing covers a plain CronJob", cj: CronJob{Namespace: "team", Name: "a"}},
		{name: "the annotation alone, as before policies", covered: true, grace: 10 * time.Minute,
			cj:        CronJob{Namespace: "team", Name: "a", Annotations: map[string]string{AnnotationCheck: "true", AnnotationGrace: "600"}},
			annotated: []string{"grace"}},
		{name: "a policy for every CronJob", namespaced: []Policy{all}, covered: true, policy: "CronJobPolicy/all",
			cj:    CronJob{Namespace: "team", Name: "a"},
			grace: 10 * time.Minute, channels: []string{"ops"}, tags: "nightly prod", policyF: []string{"grace", "channels", "tags"}},
		{name: "opted out", namespaced: []Policy{all}, cluster: []Policy{another},
			cj: CronJob{Namespace: "team", Name: "a", Annotations: map[string]string{AnnotationCheck: "false"}}},
		{name: "a policy in another namespace does not reach", namespaced: []Policy{all},
			cj: CronJob{Namespace: "other", Name: "a"}},
		{name: "a selector that does not match", namespaced: []Policy{onlyBatch},
			cj: CronJob{Namespace: "team", Name: "a", Labels: map[string]string{"kind": "web"}}},
		{name: "annotations win field by field", namespaced: []Policy{all}, covered: true, policy: "CronJobPolicy/all",
			cj:    CronJob{Namespace: "team", Name: "a", Annotations: map[string]string{AnnotationChannels: "pager, ops", AnnotationGrace: "2m"}},
			grace: 2 * time.Minute, channels: []string{"pager", "ops"}, tags: "nightly prod",
			policyF: []string{"tags"}, annotated: []string{"grace", "channels"}},
		{name: "two of one level: the first by name, the other named", namespaced: []Policy{zBatch, all, onlyBatch},
			cj:      CronJob{Namespace: "team", Name: "a", Labels: map[string]string{"kind": "batch"}},
			covered: true, policy: "CronJobPolicy/all", also: []string{"CronJobPolicy/batch", "CronJobPolicy/z-batch"},
			grace: 10 * time.Minute, channels: []string{"ops"}, tags: "nightly prod", policyF: []string{"grace", "channels", "tags"}},
		{name: "alert-policy fields", namespaced: []Policy{onlyBatch}, covered: true, policy: "CronJobPolicy/batch",
			cj:    CronJob{Namespace: "team", Name: "a", Labels: map[string]string{"kind": "batch"}},
			grace: 5 * time.Minute, policyF: []string{"grace", "failureThreshold", "maxRuntime"}},
		{name: "a cluster policy covers a labelled namespace", cluster: []Policy{platform}, covered: true, policy: "ClusterCronJobPolicy/platform",
			cj:    CronJob{Namespace: "team", Name: "a", NamespaceLabels: onNS},
			grace: time.Hour, channels: []string{"*"}, maxSuspended: 24 * time.Hour, policyF: []string{"channels", "maxSuspended"}},
		{name: "and not an unlabelled one", cluster: []Policy{platform}, cj: CronJob{Namespace: "team", Name: "a"}},
		{name: "a namespace's own policy wins over the cluster's", namespaced: []Policy{all}, cluster: []Policy{platform, another},
			cj: CronJob{Namespace: "team", Name: "a", NamespaceLabels: onNS}, covered: true, policy: "CronJobPolicy/all",
			grace: 10 * time.Minute, channels: []string{"ops"}, tags: "nightly prod", policyF: []string{"grace", "channels", "tags"}},
		{name: "two cluster policies", cluster: []Policy{platform, another},
			cj: CronJob{Namespace: "team", Name: "a", NamespaceLabels: onNS}, covered: true, policy: "ClusterCronJobPolicy/another",
			also: []string{"ClusterCronJobPolicy/platform"}, grace: time.Hour},
		{name: "the max-suspended annotation", covered: true, grace: time.Hour, maxSuspended: 90 * time.Minute,
			cj:        CronJob{Namespace: "team", Name: "a", Annotations: map[string]string{AnnotationCheck: "true", AnnotationMaxSuspended: "90m"}},
			annotated: []string{"maxSuspended"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.cj, tt.namespaced, tt.cluster)
			if d.Covered != tt.covered {
				t.Fatalf("covered %v, want %v", d.Covered, tt.covered)
			}
			policy := ""
			if d.Policy != nil {
				policy = d.Policy.Ref()
			}
			s := d.Settings
			if policy != tt.policy || !slices.Equal(d.AlsoSelectedBy, tt.also) {
				t.Errorf("policy %q also %v, want %q %v", policy, d.AlsoSelectedBy, tt.policy, tt.also)
			}
			if !tt.covered {
				return
			}
			if s.Grace != tt.grace || !slices.Equal(s.Channels, tt.channels) || s.Tags != tt.tags || s.MaxSuspended != tt.maxSuspended {
				t.Errorf("settings grace %v channels %v tags %q maxSuspended %v, want %v %v %q %v",
					s.Grace, s.Channels, s.Tags, s.MaxSuspended, tt.grace, tt.channels, tt.tags, tt.maxSuspended)
			}
			if !slices.Equal(s.PolicyFields, tt.policyF) || !slices.Equal(s.AnnotationFields, tt.annotated) {
				t.Errorf("fields policy %v annotations %v, want %v %v", s.PolicyFields, s.AnnotationFields, tt.policyF, tt.annotated)
			}
			if s.Name != tt.cj.Name {
				t.Errorf("name %q", s.Name)
			}
		})
	}
}

func TestApplyAlert(t *testing.T) {
	byHand := v1.AlertPolicy{FailureThreshold: 2, MinRuntime: dur(time.Minute), RealertInterval: dur(time.Hour)}
	// The policy sets maxRuntime; it used to set realertInterval too.
	dst := *byHand.DeepCopy()
	ApplyAlert(&dst, &v1.AlertPolicy{MaxRuntime: dur(2 * time.Hour)}, []string{"maxRuntime", "realertInterval"})
	if dst.MaxRuntime == nil || dst.MaxRuntime.Duration != 2*time.Hour {
		t.Errorf("maxRuntime %v, want the policy's 2h", dst.MaxRuntime)
	}
	if dst.RealertInterval != nil {
		t.Errorf("realertInterval %v: the policy no longer sets it, so it goes", dst.RealertInterval)
	}
	if dst.FailureThreshold != 2 || dst.MinRuntime == nil {
		t.Errorf("fields no policy set were changed: %+v", dst)
	}
}

// TestAlertFieldsCoverThePolicy: a policy can set every field of the
// alert policy it inlines; a field added to v1.AlertPolicy and not to
// alertFields would be accepted on the policy and silently never reach a
// Check.
func TestAlertFieldsCoverThePolicy(t *testing.T) {
	typ := reflect.TypeFor[v1.AlertPolicy]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if !slices.ContainsFunc(alertFields, func(f alertField) bool { return f.name == name }) {
			t.Errorf("alert policy field %s is not in alertFields", name)
		}
	}
	full := v1.AlertPolicy{FailureThreshold: 2, RecoveryThreshold: 2, MaxRuntime: dur(time.Hour), MinRuntime: dur(time.Minute),
		Anomaly: &v1.AnomalyPolicy{}, RealertInterval: dur(time.Hour), Escalation: &v1.Escalation{},
		DependsOn: &v1.DependsOn{Checks: []string{"host"}}, SLA: &v1.CheckSLA{}}
	var dst v1.AlertPolicy
	ApplyAlert(&dst, &full, nil)
	if !reflect.DeepEqual(dst, full) {
		t.Errorf("applied %+v, want every field of %+v", dst, full)
	}
	if got := AlertFields(&full); len(got) != typ.NumField() {
		t.Errorf("AlertFields of a full policy: %v", got)
	}
}

func TestParseGrace(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"": time.Hour, "600": 10 * time.Minute, "10m": 10 * time.Minute, "5": time.Minute, "junk": time.Hour,
		"9000h": 365 * 24 * time.Hour, "90s500ms": 90 * time.Second, "99999999999999999999": time.Hour,
	} {
		if got := ParseGrace(in); got != want {
			t.Errorf("ParseGrace(%q) = %v, want %v", in, got, want)
		}
	}
}

// FuzzDecide: whatever the annotations say, a decision's settings are
// within the API's bounds, and an opt-out is never covered.
func FuzzDecide(f *testing.F) {
	f.Add("true", "10m", "a,b", "x y", "24h")
	f.Add("false", "-5", "*", "", "0")
	f.Add("", "", ",,", "   ", "junk")
	all, _ := Namespaced(&v1.CronJobPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "all"}})
	f.Fuzz(func(t *testing.T, check, grace, channels, tags, maxSuspended string) {
		cj := CronJob{Namespace: "team", Name: "a", Annotations: map[string]string{AnnotationCheck: check,
			AnnotationGrace: grace, AnnotationChannels: channels, AnnotationTags: tags, AnnotationMaxSuspended: maxSuspended}}
		d := Decide(cj, []Policy{all}, nil)
		if check == "false" && d.Covered {
			t.Fatal("opted out, but covered")
		}
		if !d.Covered {
			return
		}
		s := d.Settings
		if s.Grace < time.Minute || s.Grace > 365*24*time.Hour || s.MaxSuspended < 0 {
			t.Fatalf("out of bounds: %+v", s)
		}
		if s.MaxSuspended != 0 && s.MaxSuspended < time.Minute {
			t.Fatalf("max suspended %v below a minute", s.MaxSuspended)
		}
		for _, ch := range s.Channels {
			if ch == "" {
				t.Fatal("an empty channel name")
			}
		}
	})
}
