package chart_test

import (
	"bytes"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vigil-operator/vigil/internal/testenv"
)

// PostgreSQL mode: the ping store is in PostgreSQL (store.postgres.existingSecret
// in the chart, config/postgres with kustomize), so the manager is a
// Deployment of several replicas with leader election, a
// PodDisruptionBudget and no volume.

func env(c corev1.Container, name string) *corev1.EnvVar {
	for i := range c.Env {
		if c.Env[i].Name == name {
			return &c.Env[i]
		}
	}
	return nil
}

// wantStoreFromSecret: --store is not an argument (it would show the
// password in the pod spec) but $VIGIL_STORE, from the Secret's key.
func wantStoreFromSecret(t *testing.T, c corev1.Container, secret, key string) {
	t.Helper()
	noFlag(t, c.Args, "store")
	e := env(c, "VIGIL_STORE")
	if e == nil || e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
		e.ValueFrom.SecretKeyRef.Name != secret || e.ValueFrom.SecretKeyRef.Key != key {
		t.Errorf("VIGIL_STORE %+v, want from Secret %s key %s", e, secret, key)
	}
}

// replicas is spec.replicas, for messages and comparisons.
func replicas(d *appsv1.Deployment) string {
	if d.Spec.Replicas == nil {
		return "<unset>"
	}
	return strconv.Itoa(int(*d.Spec.Replicas))
}

// wantNoVolume: the pods keep nothing.
func wantNoVolume(t *testing.T, objs objects, d *appsv1.Deployment) {
	t.Helper()
	if v := d.Spec.Template.Spec.Volumes; len(v) != 0 {
		t.Errorf("volumes %+v, want none", v)
	}
	if m := manager(t, &d.Spec.Template).VolumeMounts; len(m) != 0 {
		t.Errorf("volumeMounts %+v, want none", m)
	}
	if pvc := objs.ofKind("PersistentVolumeClaim"); len(pvc) != 0 {
		t.Errorf("PersistentVolumeClaims rendered: %s", pvc)
	}
}

// wantRollingUpdate: an update adds a pod before it removes one.
func wantRollingUpdate(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	s := d.Spec.Strategy
	if s.Type != appsv1.RollingUpdateDeploymentStrategyType || s.RollingUpdate == nil ||
		s.RollingUpdate.MaxUnavailable == nil || *s.RollingUpdate.MaxUnavailable != intstr.FromInt32(0) ||
		s.RollingUpdate.MaxSurge == nil || *s.RollingUpdate.MaxSurge != intstr.FromInt32(1) {
		t.Errorf("strategy %+v, want RollingUpdate with maxUnavailable 0 and maxSurge 1", s)
	}
}

// wantAntiAffinity: a preferred (soft) pod anti-affinity on the node, over
// the manager's own pods.
func wantAntiAffinity(t *testing.T, pod *corev1.PodTemplateSpec) {
	t.Helper()
	a := pod.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) != 0 ||
		len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatalf("affinity %+v, want one preferred pod anti-affinity term", a)
	}
	term := a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm
	if term.TopologyKey != "kubernetes.io/hostname" || term.LabelSelector == nil || len(term.LabelSelector.MatchExpressions) != 0 ||
		!selects(term.LabelSelector.MatchLabels, pod.Labels) {
		t.Errorf("anti-affinity term %+v, want kubernetes.io/hostname over the manager's pods %v", term, pod.Labels)
	}
}

// pdb returns the manager's PodDisruptionBudget, checking that it selects
// the pods.
func pdb(t *testing.T, objs objects, pod *corev1.PodTemplateSpec) *policyv1.PodDisruptionBudget {
	t.Helper()
	p := convert[policyv1.PodDisruptionBudget](t, objs.must(t, "PodDisruptionBudget", "vigil-manager"))
	if p.Spec.Selector == nil || !selects(p.Spec.Selector.MatchLabels, pod.Labels) {
		t.Errorf("PodDisruptionBudget selector %v does not select the manager's pods %v", p.Spec.Selector, pod.Labels)
	}
	return p
}

func TestPostgresMode(t *testing.T) {
	objs := helmTemplate(t, postgres...)
	d := objs.deployment(t)
	pod := &d.Spec.Template
	c := manager(t, pod)
	if d.Name != "vigil-manager" {
		t.Errorf("name %s, want vigil-manager", d.Name)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %s, want 2", replicas(d))
	}
	if d.Spec.Selector == nil || !selects(d.Spec.Selector.MatchLabels, pod.Labels) {
		t.Errorf("selector %v does not select the pod labels %v", d.Spec.Selector, pod.Labels)
	}
	wantRollingUpdate(t, d)
	// Leader election in the manager's namespace ($POD_NAMESPACE, checked
	// in TestPortsAndProbes), where the chart's Role is.
	wantFlag(t, c.Args, "leader-elect", "true")
	noFlag(t, c.Args, "leader-election-namespace")
	wantStoreFromSecret(t, c, "vigil-postgres", "dsn")
	for _, name := range []string{"PGSSLMODE", "PGSSLROOTCERT"} {
		if e := env(c, name); e != nil {
			t.Errorf("%s set without store.postgres.caSecret: %+v", name, e)
		}
	}
	wantNoVolume(t, objs, d)
	wantAntiAffinity(t, pod)
	if p := pdb(t, objs, pod); p.Spec.MaxUnavailable == nil || *p.Spec.MaxUnavailable != intstr.FromInt32(1) || p.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget %+v, want maxUnavailable 1", p.Spec)
	}
	role := objs.must(t, "Role", "vigil-leader-election-role")
	if role.GetNamespace() != namespace {
		t.Errorf("Role %s in namespace %q, want the release namespace %s", role.GetName(), role.GetNamespace(), namespace)
	}
	rb := convert[rbacv1.RoleBinding](t, objs.must(t, "RoleBinding", "vigil-leader-election-rolebinding"))
	if rb.Namespace != namespace || rb.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.GetName()}) ||
		!slices.Equal(rb.Subjects, managerSubject) {
		t.Errorf("RoleBinding %s: namespace %q roleRef %+v subjects %+v, want the Role bound to the manager", rb.Name, rb.Namespace, rb.RoleRef, rb.Subjects)
	}
	// The Services select the Deployment's pods.
	for _, name := range []string{"vigil", "vigil-metrics"} {
		if svc := convert[corev1.Service](t, objs.must(t, "Service", name)); !selects(svc.Spec.Selector, pod.Labels) {
			t.Errorf("Service %s selector %v does not select the manager's pods %v", name, svc.Spec.Selector, pod.Labels)
		}
	}
	// The chart ships no Secret: the DSN and its password are the user's.
	if s := objs.ofKind("Secret"); len(s) != 0 {
		t.Errorf("Secrets rendered: %s", s)
	}

	t.Run("secretKey", func(t *testing.T) {
		c := manager(t, helmTemplate(t, "--set", "store.postgres.existingSecret=vigil-db-app,store.postgres.secretKey=uri").podTemplate(t))
		wantStoreFromSecret(t, c, "vigil-db-app", "uri")
	})
	t.Run("release name", func(t *testing.T) {
		objs := helmTemplateAs(t, "prod", postgres...)
		objs.must(t, "Deployment", "prod-vigil-manager")
		objs.must(t, "PodDisruptionBudget", "prod-vigil-manager")
		objs.must(t, "Role", "prod-vigil-leader-election-role")
		rb := convert[rbacv1.RoleBinding](t, objs.must(t, "RoleBinding", "prod-vigil-leader-election-rolebinding"))
		if rb.RoleRef.Name != "prod-vigil-leader-election-role" || len(rb.Subjects) != 1 || rb.Subjects[0].Name != "prod-vigil-manager" {
			t.Errorf("RoleBinding roleRef %+v subjects %+v", rb.RoleRef, rb.Subjects)
		}
	})
}

// TestPostgresCA: store.postgres.caSecret mounts only the Secret's ca.crt,
// read-only, and points libpq's defaults at it for verify-full.
func TestPostgresCA(t *testing.T) {
	d := helmTemplate(t, "--set", "store.postgres.existingSecret=vigil-db-app,store.postgres.caSecret=vigil-db-ca").deployment(t)
	c := manager(t, &d.Spec.Template)
	var vol *corev1.Volume
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "postgres-ca" {
			vol = &d.Spec.Template.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "vigil-db-ca" ||
		!slices.Equal(vol.Secret.Items, []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}) {
		t.Fatalf("volume postgres-ca %+v, want ca.crt alone from Secret vigil-db-ca", vol)
	}
	if len(d.Spec.Template.Spec.Volumes) != 1 {
		t.Errorf("volumes %+v, want postgres-ca alone", d.Spec.Template.Spec.Volumes)
	}
	if len(c.VolumeMounts) != 1 {
		t.Fatalf("volumeMounts %+v, want postgres-ca alone", c.VolumeMounts)
	}
	m := c.VolumeMounts[0]
	if m.Name != "postgres-ca" || m.MountPath != "/etc/vigil/postgres-ca" || !m.ReadOnly || m.SubPath != "" {
		t.Errorf("mount %+v, want postgres-ca read-only at /etc/vigil/postgres-ca", m)
	}
	// The file PGSSLROOTCERT names is the one the volume holds.
	root := env(c, "PGSSLROOTCERT")
	if root == nil || root.Value != path.Join(m.MountPath, vol.Secret.Items[0].Path) {
		t.Errorf("PGSSLROOTCERT %+v, want %s", root, path.Join(m.MountPath, "ca.crt"))
	}
	if mode := env(c, "PGSSLMODE"); mode == nil || mode.Value != "verify-full" {
		t.Errorf("PGSSLMODE %+v, want verify-full", mode)
	}
	wantStoreFromSecret(t, c, "vigil-db-app", "dsn")

	// Without PostgreSQL mode the value does nothing.
	sts := helmTemplate(t, "--set", "store.postgres.caSecret=vigil-db-ca").statefulSet(t)
	if e := env(manager(t, &sts.Spec.Template), "PGSSLROOTCERT"); e != nil || len(sts.Spec.Template.Spec.Volumes) != 0 {
		t.Errorf("caSecret without existingSecret: env %+v volumes %+v", e, sts.Spec.Template.Spec.Volumes)
	}
}

func TestReplicaCount(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int32
	}{
		{nil, 2},
		{[]string{"--set", "replicaCount=1"}, 1},
		{[]string{"--set", "replicaCount=5"}, 5},
		{[]string{"--values", postgresValues}, 3},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			d := helmTemplate(t, append(slices.Clone(postgres), tc.args...)...).deployment(t)
			if d.Spec.Replicas == nil || *d.Spec.Replicas != tc.want {
				t.Errorf("replicas %s, want %d", replicas(d), tc.want)
			}
		})
	}
	for _, bad := range []string{"0", "-1", "1.5", "two", "null"} {
		t.Run("refuses "+bad, func(t *testing.T) {
			_, err := testenv.HelmTemplate(t.Context(), chartDir, release, namespace, append(slices.Clone(postgres), "--set", "replicaCount="+bad)...)
			if err == nil || !strings.Contains(err.Error(), "replicaCount must be a whole number of at least 1") {
				t.Errorf("replicaCount=%s: %v, want refused", bad, err)
			}
		})
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	t.Run("minAvailable", func(t *testing.T) {
		objs := helmTemplate(t, append(slices.Clone(postgres), "--set", "podDisruptionBudget.minAvailable=1")...)
		p := pdb(t, objs, objs.podTemplate(t))
		if p.Spec.MinAvailable == nil || *p.Spec.MinAvailable != intstr.FromInt32(1) || p.Spec.MaxUnavailable != nil {
			t.Errorf("PodDisruptionBudget %+v, want minAvailable 1 alone", p.Spec)
		}
	})
	t.Run("disabled", func(t *testing.T) {
		if got := helmTemplate(t, append(slices.Clone(postgres), "--set", "podDisruptionBudget.enabled=false")...).ofKind("PodDisruptionBudget"); len(got) != 0 {
			t.Errorf("podDisruptionBudget.enabled=false renders %s", got)
		}
	})
}

func TestPostgresScheduling(t *testing.T) {
	t.Run("affinity replaces the default", func(t *testing.T) {
		pod := helmTemplate(t, append(slices.Clone(postgres),
			"--set-json", `affinity={"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"In","values":["infra"]}]}]}}}`)...).podTemplate(t)
		if a := pod.Spec.Affinity; a == nil || a.NodeAffinity == nil || a.PodAntiAffinity != nil {
			t.Errorf("affinity %+v, want the value's node affinity alone", a)
		}
	})
	t.Run("topologySpreadConstraints", func(t *testing.T) {
		pod := helmTemplate(t, append(slices.Clone(postgres), "--set-json",
			`topologySpreadConstraints=[{"maxSkew":1,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"},`+
				`{"maxSkew":2,"topologyKey":"kubernetes.io/hostname","whenUnsatisfiable":"DoNotSchedule","labelSelector":{"matchLabels":{"team":"platform"}}}]`)...).podTemplate(t)
		tsc := pod.Spec.TopologySpreadConstraints
		if len(tsc) != 2 {
			t.Fatalf("topologySpreadConstraints %+v, want 2", tsc)
		}
		// The first had no labelSelector: it gets the manager's pods.
		if c := tsc[0]; c.TopologyKey != "topology.kubernetes.io/zone" || c.MaxSkew != 1 || c.WhenUnsatisfiable != corev1.ScheduleAnyway ||
			c.LabelSelector == nil || !selects(c.LabelSelector.MatchLabels, pod.Labels) {
			t.Errorf("constraint %+v, want the zone over the manager's pods", c)
		}
		if c := tsc[1]; c.LabelSelector == nil || !reflect.DeepEqual(c.LabelSelector.MatchLabels, map[string]string{"team": "platform"}) {
			t.Errorf("constraint %+v keeps its own labelSelector", c)
		}
		wantAntiAffinity(t, pod)
	})
	t.Run("none by default with the embedded store", func(t *testing.T) {
		pod := helmTemplate(t).podTemplate(t)
		if pod.Spec.Affinity != nil || len(pod.Spec.TopologySpreadConstraints) != 0 {
			t.Errorf("affinity %+v topologySpreadConstraints %+v", pod.Spec.Affinity, pod.Spec.TopologySpreadConstraints)
		}
	})
}

// leaderElectionID is the Lease the manager takes, read from where the
// manager sets it, so that a renamed lease fails here.
func leaderElectionID(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`LeaderElectionID:\s*"([^"]+)"`).FindSubmatch(readRepoFile(t, "internal/manager/manager.go"))
	if m == nil {
		t.Fatal("no LeaderElectionID in internal/manager/manager.go")
	}
	return string(m[1])
}

type request struct{ group, resource, name, verb string }

// allows is RBAC's rule matching for resource requests, without wildcards
// expanded beyond "*".
func allows(rules []rbacv1.PolicyRule, r request) bool {
	has := func(list []string, v string) bool { return slices.Contains(list, v) || slices.Contains(list, "*") }
	for _, rule := range rules {
		if has(rule.APIGroups, r.group) && has(rule.Resources, r.resource) && has(rule.Verbs, r.verb) &&
			(len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, r.name)) {
			return true
		}
	}
	return false
}

// TestLeaderElectionRole: the lease Role of both installs allows the calls
// controller-runtime's leader election makes (client-go's LeaseLock: get,
// create, update of the Lease; its recorder: core Events) and nothing else
// on leases.
func TestLeaderElectionRole(t *testing.T) {
	lease := leaderElectionID(t)
	for _, tc := range []struct {
		name string
		objs func(t *testing.T) objects
	}{
		{"chart", func(t *testing.T) objects { return helmTemplate(t, postgres...) }},
		{"kustomize config/postgres", kustomizePostgres},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := convert[rbacv1.Role](t, tc.objs(t).must(t, "Role", "vigil-leader-election-role")).Rules
			for _, r := range []request{
				{"coordination.k8s.io", "leases", lease, "get"},
				{"coordination.k8s.io", "leases", "", "create"}, // create carries no name
				{"coordination.k8s.io", "leases", lease, "update"},
				{"", "events", "", "create"},
				{"", "events", "vigil.monitoring.vigil.dev.18a0b1c2d3e4f5a6", "patch"},
			} {
				if !allows(rules, r) {
					t.Errorf("%s %s/%s %q is not allowed", r.verb, r.group, r.resource, r.name)
				}
			}
			for _, r := range []request{
				{"coordination.k8s.io", "leases", "", "list"},
				{"coordination.k8s.io", "leases", "", "watch"},
				{"coordination.k8s.io", "leases", lease, "patch"},
				{"coordination.k8s.io", "leases", lease, "delete"},
				{"coordination.k8s.io", "leases", "kube-scheduler", "get"},
				{"coordination.k8s.io", "leases", "kube-scheduler", "update"},
				{"", "configmaps", lease, "get"},
				{"", "events", "", "list"},
				{"", "events", "x", "delete"},
				{"", "secrets", "", "get"},
			} {
				if allows(rules, r) {
					t.Errorf("%s %s/%s %q is allowed; leader election does not need it", r.verb, r.group, r.resource, r.name)
				}
			}
		})
	}
	// The alert watches the same lease.
	pr := helmTemplate(t, append(slices.Clone(postgres), "--set", "prometheusRule.enabled=true")...).must(t, "PrometheusRule", "vigil")
	if expr := alertsOf(t, pr)["VigilNoLeader"]["expr"]; !strings.Contains(expr.(string), `name="`+lease+`"`) {
		t.Errorf("VigilNoLeader expr %q does not name the lease %s", expr, lease)
	}
}

func alertsOf(t *testing.T, pr *unstructured.Unstructured) map[string]map[string]any {
	t.Helper()
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	alerts := map[string]map[string]any{}
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			r := r.(map[string]any)
			alerts[r["alert"].(string)] = r
		}
	}
	return alerts
}

func TestPostgresPrometheusRule(t *testing.T) {
	for _, tc := range []struct {
		name        string
		args        []string
		forDur, sev string
	}{
		{"default", nil, "5m", "critical"},
		{"values", []string{"--values", postgresValues}, "10m", "warning"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append(slices.Clone(postgres), "--set", "prometheusRule.enabled=true,prometheusRule.additionalLabels.team=platform"), tc.args...)
			alerts := alertsOf(t, helmTemplate(t, args...).must(t, "PrometheusRule", "vigil"))
			if got := keys(alerts); !slices.Equal(got, []string{"VigilCheckDown", "VigilDeliveriesFailing", "VigilDown", "VigilNoLeader", "VigilStoreFull"}) {
				t.Fatalf("alerts %v, want VigilCheckDown, VigilDeliveriesFailing, VigilDown, VigilNoLeader and VigilStoreFull (no volume of its own to watch)", got)
			}
			a := alerts["VigilNoLeader"]
			want := `max(leader_election_master_status{job="vigil-metrics", namespace="vigil-system", name="vigil.monitoring.vigil.dev"}) < 1`
			if a["expr"] != want || a["for"] != tc.forDur {
				t.Errorf("VigilNoLeader expr %q for %v, want %q for %s", a["expr"], a["for"], want, tc.forDur)
			}
			labels, _, _ := unstructured.NestedStringMap(a, "labels")
			if labels["severity"] != tc.sev || labels["team"] != "platform" {
				t.Errorf("VigilNoLeader labels %v", labels)
			}
		})
	}
}

// TestPostgresNetworkPolicy: with egress restricted, PostgreSQL mode allows
// the database's port, to anywhere or to the peers given.
func TestPostgresNetworkPolicy(t *testing.T) {
	dbRules := func(np *networkingv1.NetworkPolicy, port int32) []networkingv1.NetworkPolicyEgressRule {
		var out []networkingv1.NetworkPolicyEgressRule
		for _, r := range np.Spec.Egress {
			if slices.ContainsFunc(r.Ports, func(p networkingv1.NetworkPolicyPort) bool {
				return p.Port != nil && p.Port.IntValue() == int(port) && p.Protocol != nil && *p.Protocol == corev1.ProtocolTCP
			}) {
				out = append(out, r)
			}
		}
		return out
	}
	render := func(t *testing.T, args ...string) *networkingv1.NetworkPolicy {
		t.Helper()
		objs := helmTemplate(t, append([]string{"--set", "networkPolicy.enabled=true,networkPolicy.egress.restrict=true"}, args...)...)
		return convert[networkingv1.NetworkPolicy](t, objs.must(t, "NetworkPolicy", "vigil-manager"))
	}
	t.Run("anywhere", func(t *testing.T) {
		np := render(t, postgres...)
		if r := dbRules(np, 5432); len(r) != 1 || len(r[0].To) != 0 || len(r[0].Ports) != 1 {
			t.Errorf("egress %+v, want one rule for TCP 5432 to anywhere", np.Spec.Egress)
		}
		if len(np.Spec.Egress) != 2 {
			t.Errorf("egress %+v, want DNS and the database", np.Spec.Egress)
		}
	})
	t.Run("peers and port", func(t *testing.T) {
		np := render(t, append(slices.Clone(postgres), "--set", "networkPolicy.egress.postgres.port=6432",
			"--set-json", `networkPolicy.egress.postgres.to=[{"podSelector":{"matchLabels":{"cnpg.io/cluster":"vigil-db"}}}]`)...)
		r := dbRules(np, 6432)
		if len(r) != 1 || len(r[0].To) != 1 || r[0].To[0].PodSelector == nil || r[0].To[0].PodSelector.MatchLabels["cnpg.io/cluster"] != "vigil-db" {
			t.Errorf("egress %+v, want TCP 6432 to the vigil-db pods", np.Spec.Egress)
		}
		if len(dbRules(np, 5432)) != 0 {
			t.Errorf("egress %+v still allows 5432", np.Spec.Egress)
		}
	})
	t.Run("open egress", func(t *testing.T) {
		objs := helmTemplate(t, append(slices.Clone(postgres), "--set", "networkPolicy.enabled=true")...)
		np := convert[networkingv1.NetworkPolicy](t, objs.must(t, "NetworkPolicy", "vigil-manager"))
		if slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || len(np.Spec.Egress) != 0 {
			t.Errorf("policyTypes %v egress %+v, want egress left open", np.Spec.PolicyTypes, np.Spec.Egress)
		}
	})
	t.Run("embedded store", func(t *testing.T) {
		if r := dbRules(render(t), 5432); len(r) != 0 {
			t.Errorf("the embedded store's policy allows PostgreSQL: %+v", r)
		}
	})
}

// getIn returns the object of kind, namespace and name, or nil.
func (o objects) getIn(kind, ns, name string) *unstructured.Unstructured {
	for i := range o {
		if o[i].GetKind() == kind && o[i].GetNamespace() == ns && o[i].GetName() == name {
			return &o[i]
		}
	}
	return nil
}

// TestPostgresKeepsFeatures: every feature of all-features.yaml renders the
// same in PostgreSQL mode. Only the workload, its store, leader election,
// the PodDisruptionBudget and the database's egress and alert differ.
func TestPostgresKeepsFeatures(t *testing.T) {
	embedded := helmTemplate(t, "--values", allFeatures)
	pg := helmTemplate(t, "--values", allFeatures, "--values", postgresValues)
	id := func(u unstructured.Unstructured) string {
		return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
	}
	var onlyEmbedded, onlyPG []string
	for _, u := range embedded {
		if pg.getIn(u.GetKind(), u.GetNamespace(), u.GetName()) == nil {
			onlyEmbedded = append(onlyEmbedded, id(u))
		}
	}
	for _, u := range pg {
		if embedded.getIn(u.GetKind(), u.GetNamespace(), u.GetName()) == nil {
			onlyPG = append(onlyPG, id(u))
		}
	}
	slices.Sort(onlyPG)
	if want := []string{"StatefulSet vigil-system/vigil-manager"}; !slices.Equal(onlyEmbedded, want) {
		t.Errorf("only with the embedded store: %q, want %q", onlyEmbedded, want)
	}
	if want := []string{
		"Deployment vigil-system/vigil-manager",
		"PodDisruptionBudget vigil-system/vigil-manager",
		"Role vigil-system/vigil-leader-election-role",
		"RoleBinding vigil-system/vigil-leader-election-rolebinding",
	}; !slices.Equal(onlyPG, want) {
		t.Errorf("only in PostgreSQL mode: %q, want %q", onlyPG, want)
	}
	for _, e := range embedded {
		p := pg.getIn(e.GetKind(), e.GetNamespace(), e.GetName())
		if p == nil {
			continue
		}
		switch e.GetKind() {
		case "NetworkPolicy":
			want := convert[networkingv1.NetworkPolicy](t, &e)
			got := convert[networkingv1.NetworkPolicy](t, p)
			if !reflect.DeepEqual(got.Spec.Ingress, want.Spec.Ingress) || !reflect.DeepEqual(got.Spec.PolicyTypes, want.Spec.PolicyTypes) {
				t.Errorf("NetworkPolicy ingress or policyTypes differ in PostgreSQL mode")
			}
			// DNS, the database, then the user's rules.
			if len(got.Spec.Egress) != len(want.Spec.Egress)+1 ||
				!reflect.DeepEqual(got.Spec.Egress[0], want.Spec.Egress[0]) || !reflect.DeepEqual(got.Spec.Egress[2:], want.Spec.Egress[1:]) {
				t.Errorf("NetworkPolicy egress %+v, want %+v with the database's rule", got.Spec.Egress, want.Spec.Egress)
			}
		case "PrometheusRule":
			want, got := alertsOf(t, &e), alertsOf(t, p)
			delete(got, "VigilNoLeader")
			delete(want, "VigilStoreVolumeFilling") // the embedded store's volume
			if !reflect.DeepEqual(got, want) {
				t.Errorf("PrometheusRule alerts differ beyond VigilNoLeader and VigilStoreVolumeFilling:\n%v\n%v", got, want)
			}
		default:
			if !reflect.DeepEqual(e.Object, p.Object) {
				t.Errorf("%s differs in PostgreSQL mode", id(e))
			}
		}
	}

	// The pods: the same but for the store and leader election.
	ePod, pPod := embedded.podTemplate(t), pg.podTemplate(t)
	ec, pc := manager(t, ePod), manager(t, pPod)
	without := func(args []string, names ...string) []string {
		return slices.DeleteFunc(slices.Clone(args), func(a string) bool {
			return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(a, "--"+n+"=") })
		})
	}
	if g, w := without(pc.Args, "leader-elect"), without(ec.Args, "leader-elect", "store"); !slices.Equal(g, w) {
		t.Errorf("args differ beyond --leader-elect and --store:\n%q\n%q", g, w)
	}
	pgEnv := slices.DeleteFunc(slices.Clone(pc.Env), func(e corev1.EnvVar) bool {
		return e.Name == "VIGIL_STORE" || e.Name == "PGSSLMODE" || e.Name == "PGSSLROOTCERT"
	})
	if !reflect.DeepEqual(pgEnv, ec.Env) {
		t.Errorf("env differs beyond the store's:\n%+v\n%+v", pgEnv, ec.Env)
	}
	ec.Args, pc.Args, ec.Env, pc.Env = nil, nil, nil, nil
	ec.VolumeMounts, pc.VolumeMounts = nil, nil
	if !reflect.DeepEqual(ec, pc) {
		t.Errorf("the manager container differs beyond args, env and mounts:\n%+v\n%+v", pc, ec)
	}
	eSpec, pSpec := ePod.Spec, pPod.Spec
	eSpec.Containers, pSpec.Containers = nil, nil
	eSpec.Volumes, pSpec.Volumes = nil, nil
	pSpec.TopologySpreadConstraints = nil // set by postgres.yaml
	if !reflect.DeepEqual(eSpec, pSpec) || !reflect.DeepEqual(ePod.ObjectMeta, pPod.ObjectMeta) {
		t.Errorf("the pod differs beyond its containers and volumes:\n%+v\n%+v", pSpec, eSpec)
	}
}

// TestKustomizePostgres: config/postgres is config/default with the
// StatefulSet replaced by the PostgreSQL workload: a Deployment, its
// PodDisruptionBudget and the leader-election Role. Everything else (CRDs,
// RBAC, Namespace, Services) is the same object.
func TestKustomizePostgres(t *testing.T) {
	def, pg := kustomizeDefault(t), kustomizePostgres(t)
	id := func(u unstructured.Unstructured) string { return u.GetKind() + " " + u.GetName() }
	var added []string
	for _, u := range pg {
		if def.getIn(u.GetKind(), u.GetNamespace(), u.GetName()) == nil {
			added = append(added, id(u))
		}
	}
	slices.Sort(added)
	if want := []string{"Deployment vigil-manager", "PodDisruptionBudget vigil-manager", "Role vigil-leader-election-role", "RoleBinding vigil-leader-election-rolebinding"}; !slices.Equal(added, want) {
		t.Errorf("config/postgres adds %q, want %q", added, want)
	}
	for _, u := range def {
		if u.GetKind() == "StatefulSet" {
			if pg.getIn("StatefulSet", u.GetNamespace(), u.GetName()) != nil {
				t.Error("config/postgres has the StatefulSet")
			}
			continue
		}
		if p := pg.getIn(u.GetKind(), u.GetNamespace(), u.GetName()); p == nil || !reflect.DeepEqual(p.Object, u.Object) {
			t.Errorf("%s differs from config/default's (or is missing)", id(u))
		}
	}
	// No Secret: the DSN and its password are created by the user.
	if s := pg.ofKind("Secret"); len(s) != 0 {
		t.Errorf("config/postgres ships Secrets: %s", s)
	}
	for _, u := range pg {
		if ns := u.GetNamespace(); ns != "" && ns != namespace {
			t.Errorf("%s is in namespace %s, want %s", id(u), ns, namespace)
		}
	}

	d := pg.deployment(t)
	pod := &d.Spec.Template
	c := manager(t, pod)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %s, want 2", replicas(d))
	}
	if d.Spec.Selector == nil || !selects(d.Spec.Selector.MatchLabels, pod.Labels) {
		t.Errorf("selector %v does not select the pod labels %v", d.Spec.Selector, pod.Labels)
	}
	wantRollingUpdate(t, d)
	wantFlag(t, c.Args, "leader-elect", "true")
	wantStoreFromSecret(t, c, "vigil-postgres", "dsn")
	wantNoVolume(t, pg, d)
	wantAntiAffinity(t, pod)
	if p := pdb(t, pg, pod); p.Spec.MaxUnavailable == nil || *p.Spec.MaxUnavailable != intstr.FromInt32(1) || p.Spec.MinAvailable != nil {
		t.Errorf("PodDisruptionBudget %+v, want maxUnavailable 1", p.Spec)
	}
	// Everything else in the pod is the StatefulSet's.
	sts := def.statefulSet(t)
	sc := manager(t, &sts.Spec.Template)
	without := func(args []string, names ...string) []string {
		return slices.DeleteFunc(slices.Clone(args), func(a string) bool {
			return slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(a, "--"+n+"=") })
		})
	}
	if g, w := without(c.Args, "leader-elect"), without(sc.Args, "leader-elect", "store"); !slices.Equal(g, w) {
		t.Errorf("args %q, want the StatefulSet's %q", g, w)
	}
	if !reflect.DeepEqual(c.Ports, sc.Ports) || !reflect.DeepEqual(c.LivenessProbe, sc.LivenessProbe) || !reflect.DeepEqual(c.ReadinessProbe, sc.ReadinessProbe) ||
		!reflect.DeepEqual(c.SecurityContext, sc.SecurityContext) || !reflect.DeepEqual(c.Resources, sc.Resources) || c.Image != sc.Image {
		t.Errorf("the Deployment's container differs from the StatefulSet's beyond the store:\n%+v\n%+v", c, sc)
	}
	if !reflect.DeepEqual(pod.Labels, sts.Spec.Template.Labels) || pod.Spec.ServiceAccountName != sts.Spec.Template.Spec.ServiceAccountName {
		t.Errorf("pod labels %v serviceAccountName %q, want the StatefulSet's", pod.Labels, pod.Spec.ServiceAccountName)
	}
}

// TestChartMatchesKustomizePostgres: the chart in PostgreSQL mode, given the
// Secret config/postgres reads, runs the workload config/postgres runs.
func TestChartMatchesKustomizePostgres(t *testing.T) {
	chart, kust := helmTemplate(t, postgres...), kustomizePostgres(t)
	cd, kd := chart.deployment(t), kust.deployment(t)
	if replicas(cd) != replicas(kd) || !reflect.DeepEqual(cd.Spec.Strategy, kd.Spec.Strategy) {
		t.Errorf("replicas %s strategy %+v, want %s %+v", replicas(cd), cd.Spec.Strategy, replicas(kd), kd.Spec.Strategy)
	}
	cc, kc := manager(t, &cd.Spec.Template), manager(t, &kd.Spec.Template)
	for _, name := range []string{"leader-elect", "http-bind-address", "metrics-bind-address", "health-probe-bind-address"} {
		k, _ := flag(kc.Args, name)
		wantFlag(t, cc.Args, name, k)
	}
	if c, k := env(cc, "VIGIL_STORE"), env(kc, "VIGIL_STORE"); c == nil || k == nil || !reflect.DeepEqual(c, k) {
		t.Errorf("VIGIL_STORE %+v, want %+v", c, k)
	}
	if c, k := pdb(t, chart, &cd.Spec.Template), pdb(t, kust, &kd.Spec.Template); !reflect.DeepEqual(c.Spec.MaxUnavailable, k.Spec.MaxUnavailable) ||
		!reflect.DeepEqual(c.Spec.MinAvailable, k.Spec.MinAvailable) {
		t.Errorf("PodDisruptionBudget %+v, want %+v", c.Spec, k.Spec)
	}
	ca := cd.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	ka := kd.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(ca) != len(ka) || ca[0].Weight != ka[0].Weight || ca[0].PodAffinityTerm.TopologyKey != ka[0].PodAffinityTerm.TopologyKey {
		t.Errorf("anti-affinity %+v, want %+v", ca, ka)
	}
}

// TestDistIsKustomizeBuild: the one-file installs are what `make manifests`
// writes, kustomize build of config/default and config/postgres.
func TestDistIsKustomizeBuild(t *testing.T) {
	kustomize, err := testenv.Tool("kustomize")
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for dist, dir := range map[string]string{
		"dist/install.yaml":          "config/default",
		"dist/install-postgres.yaml": "config/postgres",
	} {
		t.Run(dist, func(t *testing.T) {
			want, err := exec.CommandContext(t.Context(), kustomize, "build", filepath.Join(root, dir)).Output()
			if err != nil {
				t.Fatalf("kustomize build %s: %v", dir, err)
			}
			if got := readRepoFile(t, dist); !bytes.Equal(got, want) {
				t.Errorf("%s is not kustomize build %s: run make manifests", dist, dir)
			}
		})
	}
}
