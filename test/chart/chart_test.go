// Package chart_test renders charts/vigil with the project's helm (and
// config/default and config/postgres with its kustomize) and checks what an
// install would get, with either ping store: the restricted Pod Security
// Standard, RBAC identical to the generated roles, manager flags that exist,
// and each value doing what it says.
//
// `make test` builds helm and kustomize from Go modules and passes them in
// $HELM and $KUSTOMIZE; run alone, the tests use the newest bin/tools/*.
package chart_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/vigil-operator/vigil/internal/cli"
	"github.com/vigil-operator/vigil/internal/devenv"
	"github.com/vigil-operator/vigil/internal/testenv"
)

const (
	chartDir  = "charts/vigil"
	release   = "vigil"
	namespace = "vigil-system"
	// allFeatures turns every optional feature of the chart on.
	allFeatures = "testdata/all-features.yaml"
	// postgresValues is PostgreSQL mode with each of its values set.
	postgresValues = "testdata/postgres.yaml"
)

// postgres are the arguments that put the chart in PostgreSQL mode, with the
// Secret config/postgres reads.
var postgres = []string{"--set", "store.postgres.existingSecret=vigil-postgres"}

// objects is a rendered install.
type objects []unstructured.Unstructured

func helmTemplate(t *testing.T, args ...string) objects {
	t.Helper()
	return helmTemplateAs(t, release, args...)
}

func helmTemplateAs(t *testing.T, name string, args ...string) objects {
	t.Helper()
	objs, err := testenv.HelmTemplate(t.Context(), chartDir, name, namespace, args...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func kustomizeDefault(t *testing.T) objects {
	t.Helper()
	return kustomizeBuild(t, "config/default")
}

func kustomizePostgres(t *testing.T) objects {
	t.Helper()
	return kustomizeBuild(t, "config/postgres")
}

func kustomizeBuild(t *testing.T, dir string) objects {
	t.Helper()
	objs, err := testenv.KustomizeBuild(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// get returns the object of kind and name (in any namespace), or nil.
func (o objects) get(kind, name string) *unstructured.Unstructured {
	for i := range o {
		if o[i].GetKind() == kind && o[i].GetName() == name {
			return &o[i]
		}
	}
	return nil
}

func (o objects) ofKind(kind string) objects {
	var out objects
	for _, u := range o {
		if u.GetKind() == kind {
			out = append(out, u)
		}
	}
	return out
}

func (o objects) must(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	u := o.get(kind, name)
	if u == nil {
		t.Fatalf("no %s %s among %s", kind, name, o)
	}
	return u
}

func (o objects) String() string {
	var s []string
	for _, u := range o {
		id := u.GetKind() + " " + u.GetName()
		if u.GetNamespace() != "" {
			id += " (" + u.GetNamespace() + ")"
		}
		s = append(s, id)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

func convert[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

// statefulSet returns the chart's manager StatefulSet: the embedded ping
// store allows one replica, on a volume.
func (o objects) statefulSet(t *testing.T) *appsv1.StatefulSet {
	t.Helper()
	if deps := o.ofKind("Deployment"); len(deps) > 0 {
		t.Errorf("want no Deployment, got %s", deps)
	}
	sets := o.ofKind("StatefulSet")
	if len(sets) != 1 {
		t.Fatalf("want one StatefulSet, got %s", sets)
	}
	return convert[appsv1.StatefulSet](t, &sets[0])
}

// deployment returns the manager Deployment of PostgreSQL mode, which
// replaces the StatefulSet.
func (o objects) deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	if sets := o.ofKind("StatefulSet"); len(sets) > 0 {
		t.Errorf("want no StatefulSet in PostgreSQL mode, got %s", sets)
	}
	deps := o.ofKind("Deployment")
	if len(deps) != 1 {
		t.Fatalf("want one Deployment, got %s", deps)
	}
	return convert[appsv1.Deployment](t, &deps[0])
}

// podTemplate returns the pod template of the manager's workload, which
// every install names vigil-manager: a StatefulSet (the embedded store) or
// a Deployment (PostgreSQL mode).
func (o objects) podTemplate(t *testing.T) *corev1.PodTemplateSpec {
	t.Helper()
	var found objects
	for _, u := range o {
		if u.GetKind() == "StatefulSet" || u.GetKind() == "Deployment" {
			found = append(found, u)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want one StatefulSet or Deployment, got %s", found)
	}
	if found[0].GetKind() == "Deployment" {
		return &convert[appsv1.Deployment](t, &found[0]).Spec.Template
	}
	return &convert[appsv1.StatefulSet](t, &found[0]).Spec.Template
}

func manager(t *testing.T, pod *corev1.PodTemplateSpec) corev1.Container {
	t.Helper()
	for _, c := range pod.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	t.Fatal("the manager's pod has no container named manager")
	return corev1.Container{}
}

func args(t *testing.T, o objects) []string {
	t.Helper()
	return manager(t, o.podTemplate(t)).Args
}

// flag returns the value of --name=value in args, and whether it is there.
func flag(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
		if a == "--"+name {
			return "true", true
		}
	}
	return "", false
}

func wantFlag(t *testing.T, args []string, name, want string) {
	t.Helper()
	got, ok := flag(args, name)
	switch {
	case !ok:
		t.Errorf("no --%s in %q", name, args)
	case got != want:
		t.Errorf("--%s=%s, want %s", name, got, want)
	}
}

func noFlag(t *testing.T, args []string, name string) {
	t.Helper()
	if v, ok := flag(args, name); ok {
		t.Errorf("--%s=%s is set, want it absent: %q", name, v, args)
	}
}

// noLeaderElectionRBAC: the one replica runs with --leader-elect=false, so
// nothing grants it leases: no Role or RoleBinding named *leader-election*,
// and no role with a rule on coordination.k8s.io leases.
func noLeaderElectionRBAC(t *testing.T, objs objects) {
	t.Helper()
	for _, kind := range []string{"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"} {
		for _, u := range objs.ofKind(kind) {
			if strings.Contains(u.GetName(), "leader-election") {
				t.Errorf("%s %s is rendered; the manager does not elect a leader", kind, u.GetName())
			}
		}
	}
	for _, kind := range []string{"Role", "ClusterRole"} {
		for _, u := range objs.ofKind(kind) {
			for _, r := range convert[rbacv1.ClusterRole](t, &u).Rules {
				if slices.Contains(r.APIGroups, "coordination.k8s.io") || slices.Contains(r.Resources, "leases") {
					t.Errorf("%s %s grants %v on %v; the manager holds no lease", kind, u.GetName(), r.Verbs, r.Resources)
				}
			}
		}
	}
}

func TestDefaultValues(t *testing.T) {
	objs := helmTemplate(t)
	for _, want := range []struct{ kind, name string }{
		{"ServiceAccount", "vigil-manager"},
		{"ClusterRole", "vigil-manager-role"},
		{"ClusterRole", "vigil-cronjobs"},
		{"ClusterRole", "vigil-ping-url-secrets"},
		{"ClusterRole", "vigil-metrics-auth-role"},
		{"ClusterRole", "vigil-metrics-reader"},
		{"ClusterRole", "vigil-check-editor-role"},
		{"ClusterRole", "vigil-check-viewer-role"},
		{"ClusterRoleBinding", "vigil-manager-rolebinding"},
		{"ClusterRoleBinding", "vigil-cronjobs-rolebinding"},
		{"ClusterRoleBinding", "vigil-metrics-auth-rolebinding"},
		{"StatefulSet", "vigil-manager"},
		{"Service", "vigil"},
		{"Service", "vigil-metrics"},
	} {
		objs.must(t, want.kind, want.name)
	}
	for _, kind := range []string{"Deployment", "Ingress", "ServiceMonitor", "PrometheusRule", "NetworkPolicy", "PodDisruptionBudget", "PersistentVolumeClaim", "Namespace", "CustomResourceDefinition"} {
		if got := objs.ofKind(kind); len(got) > 0 {
			t.Errorf("default values render %s", got)
		}
	}
	// The single replica does not elect a leader, so it has no lease to
	// hold: no leader-election Role or RoleBinding.
	noLeaderElectionRBAC(t, objs)
	// Channels reach global addresses only: the egress guard's default.
	noFlag(t, args(t, objs), "egress-allow")
	noFlag(t, args(t, objs), "egress-allow-relays")
	// Namespaced objects land in the release namespace.
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" && ns != namespace {
			t.Errorf("%s %s is in namespace %s, want %s", u.GetKind(), u.GetName(), ns, namespace)
		}
	}
	// ping-url-secrets is bound by no one.
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, u := range objs.ofKind(kind) {
			if b := convert[rbacv1.RoleBinding](t, &u); b.RoleRef.Name == "vigil-ping-url-secrets" {
				t.Errorf("%s %s binds vigil-ping-url-secrets", kind, u.GetName())
			}
		}
	}

	sts := objs.statefulSet(t)
	pod := &sts.Spec.Template
	c := manager(t, pod)
	chart := readChart(t)
	if want := "ghcr.io/vigil-operator/vigil:" + chart.AppVersion; c.Image != want {
		t.Errorf("image %s, want %s", c.Image, want)
	}
	if len(c.Args) == 0 || c.Args[0] != "manager" {
		t.Errorf("args %q do not start with the manager command", c.Args)
	}
	wantFlag(t, c.Args, "base-url", "http://vigil.vigil-system.svc")
	wantFlag(t, c.Args, "leader-elect", "false")
	wantFlag(t, c.Args, "check-limit", "20")
	wantFlag(t, c.Args, "ping-log-limit", "100")
	wantFlag(t, c.Args, "flip-limit", "10000")
	wantFlag(t, c.Args, "project-secret-limit", "20")
	wantFlag(t, c.Args, "api-key-limit", "1000")
	wantFlag(t, c.Args, "channel-limit", "100")
	wantFlag(t, c.Args, "maintenance-window-limit", "100")
	wantFlag(t, c.Args, "status-page-limit", "20")
	wantFlag(t, c.Args, "cronjob-policy-limit", "100")
	wantFlag(t, c.Args, "ping-body-limit", "100000")
	wantFlag(t, c.Args, "max-connections", "4096")
	wantFlag(t, c.Args, "max-connections-per-source", "256")
	wantFlag(t, c.Args, "request-body-budget", "67108864")
	wantFlag(t, c.Args, "check-write-slots", "8")
	wantFlag(t, c.Args, "check-writes-waiting", "32")
	wantFlag(t, c.Args, "limits-configmap", "vigil-system/vigil-limits")
	wantFlag(t, c.Args, "notify-max-attempts", "10")
	wantFlag(t, c.Args, "notify-workers", "32")
	wantFlag(t, c.Args, "flap-limit", "10")
	wantFlag(t, c.Args, "flap-window", "1h")
	wantFlag(t, c.Args, "flap-steady", "10m")
	wantFlag(t, c.Args, "storm-threshold", "10")
	wantFlag(t, c.Args, "storm-window", "1m")
	wantFlag(t, c.Args, "storm-gather", "10s")
	wantFlag(t, c.Args, "cronjob-time-zone", "UTC")
	wantFlag(t, c.Args, "zap-log-level", "info")
	wantFlag(t, c.Args, "store", "sqlite:/var/lib/vigil/vigil.db")
	wantFlag(t, c.Args, "status-writes-per-second", "20")
	wantFlag(t, c.Args, "status-changes-per-second", "200")
	for _, name := range []string{"namespaces", "cronjobs", "trusted-proxies", "smtp-bind-address", "smtp-domain", "heartbeat-url", "heartbeat-interval", "notify-namespace-workers"} {
		noFlag(t, c.Args, name)
	}
	if pod.Spec.ServiceAccountName != "vigil-manager" {
		t.Errorf("serviceAccountName %q", pod.Spec.ServiceAccountName)
	}
	// The http Service is what the default base URL names.
	svc := convert[corev1.Service](t, objs.must(t, "Service", "vigil"))
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.StrVal != "http" {
		t.Errorf("Service vigil ports %+v, want 80 -> http", svc.Spec.Ports)
	}
	for _, s := range []*corev1.Service{svc, convert[corev1.Service](t, objs.must(t, "Service", "vigil-metrics"))} {
		if !selects(s.Spec.Selector, pod.Labels) {
			t.Errorf("Service %s selector %v does not select the manager's pods %v", s.Name, s.Spec.Selector, pod.Labels)
		}
	}
}

type chartMeta struct {
	APIVersion string `json:"apiVersion"`
	Name       string `json:"name"`
	Version    string `json:"version"`
	AppVersion string `json:"appVersion"`
}

func readChart(t *testing.T) chartMeta {
	t.Helper()
	var c chartMeta
	if err := yaml.Unmarshal(readRepoFile(t, chartDir+"/Chart.yaml"), &c); err != nil {
		t.Fatal(err)
	}
	if c.APIVersion != "v2" || c.Name != "vigil" || c.AppVersion == "" {
		t.Fatalf("Chart.yaml: %+v", c)
	}
	return c
}

func readRepoFile(t *testing.T, path string) []byte {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestHelmLint(t *testing.T) {
	helm, err := testenv.Tool("helm")
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	for name, extra := range map[string][]string{
		"default":               nil,
		"all features":          {"--values", allFeatures},
		"postgres":              postgres,
		"postgres all features": {"--values", allFeatures, "--values", postgresValues},
	} {
		t.Run(name, func(t *testing.T) {
			argv := append([]string{"lint", "--strict", filepath.Join(root, chartDir)}, extra...)
			out, err := exec.CommandContext(t.Context(), helm, argv...).CombinedOutput()
			if err != nil {
				t.Fatalf("helm %s: %v\n%s", strings.Join(argv, " "), err, out)
			}
		})
	}
}

// TestCRDsAreGenerated: the chart's crds/ are what `make manifests` copies
// from config/crd/bases.
func TestCRDsAreGenerated(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bases, err := filepath.Glob(filepath.Join(root, "config/crd/bases/*.yaml"))
	if err != nil || len(bases) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	chartCRDs, _ := filepath.Glob(filepath.Join(root, chartDir, "crds/*.yaml"))
	if len(chartCRDs) != len(bases) {
		t.Errorf("%s/crds has %d files, config/crd/bases %d: run make manifests", chartDir, len(chartCRDs), len(bases))
	}
	for _, base := range bases {
		want, _ := os.ReadFile(base)
		got, err := os.ReadFile(filepath.Join(root, chartDir, "crds", filepath.Base(base)))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s/crds/%s differs from config/crd/bases: run make manifests", chartDir, filepath.Base(base))
		}
	}
}

// TestPodSecurityRestricted evaluates the manager's pod, from the chart and
// from config/default, with the Pod Security Admission library at level
// restricted, latest version: what a namespace labelled
// pod-security.kubernetes.io/enforce=restricted admits.
func TestPodSecurityRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}
	evaluate := func(pod *corev1.PodTemplateSpec) policy.AggregateCheckResult {
		return policy.AggregateCheckResults(evaluator.EvaluatePod(restricted, &pod.ObjectMeta, &pod.Spec))
	}

	for _, tc := range []struct {
		name   string
		render func(t *testing.T) objects
	}{
		{"chart default", func(t *testing.T) objects { return helmTemplate(t) }},
		{"chart all features", func(t *testing.T) objects { return helmTemplate(t, "--values", allFeatures) }},
		{"chart existingClaim", func(t *testing.T) objects { return helmTemplate(t, "--set", "store.embedded.existingClaim=vigil-data") }},
		{"chart postgres", func(t *testing.T) objects { return helmTemplate(t, postgres...) }},
		{"chart postgres all features", func(t *testing.T) objects {
			return helmTemplate(t, "--values", allFeatures, "--values", postgresValues)
		}},
		{"kustomize config/default", kustomizeDefault},
		{"kustomize config/postgres", kustomizePostgres},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := tc.render(t)
			pod := objs.podTemplate(t)
			if res := evaluate(pod); !res.Allowed {
				t.Fatalf("the manager's pod violates the restricted Pod Security Standard: %s", res.ForbiddenDetail())
			}
			spec := pod.Spec
			if spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken {
				t.Error("automountServiceAccountToken is false; the manager needs its token")
			}
			c := manager(t, pod)
			if c.SecurityContext == nil || c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
				t.Error("the manager's root filesystem is not read-only")
			}
			if !strings.HasPrefix(tc.name, "chart") {
				return
			}
			if sa := convert[corev1.ServiceAccount](t, objs.must(t, "ServiceAccount", "vigil-manager")); sa.AutomountServiceAccountToken != nil && !*sa.AutomountServiceAccountToken {
				t.Error("ServiceAccount vigil-manager does not mount its token")
			}
			psc := spec.SecurityContext
			if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != 65532 || psc.RunAsGroup == nil || *psc.RunAsGroup != 65532 {
				t.Errorf("pod securityContext %+v, want runAsUser and runAsGroup 65532", psc)
			}
			// The store's volume is writable by the image's user.
			if psc == nil || psc.FSGroup == nil || *psc.FSGroup != 65532 {
				t.Errorf("pod securityContext %+v, want fsGroup 65532", psc)
			}
		})
	}

	// The evaluation is not vacuous: the chart's pod without each of its
	// securityContext settings is refused.
	for _, tc := range []struct {
		set    string
		reason string
	}{
		{"securityContext.allowPrivilegeEscalation=null", "allowPrivilegeEscalation != false"},
		{"securityContext.capabilities=null", "unrestricted capabilities"},
		{"podSecurityContext.seccompProfile=null", "seccompProfile"},
		{"podSecurityContext.runAsNonRoot=null,securityContext.runAsNonRoot=null", "runAsNonRoot != true"},
		{"podSecurityContext.runAsUser=0", "runAsUser=0"},
	} {
		t.Run("without "+tc.set, func(t *testing.T) {
			res := evaluate(helmTemplate(t, "--set", tc.set).podTemplate(t))
			if res.Allowed || !strings.Contains(res.ForbiddenDetail(), tc.reason) {
				t.Errorf("--set %s: allowed=%v %q, want refused for %q", tc.set, res.Allowed, res.ForbiddenDetail(), tc.reason)
			}
		})
	}
}

// normalize makes rules comparable regardless of order.
func normalize(rules []rbacv1.PolicyRule) []string {
	sorted := func(s []string) []string {
		s = slices.Clone(s)
		slices.Sort(s)
		return s
	}
	out := make([]string, 0, len(rules))
	for _, r := range rules {
		out = append(out, fmt.Sprintf("apiGroups=%q resources=%q resourceNames=%q nonResourceURLs=%q verbs=%q",
			sorted(r.APIGroups), sorted(r.Resources), sorted(r.ResourceNames), sorted(r.NonResourceURLs), sorted(r.Verbs)))
	}
	slices.Sort(out)
	return out
}

func rulesEqual(t *testing.T, what string, got, want []rbacv1.PolicyRule) {
	t.Helper()
	g, w := normalize(got), normalize(want)
	if slices.Equal(g, w) {
		return
	}
	var diff []string
	for _, r := range w {
		if !slices.Contains(g, r) {
			diff = append(diff, "missing: "+r)
		}
	}
	for _, r := range g {
		if !slices.Contains(w, r) {
			diff = append(diff, "extra:   "+r)
		}
	}
	if len(diff) == 0 { // the same rules, some of them repeated
		diff = append(diff, fmt.Sprintf("%d rules, want %d", len(g), len(w)))
	}
	t.Errorf("%s: rules differ\n%s", what, strings.Join(diff, "\n"))
}

// TestRBACMatchesGeneratedRoles: the chart's roles have exactly the rules
// `make manifests` generates from the markers in internal/rbac.
func TestRBACMatchesGeneratedRoles(t *testing.T) {
	objs := helmTemplate(t)
	for file, name := range map[string]string{
		"config/rbac/role.yaml":                "vigil-manager-role",
		"config/rbac/cronjobs/role.yaml":       "vigil-cronjobs",
		"config/rbac/pingurlsecrets/role.yaml": "vigil-ping-url-secrets",
		"config/rbac/signin/role.yaml":         "vigil-dashboard-signin",
	} {
		t.Run(name, func(t *testing.T) {
			generated, err := devenv.DecodeObjects(readRepoFile(t, file))
			if err != nil || len(generated) != 1 || generated[0].GetKind() != "ClusterRole" {
				t.Fatalf("%s: want one ClusterRole, got %d objects (%v)", file, len(generated), err)
			}
			want := convert[rbacv1.ClusterRole](t, &generated[0])
			got := convert[rbacv1.ClusterRole](t, objs.must(t, "ClusterRole", name))
			rulesEqual(t, name+" vs "+file, got.Rules, want.Rules)
		})
	}
}

// TestRBACMatchesKustomize: with default values the chart has the roles and
// bindings of config/default, and in PostgreSQL mode those of
// config/postgres (the leader-election Role and RoleBinding too), by name,
// with the same rules, aggregation labels, role references and subjects.
func TestRBACMatchesKustomize(t *testing.T) {
	t.Run("embedded", func(t *testing.T) {
		chart, kust := helmTemplate(t), kustomizeDefault(t)
		// Neither install elects a leader, so neither grants leases.
		noLeaderElectionRBAC(t, kust)
		rbacMatches(t, chart, kust)
	})
	t.Run("postgres", func(t *testing.T) {
		chart, kust := helmTemplate(t, postgres...), kustomizePostgres(t)
		for _, o := range []objects{chart, kust} {
			o.must(t, "Role", "vigil-leader-election-role")
			o.must(t, "RoleBinding", "vigil-leader-election-rolebinding")
		}
		rbacMatches(t, chart, kust)
	})
}

func rbacMatches(t *testing.T, chart, kust objects) {
	t.Helper()
	rbacKinds := []string{"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding", "ServiceAccount"}
	ids := func(o objects) []string {
		var s []string
		for _, u := range o {
			if slices.Contains(rbacKinds, u.GetKind()) {
				s = append(s, u.GetKind()+" "+u.GetNamespace()+"/"+u.GetName())
			}
		}
		slices.Sort(s)
		return s
	}
	if g, w := ids(chart), ids(kust); !slices.Equal(g, w) {
		t.Errorf("RBAC objects differ\nchart:     %q\nkustomize: %q", g, w)
	}
	for _, k := range kust {
		c := chart.get(k.GetKind(), k.GetName())
		if c == nil {
			continue // reported above
		}
		switch k.GetKind() {
		case "Role", "ClusterRole":
			want, got := convert[rbacv1.ClusterRole](t, &k), convert[rbacv1.ClusterRole](t, c)
			rulesEqual(t, k.GetKind()+" "+k.GetName(), got.Rules, want.Rules)
			for l, v := range want.Labels {
				if strings.HasPrefix(l, "rbac.authorization.k8s.io/") && got.Labels[l] != v {
					t.Errorf("%s %s: label %s=%q, want %q", k.GetKind(), k.GetName(), l, got.Labels[l], v)
				}
			}
		case "RoleBinding", "ClusterRoleBinding":
			want, got := convert[rbacv1.RoleBinding](t, &k), convert[rbacv1.RoleBinding](t, c)
			if got.RoleRef != want.RoleRef {
				t.Errorf("%s %s: roleRef %+v, want %+v", k.GetKind(), k.GetName(), got.RoleRef, want.RoleRef)
			}
			if !slices.Equal(got.Subjects, want.Subjects) {
				t.Errorf("%s %s: subjects %+v, want %+v", k.GetKind(), k.GetName(), got.Subjects, want.Subjects)
			}
		}
	}
}

// managerFlags are the flags `vigil manager` accepts, read from its help.
var managerFlags = sync.OnceValues(func() (map[string]bool, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	out := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		out <- b
	}()
	stdout := os.Stdout
	os.Stdout = w
	code := cli.Main([]string{"manager", "--help"})
	os.Stdout = stdout
	w.Close()
	help := <-out
	if code != 0 {
		return nil, fmt.Errorf("vigil manager --help: exit code %d\n%s", code, help)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-[A-Za-z], )?--([a-z0-9][a-z0-9-]*)`).FindAllSubmatch(help, -1) {
		flags[string(m[1])] = true
	}
	if !flags["base-url"] || !flags["zap-log-level"] {
		return nil, fmt.Errorf("no --base-url or --zap-log-level in vigil manager --help:\n%s", help)
	}
	return flags, nil
})

// TestArgsAreManagerFlags: every argument both installs pass is a flag
// `vigil manager` has, so the manager does not refuse to start.
func TestArgsAreManagerFlags(t *testing.T) {
	flags, err := managerFlags()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		render func(t *testing.T) objects
	}{
		{"chart default", func(t *testing.T) objects { return helmTemplate(t) }},
		{"chart all features", func(t *testing.T) objects { return helmTemplate(t, "--values", allFeatures) }},
		{"chart cronJobs disabled", func(t *testing.T) objects { return helmTemplate(t, "--set", "cronJobs.enabled=false") }},
		{"chart heartbeat from a Secret", func(t *testing.T) objects {
			return helmTemplate(t, "--set", "heartbeat.existingSecret=hb,heartbeat.interval=2m")
		}},
		{"chart existingClaim", func(t *testing.T) objects { return helmTemplate(t, "--set", "store.embedded.existingClaim=vigil-data") }},
		{"chart postgres", func(t *testing.T) objects { return helmTemplate(t, postgres...) }},
		{"chart postgres all features", func(t *testing.T) objects {
			return helmTemplate(t, "--values", allFeatures, "--values", postgresValues)
		}},
		{"kustomize config/default", kustomizeDefault},
		{"kustomize config/postgres", kustomizePostgres},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := args(t, tc.render(t))
			if len(args) == 0 || args[0] != "manager" {
				t.Fatalf("args %q do not start with the manager command", args)
			}
			for _, a := range args[1:] {
				name, ok := strings.CutPrefix(a, "--")
				name, _, _ = strings.Cut(name, "=")
				if !ok || !flags[name] {
					t.Errorf("argument %q is not a flag of vigil manager", a)
				}
			}
		})
	}
}

// TestPortsAndProbes: the container ports are the addresses the manager
// binds, the probes hit /healthz and /readyz on the probes port,
// POD_NAMESPACE (the lease's namespace) comes from the downward API, and
// leader election is off with the embedded store and on with PostgreSQL, in
// every install.
func TestPortsAndProbes(t *testing.T) {
	for _, tc := range []struct {
		name        string
		render      func(t *testing.T) objects
		leaderElect string
	}{
		{"chart", func(t *testing.T) objects { return helmTemplate(t) }, "false"},
		{"kustomize config/default", kustomizeDefault, "false"},
		{"chart postgres", func(t *testing.T) objects { return helmTemplate(t, postgres...) }, "true"},
		{"kustomize config/postgres", kustomizePostgres, "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := manager(t, tc.render(t).podTemplate(t))
			ports := map[string]int32{}
			for _, p := range c.Ports {
				ports[p.Name] = p.ContainerPort
			}
			for port, bind := range map[string]string{"http": "http-bind-address", "metrics": "metrics-bind-address", "probes": "health-probe-bind-address"} {
				wantFlag(t, c.Args, bind, fmt.Sprintf(":%d", ports[port]))
			}
			wantFlag(t, c.Args, "leader-elect", tc.leaderElect)
			if ports["http"] != 8000 || ports["metrics"] != 8443 || ports["probes"] != 8081 {
				t.Errorf("ports %v, want http 8000, metrics 8443, probes 8081", ports)
			}
			for _, p := range []struct {
				kind  string
				probe *corev1.Probe
				path  string
			}{{"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
				if p.probe == nil || p.probe.HTTPGet == nil {
					t.Errorf("no HTTP %s probe", p.kind)
					continue
				}
				if g := p.probe.HTTPGet; g.Path != p.path || g.Port.String() != "probes" {
					t.Errorf("%s probe %s on port %s, want %s on probes", p.kind, g.Path, g.Port.String(), p.path)
				}
			}
			var podNS *corev1.EnvVar
			for i := range c.Env {
				if c.Env[i].Name == "POD_NAMESPACE" {
					podNS = &c.Env[i]
				}
			}
			if podNS == nil || podNS.ValueFrom == nil || podNS.ValueFrom.FieldRef == nil || podNS.ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("POD_NAMESPACE %+v, want metadata.namespace from the downward API", podNS)
			}
		})
	}
}

// bindingsTo returns the bindings of kind whose roleRef is the ClusterRole
// role, by namespace ("" for a ClusterRoleBinding).
func bindingsTo(t *testing.T, objs objects, kind, role string) map[string]*rbacv1.RoleBinding {
	t.Helper()
	return bindingsToKind(t, objs, kind, "ClusterRole", role)
}

// bindingsToKind returns the bindings of kind whose roleRef is the role of
// roleKind and name, by namespace.
func bindingsToKind(t *testing.T, objs objects, kind, roleKind, role string) map[string]*rbacv1.RoleBinding {
	t.Helper()
	out := map[string]*rbacv1.RoleBinding{}
	for _, u := range objs.ofKind(kind) {
		b := convert[rbacv1.RoleBinding](t, &u)
		if b.RoleRef.Kind == roleKind && b.RoleRef.Name == role {
			out[b.Namespace] = b
		}
	}
	return out
}

// rolesNamed returns the Roles named name, by namespace.
func rolesNamed(t *testing.T, objs objects, name string) map[string]*rbacv1.Role {
	t.Helper()
	out := map[string]*rbacv1.Role{}
	for _, u := range objs.ofKind("Role") {
		if u.GetName() == name {
			out[u.GetNamespace()] = convert[rbacv1.Role](t, &u)
		}
	}
	return out
}

// generatedRules are the rules `make manifests` wrote into file.
func generatedRules(t *testing.T, file string) []rbacv1.PolicyRule {
	t.Helper()
	generated, err := devenv.DecodeObjects(readRepoFile(t, file))
	if err != nil || len(generated) != 1 {
		t.Fatalf("%s: want one role, got %d objects (%v)", file, len(generated), err)
	}
	return convert[rbacv1.ClusterRole](t, &generated[0]).Rules
}

var managerSubject = []rbacv1.Subject{{Kind: "ServiceAccount", Name: "vigil-manager", Namespace: namespace}}

// managerRoles are the manager's roles that watchNamespaces puts in each
// listed namespace, with the files of their generated rules.
var managerRoles = map[string]string{
	"vigil-manager-role": "config/rbac/role.yaml",
	"vigil-cronjobs":     "config/rbac/cronjobs/role.yaml",
}

func TestWatchNamespaces(t *testing.T) {
	t.Run("all by default", func(t *testing.T) {
		objs := helmTemplate(t)
		noFlag(t, args(t, objs), "namespaces")
		for role := range managerRoles {
			if crb := bindingsTo(t, objs, "ClusterRoleBinding", role); len(crb) != 1 || !slices.Equal(crb[""].Subjects, managerSubject) {
				t.Errorf("%s: ClusterRoleBindings %v, want one to the manager", role, crb)
			}
			if rb := bindingsTo(t, objs, "RoleBinding", role); len(rb) != 0 {
				t.Errorf("%s: RoleBindings in %v", role, keys(rb))
			}
			if r := rolesNamed(t, objs, role); len(r) != 0 {
				t.Errorf("%s: Roles in %v", role, keys(r))
			}
		}
	})
	for name, extra := range map[string][]string{"embedded": nil, "postgres": postgres} {
		t.Run("a and b, "+name, func(t *testing.T) {
			objs := helmTemplate(t, append([]string{"--set", "watchNamespaces={a,b}"}, extra...)...)
			wantFlag(t, args(t, objs), "namespaces", "a,b")
			for role, file := range managerRoles {
				// A Role with the generated rules in each listed namespace,
				// bound there to the manager; no ClusterRole to bind.
				if objs.get("ClusterRole", role) != nil {
					t.Errorf("ClusterRole %s rendered with watchNamespaces set", role)
				}
				roles := rolesNamed(t, objs, role)
				if got := keys(roles); !slices.Equal(got, []string{"a", "b"}) {
					t.Errorf("Role %s in %v, want a and b", role, got)
				}
				for ns, r := range roles {
					rulesEqual(t, fmt.Sprintf("Role %s in %s vs %s", role, ns, file), r.Rules, generatedRules(t, file))
				}
				rb := bindingsToKind(t, objs, "RoleBinding", "Role", role)
				if got := keys(rb); !slices.Equal(got, []string{"a", "b"}) {
					t.Errorf("%s: RoleBindings in %v, want a and b", role, got)
				}
				for ns, b := range rb {
					if !slices.Equal(b.Subjects, managerSubject) {
						t.Errorf("%s: RoleBinding in %s has subjects %+v", role, ns, b.Subjects)
					}
				}
			}
			// Cluster-wide, the manager may only review scrapers' tokens
			// and access (metrics authentication), which reads nothing.
			for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
				for _, u := range objs.ofKind(kind) {
					b := convert[rbacv1.RoleBinding](t, &u)
					if !slices.Equal(b.Subjects, managerSubject) {
						continue
					}
					switch {
					case kind == "ClusterRoleBinding" && b.RoleRef.Name != "vigil-metrics-auth-role":
						t.Errorf("ClusterRoleBinding %s binds %s to the manager with watchNamespaces set", b.Name, b.RoleRef.Name)
					case kind == "RoleBinding" && !slices.Contains([]string{"a", "b", namespace}, b.Namespace):
						t.Errorf("RoleBinding %s in %s: outside the listed namespaces and the release's", b.Name, b.Namespace)
					}
				}
			}
			if len(bindingsTo(t, objs, "ClusterRoleBinding", "vigil-metrics-auth-role")) != 1 {
				t.Error("no ClusterRoleBinding for vigil-metrics-auth-role")
			}
			if name == "embedded" {
				noLeaderElectionRBAC(t, objs) // still no leader election
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	slices.Sort(k)
	return k
}

func TestCronJobsDisabled(t *testing.T) {
	objs := helmTemplate(t, "--set", "cronJobs.enabled=false")
	if objs.get("ClusterRole", "vigil-cronjobs") != nil {
		t.Error("ClusterRole vigil-cronjobs rendered with cronJobs.enabled=false")
	}
	for _, kind := range []string{"ClusterRoleBinding", "RoleBinding"} {
		if b := bindingsTo(t, objs, kind, "vigil-cronjobs"); len(b) != 0 {
			t.Errorf("%s to vigil-cronjobs rendered with cronJobs.enabled=false", kind)
		}
	}
	a := args(t, objs)
	wantFlag(t, a, "cronjobs", "false")
	noFlag(t, a, "cronjob-time-zone")
	// With watchNamespaces too, no cronjobs Role and no RoleBinding to it.
	namespaced := helmTemplate(t, "--set", "cronJobs.enabled=false,watchNamespaces={a}")
	if b := bindingsToKind(t, namespaced, "RoleBinding", "Role", "vigil-cronjobs"); len(b) != 0 {
		t.Errorf("RoleBindings to vigil-cronjobs in %v with cronJobs.enabled=false", keys(b))
	}
	if r := rolesNamed(t, namespaced, "vigil-cronjobs"); len(r) != 0 {
		t.Errorf("Roles vigil-cronjobs in %v with cronJobs.enabled=false", keys(r))
	}
}

func TestManagerSettings(t *testing.T) {
	a := args(t, helmTemplate(t, "--set", strings.Join([]string{
		"baseURL=https://hc.example.com/",
		"checkLimit=500",
		"pingLogLimit=1000",
		"flipLimit=500",
		"bodyBytesLimit=1048576",
		"projectSecretLimit=40",
		"apiKeyLimit=5000",
		"pingBodyLimit=2000000",
		"maxConnections=100",
		"maxConnectionsPerSource=20",
		"ipv6SourcePrefix=56",
		"requestBodyBudget=1048576",
		"checkWriteSlots=2",
		"checkWritesWaiting=5",
		"trustedProxies={10.0.0.0/8,192.168.0.1}",
		"notify.maxAttempts=3",
		"notify.workers=64",
		"notify.namespaceWorkers=6",
		"notify.flapLimit=-1",
		"notify.flapWindow=30m",
		"notify.flapSteady=5m",
		"notify.stormThreshold=-1",
		"notify.stormWindow=5m",
		"notify.stormGather=30s",
		"notify.egressAllow={10.1.2.0/24,smtp.mail.svc}",
		"notify.egressAllowRelays=true",
		"notify.egressDeny={10.96.0.0/12,fd00:10:96::/112}",
		"cronJobs.timeZone=Europe/Riga",
		"logLevel=debug",
	}, ","), "--set-json", `extraArgs=["--metrics-secure=false"]`))
	for name, want := range map[string]string{
		"base-url":                   "https://hc.example.com",
		"check-limit":                "500",
		"ping-log-limit":             "1000",
		"flip-limit":                 "500",
		"body-bytes-limit":           "1048576",
		"project-secret-limit":       "40",
		"api-key-limit":              "5000",
		"ping-body-limit":            "2000000",
		"max-connections":            "100",
		"max-connections-per-source": "20",
		"ipv6-source-prefix":         "56",
		"request-body-budget":        "1048576",
		"check-write-slots":          "2",
		"check-writes-waiting":       "5",
		"trusted-proxies":            "10.0.0.0/8,192.168.0.1",
		"notify-max-attempts":        "3",
		"notify-workers":             "64",
		"notify-namespace-workers":   "6",
		"flap-limit":                 "-1",
		"flap-window":                "30m",
		"flap-steady":                "5m",
		"storm-threshold":            "-1",
		"storm-window":               "5m",
		"storm-gather":               "30s",
		"egress-allow":               "10.1.2.0/24,smtp.mail.svc",
		"egress-deny":                "10.96.0.0/12,fd00:10:96::/112",
		"egress-allow-relays":        "true",
		"cronjob-time-zone":          "Europe/Riga",
		"zap-log-level":              "debug",
		"metrics-secure":             "false",
	} {
		wantFlag(t, a, name, want)
	}
	wantFlag(t, a, "notify-namespace-workers", "6")
}

// TestProjectLimits: projectLimits fills the ConfigMap the manager reads,
// and the manager may read that one ConfigMap only.
func TestProjectLimits(t *testing.T) {
	objs := helmTemplate(t, "--set", "projectLimits.team-a.checkLimit=200,projectLimits.team-a.pingLogLimit=1000,projectLimits.team-b.checkLimit=5,"+
		"projectLimits.team-c.projectSecretLimit=40,projectLimits.team-c.apiKeyLimit=5000,"+
		"projectLimits.team-d.channelLimit=300,projectLimits.team-d.maintenanceWindowLimit=301,projectLimits.team-d.statusPageLimit=50,"+
		"projectLimits.team-d.cronJobPolicyLimit=302,projectLimits.team-a.bodyBytesLimit=5000000",
		"--set-string", "projectLimits.team-b.bodyBytesLimit=256Mi",
		"--set", "projectLimits.team-c.egressAllow={10.1.2.0/24,smtp.mail.svc}")
	cm := objs.must(t, "ConfigMap", "vigil-limits")
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	want := map[string]string{"team-a.check-limit": "200", "team-a.ping-log-limit": "1000", "team-b.check-limit": "5",
		"team-a.body-bytes-limit": "5000000", "team-b.body-bytes-limit": "256Mi",
		"team-c.project-secret-limit": "40", "team-c.api-key-limit": "5000", "team-c.egress-allow": "10.1.2.0/24, smtp.mail.svc",
		"team-d.channel-limit": "300", "team-d.maintenance-window-limit": "301", "team-d.status-page-limit": "50",
		"team-d.cronjob-policy-limit": "302"}
	if !reflect.DeepEqual(data, want) {
		t.Errorf("limits ConfigMap data = %v, want %v", data, want)
	}
	role := objs.must(t, "Role", "vigil-limits-reader")
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	if len(rules) != 1 || fmt.Sprint(rules[0].(map[string]any)["resourceNames"]) != "[vigil-limits]" {
		t.Errorf("limits Role rules = %v, want the one ConfigMap by name", rules)
	}
}

// TestPodValues: image and scheduling values reach the pod.
func TestPodValues(t *testing.T) {
	d := helmTemplate(t, "--values", allFeatures, "--set", "image.repository=registry.example.com/vigil,image.tag=v9,image.pullPolicy=Always").statefulSet(t)
	spec := d.Spec.Template.Spec
	c := manager(t, &d.Spec.Template)
	if c.Image != "registry.example.com/vigil:v9" || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %s pullPolicy %s", c.Image, c.ImagePullPolicy)
	}
	if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("imagePullSecrets %v", spec.ImagePullSecrets)
	}
	if d.Spec.Template.Annotations["example.com/a"] != "1" || d.Spec.Template.Labels["team"] != "platform" {
		t.Errorf("pod annotations %v labels %v", d.Spec.Template.Annotations, d.Spec.Template.Labels)
	}
	if !selects(d.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("selector %v does not select the pod labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
	}
	if spec.NodeSelector["kubernetes.io/os"] != "linux" || len(spec.Tolerations) != 1 || spec.Affinity == nil || spec.Affinity.PodAntiAffinity == nil ||
		spec.PriorityClassName != "system-cluster-critical" {
		t.Errorf("scheduling: nodeSelector %v tolerations %v affinity %v priorityClassName %q", spec.NodeSelector, spec.Tolerations, spec.Affinity, spec.PriorityClassName)
	}
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOMEMLIMIT" && e.Value == "400MiB" }) {
		t.Errorf("extraEnv missing from %v", c.Env)
	}
}

// TestNames: release "vigil" names objects as the kustomize install does;
// another release name prefixes them, the usual Helm convention.
func TestNames(t *testing.T) {
	for _, tc := range []struct {
		release string
		args    []string
		prefix  string
	}{
		{"vigil", nil, "vigil"},
		{"prod", nil, "prod-vigil"},
		{"prod", []string{"--set", "fullnameOverride=monitor"}, "monitor"},
	} {
		t.Run(tc.prefix, func(t *testing.T) {
			objs := helmTemplateAs(t, tc.release, tc.args...)
			sts := convert[appsv1.StatefulSet](t, objs.must(t, "StatefulSet", tc.prefix+"-manager"))
			if sts.Spec.ServiceName != tc.prefix {
				t.Errorf("serviceName %q, want the API Service %s", sts.Spec.ServiceName, tc.prefix)
			}
			objs.must(t, "ServiceAccount", tc.prefix+"-manager")
			objs.must(t, "ClusterRole", tc.prefix+"-manager-role")
			objs.must(t, "ClusterRole", tc.prefix+"-cronjobs")
			objs.must(t, "ClusterRole", tc.prefix+"-ping-url-secrets")
			objs.must(t, "Service", tc.prefix)
			wantFlag(t, args(t, objs), "base-url", "http://"+tc.prefix+".vigil-system.svc")
		})
	}
	wantFlag(t, args(t, helmTemplate(t, "--set", "service.port=8080")), "base-url", "http://vigil.vigil-system.svc:8080")
}

func TestHeartbeat(t *testing.T) {
	env := func(c corev1.Container) *corev1.EnvVar {
		for i := range c.Env {
			if c.Env[i].Name == "VIGIL_HEARTBEAT_URL" {
				return &c.Env[i]
			}
		}
		return nil
	}
	t.Run("url", func(t *testing.T) {
		c := manager(t, helmTemplate(t, "--set", "heartbeat.url=https://hc-ping.com/abc,heartbeat.interval=30s").podTemplate(t))
		wantFlag(t, c.Args, "heartbeat-url", "https://hc-ping.com/abc")
		wantFlag(t, c.Args, "heartbeat-interval", "30s")
		if e := env(c); e != nil {
			t.Errorf("VIGIL_HEARTBEAT_URL set with heartbeat.url: %+v", e)
		}
	})
	t.Run("existing Secret", func(t *testing.T) {
		c := manager(t, helmTemplate(t, "--set", "heartbeat.existingSecret=vigil-heartbeat,heartbeat.secretKey=ping-url").podTemplate(t))
		noFlag(t, c.Args, "heartbeat-url")
		e := env(c)
		if e == nil || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
			e.ValueFrom.SecretKeyRef.Name != "vigil-heartbeat" || e.ValueFrom.SecretKeyRef.Key != "ping-url" {
			t.Errorf("VIGIL_HEARTBEAT_URL %+v, want from Secret vigil-heartbeat key ping-url", e)
		}
	})
	t.Run("off", func(t *testing.T) {
		c := manager(t, helmTemplate(t, "--set", "heartbeat.interval=30s").podTemplate(t))
		noFlag(t, c.Args, "heartbeat-url")
		noFlag(t, c.Args, "heartbeat-interval")
		if e := env(c); e != nil {
			t.Errorf("VIGIL_HEARTBEAT_URL set without a heartbeat: %+v", e)
		}
	})
}

// TestOptionalObjects: each optional feature renders its objects when on,
// and none when off.
func TestOptionalObjects(t *testing.T) {
	for _, tc := range []struct {
		feature string
		on, off []string
		kind    string
	}{
		{"ingress", []string{"--set", "ingress.enabled=true"}, nil, "Ingress"},
		{"serviceMonitor", []string{"--set", "serviceMonitor.enabled=true"}, nil, "ServiceMonitor"},
		{"prometheusRule", []string{"--set", "prometheusRule.enabled=true"}, nil, "PrometheusRule"},
		{"networkPolicy", []string{"--set", "networkPolicy.enabled=true"}, nil, "NetworkPolicy"},
		{"backup", []string{"--set", "store.embedded.backup.enabled=true"}, nil, "CronJob"},
	} {
		t.Run(tc.feature, func(t *testing.T) {
			if got := helmTemplate(t, tc.on...).ofKind(tc.kind); len(got) != 1 {
				t.Errorf("%v: want one %s, got %s", tc.on, tc.kind, got)
			}
			if got := helmTemplate(t, tc.off...).ofKind(tc.kind); len(got) != 0 {
				t.Errorf("%v: want no %s, got %s", tc.off, tc.kind, got)
			}
		})
	}
}

// TestBackupCronJob: the store's backup runs vigil store backup beside
// the manager (its ReadWriteOnce volume), into a volume of its own kept
// by helm uninstall or one the user names; PostgreSQL mode has none.
func TestBackupCronJob(t *testing.T) {
	objs := helmTemplate(t, "--set", "store.embedded.backup.enabled=true,store.embedded.backup.keep=3,store.embedded.backup.schedule=0 4 * * *")
	cj := convert[batchv1.CronJob](t, objs.must(t, "CronJob", "vigil-backup"))
	if cj.Spec.Schedule != "0 4 * * *" || cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("schedule %q, concurrency %q", cj.Spec.Schedule, cj.Spec.ConcurrencyPolicy)
	}
	pod := cj.Spec.JobTemplate.Spec.Template.Spec
	c := pod.Containers[0]
	if want := []string{"store", "backup", "--from=sqlite:/var/lib/vigil/vigil.db", "--dir=/backups", "--keep=3"}; !slices.Equal(c.Args, want) {
		t.Errorf("args %v, want %v", c.Args, want)
	}
	claims := map[string]string{}
	for _, v := range pod.Volumes {
		claims[v.Name] = v.PersistentVolumeClaim.ClaimName
	}
	if claims["data"] != "data-vigil-manager-0" || claims["backups"] != "vigil-backups" {
		t.Errorf("volumes %v: want the manager's claim and vigil-backups", claims)
	}
	sts := objs.must(t, "StatefulSet", "vigil-manager")
	claim, _, _ := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates")
	if name, _, _ := unstructured.NestedString(claim[0].(map[string]any), "metadata", "name"); name+"-vigil-manager-0" != claims["data"] {
		t.Errorf("the StatefulSet's claim template %q does not make %s", name, claims["data"])
	}
	term := pod.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
	if term.TopologyKey != "kubernetes.io/hostname" || term.LabelSelector.MatchLabels["app.kubernetes.io/component"] != "manager" {
		t.Errorf("affinity %+v: want the manager's node", term)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || c.SecurityContext == nil || !*c.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("the backup pod has API access or a writable root")
	}
	pvc := objs.must(t, "PersistentVolumeClaim", "vigil-backups")
	if pvc.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
		t.Errorf("the backups' claim is not kept by helm uninstall: %v", pvc.GetAnnotations())
	}

	named := helmTemplate(t, "--set", "store.embedded.backup.enabled=true,store.embedded.backup.existingClaim=nfs-backups,store.embedded.existingClaim=vigil-data")
	if got := named.ofKind("PersistentVolumeClaim"); len(got) != 0 {
		t.Errorf("claims made though both are named: %s", got)
	}
	pod = convert[batchv1.CronJob](t, named.must(t, "CronJob", "vigil-backup")).Spec.JobTemplate.Spec.Template.Spec
	if pod.Volumes[0].PersistentVolumeClaim.ClaimName != "vigil-data" || pod.Volumes[1].PersistentVolumeClaim.ClaimName != "nfs-backups" {
		t.Errorf("volumes %+v: want vigil-data and nfs-backups", pod.Volumes)
	}
	if cj.Spec.StartingDeadlineSeconds == nil || cj.Spec.JobTemplate.Spec.ActiveDeadlineSeconds == nil ||
		*cj.Spec.JobTemplate.Spec.ActiveDeadlineSeconds != 3600 {
		t.Errorf("a stuck backup could block the next ones: startingDeadlineSeconds %v, activeDeadlineSeconds %v",
			cj.Spec.StartingDeadlineSeconds, cj.Spec.JobTemplate.Spec.ActiveDeadlineSeconds)
	}
	if _, err := testenv.HelmTemplate(t.Context(), chartDir, release, namespace, "--set",
		"store.embedded.backup.enabled=true,store.embedded.accessModes[0]=ReadWriteOncePod"); err == nil || !strings.Contains(err.Error(), "ReadWriteOncePod") {
		t.Errorf("a backup of a ReadWriteOncePod volume: %v, want refused", err)
	}
	if got := helmTemplate(t, append(slices.Clone(postgres), "--set", "store.embedded.backup.enabled=true")...).ofKind("CronJob"); len(got) != 0 {
		t.Errorf("a backup CronJob in PostgreSQL mode: %s", got)
	}
}

func TestIngress(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		baseURL string
	}{
		{"http", []string{"--set", "ingress.enabled=true,ingress.className=nginx"}, "http://vigil.example.com"},
		{"tls", []string{"--set", "ingress.enabled=true,ingress.className=nginx", "--set-json", `ingress.tls=[{"secretName":"vigil-tls","hosts":["vigil.example.com"]}]`}, "https://vigil.example.com"},
		{"baseURL wins", []string{"--set", "ingress.enabled=true,baseURL=https://other.example.com"}, "https://other.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := helmTemplate(t, tc.args...)
			wantFlag(t, args(t, objs), "base-url", tc.baseURL)
			ing := convert[networkingv1.Ingress](t, objs.must(t, "Ingress", "vigil"))
			if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != "vigil.example.com" || ing.Spec.Rules[0].HTTP == nil {
				t.Fatalf("rules %+v", ing.Spec.Rules)
			}
			for _, p := range ing.Spec.Rules[0].HTTP.Paths {
				if b := p.Backend.Service; b == nil || b.Name != "vigil" || b.Port.Name != "http" {
					t.Errorf("path %s backend %+v, want Service vigil port http", p.Path, p.Backend)
				}
			}
			if tc.name == "tls" && (len(ing.Spec.TLS) != 1 || ing.Spec.TLS[0].SecretName != "vigil-tls") {
				t.Errorf("tls %+v", ing.Spec.TLS)
			}
		})
	}
}

func TestServiceMonitor(t *testing.T) {
	objs := helmTemplate(t, "--set", "serviceMonitor.enabled=true,serviceMonitor.labels.release=prometheus")
	sm := objs.must(t, "ServiceMonitor", "vigil-metrics")
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("apiVersion %s labels %v", sm.GetAPIVersion(), sm.GetLabels())
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("endpoints %v", endpoints)
	}
	ep := endpoints[0].(map[string]any)
	skip, _, _ := unstructured.NestedBool(ep, "tlsConfig", "insecureSkipVerify")
	if ep["scheme"] != "https" || ep["port"] != "https" || ep["path"] != "/metrics" ||
		ep["bearerTokenFile"] != "/var/run/secrets/kubernetes.io/serviceaccount/token" || !skip {
		t.Errorf("endpoint %v", ep)
	}
	// It selects the metrics Service, and only it.
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	metrics := convert[corev1.Service](t, objs.must(t, "Service", "vigil-metrics"))
	if !selects(sel, metrics.Labels) || selects(sel, objs.must(t, "Service", "vigil").GetLabels()) {
		t.Errorf("selector %v must select Service vigil-metrics %v and not vigil", sel, metrics.Labels)
	}
	if !slices.ContainsFunc(metrics.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "https" && p.Port == 8443 }) {
		t.Errorf("Service vigil-metrics ports %+v, want https 8443", metrics.Spec.Ports)
	}
}

// TestPrometheusRule checks the alerts' shape. That every series they read
// is one the manager exports is checked against a live manager's /metrics in
// test/e2e.
func TestPrometheusRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		job  string
	}{
		{"default job", nil, "vigil-metrics"},
		{"custom job", []string{"--set", "prometheusRule.job=vigil-custom"}, "vigil-custom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := helmTemplate(t, append([]string{"--set", "prometheusRule.enabled=true"}, tc.args...)...)
			pr := objs.must(t, "PrometheusRule", "vigil")
			groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
			alerts := map[string]map[string]any{}
			for _, g := range groups {
				rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
				for _, r := range rules {
					r := r.(map[string]any)
					alerts[r["alert"].(string)] = r
				}
			}
			// No VigilNoLeader: the single replica holds no lease.
			if got := keys(alerts); !slices.Equal(got, []string{"VigilCheckDown", "VigilDeliveriesFailing", "VigilDown", "VigilStoreFull", "VigilStoreVolumeFilling"}) {
				t.Fatalf("alerts %v, want VigilCheckDown, VigilDeliveriesFailing, VigilDown, VigilStoreFull and VigilStoreVolumeFilling", got)
			}
			failing, _ := alerts["VigilDeliveriesFailing"]["expr"].(string)
			if !strings.Contains(failing, `outcome!="delivered"}[15m]`) || !strings.Contains(failing, "unless") ||
				!strings.Contains(failing, `outcome="delivered"}[15m]`) || !strings.Contains(failing, fmt.Sprintf("job=%q", tc.job)) ||
				!strings.Contains(failing, "sum by (kind)") {
				t.Errorf("VigilDeliveriesFailing expr %q", failing)
			}
			filling, _ := alerts["VigilStoreVolumeFilling"]["expr"].(string)
			if !strings.Contains(filling, `kind="available"`) || !strings.Contains(filling, `kind="size"`) || !strings.HasSuffix(filling, "< 0.1") {
				t.Errorf("VigilStoreVolumeFilling expr %q", filling)
			}
			down := alerts["VigilDown"]
			if want := fmt.Sprintf(`absent(up{job=%q, namespace=%q} == 1)`, tc.job, namespace); down["expr"] != want || down["for"] != "5m" {
				t.Errorf("VigilDown expr %q for %v, want %q for 5m", down["expr"], down["for"], want)
			}
			for name, a := range alerts {
				if expr, _ := a["expr"].(string); strings.Contains(expr, "leader_election") {
					t.Errorf("%s reads leader-election metrics: %q", name, expr)
				}
			}
			checkDown, _ := alerts["VigilCheckDown"]["expr"].(string)
			if !strings.Contains(checkDown, `vigil_checks{`) || !strings.Contains(checkDown, `state="down"`) || !strings.Contains(checkDown, fmt.Sprintf("job=%q", tc.job)) {
				t.Errorf("VigilCheckDown expr %q", checkDown)
			}
			for _, a := range alerts {
				desc, _, _ := unstructured.NestedString(a, "annotations", "description")
				if strings.Contains(desc, "{{") && !strings.Contains(desc, "$labels") && !strings.Contains(desc, "$value") {
					t.Errorf("alert %s description %q", a["alert"], desc)
				}
			}
			// The default job is the name Prometheus gives the metrics Service.
			if tc.job == "vigil-metrics" {
				objs.must(t, "Service", tc.job)
			}
		})
	}
}

func TestNetworkPolicy(t *testing.T) {
	ports := func(r networkingv1.NetworkPolicyIngressRule) []string {
		var s []string
		for _, p := range r.Ports {
			s = append(s, p.Port.String())
		}
		return s
	}
	rule := func(np *networkingv1.NetworkPolicy, port string) *networkingv1.NetworkPolicyIngressRule {
		for i, r := range np.Spec.Ingress {
			if slices.Contains(ports(r), port) {
				return &np.Spec.Ingress[i]
			}
		}
		return nil
	}
	t.Run("default", func(t *testing.T) {
		objs := helmTemplate(t, "--set", "networkPolicy.enabled=true")
		np := convert[networkingv1.NetworkPolicy](t, objs.must(t, "NetworkPolicy", "vigil-manager"))
		if !selects(np.Spec.PodSelector.MatchLabels, objs.podTemplate(t).Labels) {
			t.Errorf("podSelector %v does not select the manager", np.Spec.PodSelector.MatchLabels)
		}
		if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
			t.Errorf("policyTypes %v: egress must stay open by default", np.Spec.PolicyTypes)
		}
		for _, port := range []string{"http", "probes"} {
			if r := rule(np, port); r == nil || len(r.From) != 0 {
				t.Errorf("port %s: rule %+v, want open to anywhere", port, r)
			}
		}
		if r := rule(np, "metrics"); r != nil {
			t.Errorf("metrics open without metricsFrom: %+v", r)
		}
	})
	t.Run("peers and egress", func(t *testing.T) {
		objs := helmTemplate(t, "--set", "networkPolicy.enabled=true,networkPolicy.egress.restrict=true,smtp.enabled=true",
			"--set-json", `networkPolicy.httpFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"ingress-nginx"}}}]`,
			"--set-json", `networkPolicy.metricsFrom=[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"monitoring"}}}]`,
			"--set-json", `networkPolicy.egress.rules=[{"ports":[{"port":443,"protocol":"TCP"}]}]`)
		np := convert[networkingv1.NetworkPolicy](t, objs.must(t, "NetworkPolicy", "vigil-manager"))
		for port, ns := range map[string]string{"http": "ingress-nginx", "smtp": "ingress-nginx", "metrics": "monitoring"} {
			r := rule(np, port)
			if r == nil || len(r.From) != 1 || r.From[0].NamespaceSelector == nil || r.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != ns {
				t.Errorf("port %s: rule %+v, want from namespace %s", port, r, ns)
			}
		}
		if r := rule(np, "probes"); r == nil || len(r.From) != 0 {
			t.Errorf("probes: rule %+v, want open to anywhere", r)
		}
		if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) || len(np.Spec.Egress) != 2 {
			t.Errorf("policyTypes %v egress %+v, want DNS and the given rule", np.Spec.PolicyTypes, np.Spec.Egress)
		}
	})
}

func TestSMTP(t *testing.T) {
	smtpPort := func(objs objects) (*corev1.ContainerPort, *corev1.ServicePort) {
		var cp *corev1.ContainerPort
		var sp *corev1.ServicePort
		c := manager(t, objs.podTemplate(t))
		for i := range c.Ports {
			if c.Ports[i].Name == "smtp" {
				cp = &c.Ports[i]
			}
		}
		svc := convert[corev1.Service](t, objs.must(t, "Service", "vigil"))
		for i := range svc.Spec.Ports {
			if svc.Spec.Ports[i].Name == "smtp" {
				sp = &svc.Spec.Ports[i]
			}
		}
		return cp, sp
	}
	t.Run("on", func(t *testing.T) {
		objs := helmTemplate(t, "--set", "smtp.enabled=true,smtp.domain=hc.example.com,smtp.maxConnectionsPerSource=3")
		a := args(t, objs)
		wantFlag(t, a, "smtp-bind-address", ":2525")
		wantFlag(t, a, "smtp-domain", "hc.example.com")
		wantFlag(t, a, "smtp-max-connections-per-source", "3")
		cp, sp := smtpPort(objs)
		if cp == nil || cp.ContainerPort != 2525 {
			t.Errorf("container port %+v, want smtp 2525", cp)
		}
		if sp == nil || sp.Port != 25 || sp.TargetPort.String() != "smtp" {
			t.Errorf("Service port %+v, want smtp 25 -> smtp", sp)
		}
	})
	t.Run("off", func(t *testing.T) {
		objs := helmTemplate(t)
		noFlag(t, args(t, objs), "smtp-bind-address")
		noFlag(t, args(t, objs), "smtp-max-connections-per-source")
		if cp, sp := smtpPort(objs); cp != nil || sp != nil {
			t.Errorf("smtp ports without smtp.enabled: %+v %+v", cp, sp)
		}
	})
}

// TestStatefulSet: the embedded ping store is one file, so the manager is a
// StatefulSet of one replica whatever the values, with no
// PodDisruptionBudget (one replica gets nothing from it).
func TestStatefulSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"default", nil},
		{"all features", []string{"--values", allFeatures}},
		// Values of the chart's Deployment days do nothing.
		{"old values", []string{"--set", "replicaCount=3,podDisruptionBudget.enabled=true,podDisruptionBudget.minAvailable=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := helmTemplate(t, tc.args...)
			sts := objs.statefulSet(t)
			if sts.Name != "vigil-manager" {
				t.Errorf("name %s, want vigil-manager", sts.Name)
			}
			if sts.Spec.Replicas == nil || *sts.Spec.Replicas != 1 {
				t.Errorf("replicas %v, want 1", sts.Spec.Replicas)
			}
			if sts.Spec.ServiceName != "vigil" {
				t.Errorf("serviceName %q, want the API Service vigil", sts.Spec.ServiceName)
			}
			if sts.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement {
				t.Errorf("podManagementPolicy %q, want OrderedReady", sts.Spec.PodManagementPolicy)
			}
			if sts.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType {
				t.Errorf("updateStrategy %+v, want RollingUpdate", sts.Spec.UpdateStrategy)
			}
			if sts.Spec.Selector == nil || !selects(sts.Spec.Selector.MatchLabels, sts.Spec.Template.Labels) {
				t.Errorf("selector %v does not select the pod labels %v", sts.Spec.Selector, sts.Spec.Template.Labels)
			}
			wantFlag(t, manager(t, &sts.Spec.Template).Args, "leader-elect", "false")
			noLeaderElectionRBAC(t, objs)
			if pdb := objs.ofKind("PodDisruptionBudget"); len(pdb) > 0 {
				t.Errorf("a PodDisruptionBudget is rendered: %s", pdb)
			}
		})
	}
}

// TestStore: the ping store's volume, from a volumeClaimTemplate or an
// existing claim, is mounted where --store puts the SQLite file.
func TestStore(t *testing.T) {
	const dir = "/var/lib/vigil"
	// mounted checks the data volume's mount and --store, and returns the
	// pod's volume named data, if any.
	mounted := func(t *testing.T, sts *appsv1.StatefulSet) *corev1.Volume {
		t.Helper()
		c := manager(t, &sts.Spec.Template)
		var mounts []string
		for _, m := range c.VolumeMounts {
			if m.Name == "data" {
				mounts = append(mounts, m.MountPath)
				if m.ReadOnly || m.SubPath != "" {
					t.Errorf("mount %+v, want the whole volume read-write", m)
				}
			}
		}
		if !slices.Equal(mounts, []string{dir}) {
			t.Errorf("volume data mounted at %q, want %s", mounts, dir)
		}
		wantFlag(t, c.Args, "store", "sqlite:"+dir+"/vigil.db")
		for i, v := range sts.Spec.Template.Spec.Volumes {
			if v.Name == "data" {
				return &sts.Spec.Template.Spec.Volumes[i]
			}
		}
		return nil
	}
	claim := func(t *testing.T, sts *appsv1.StatefulSet) corev1.PersistentVolumeClaim {
		t.Helper()
		if v := mounted(t, sts); v != nil {
			t.Errorf("pod volume %+v shadows the volumeClaimTemplate data", v)
		}
		if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != "data" {
			t.Fatalf("volumeClaimTemplates %+v, want one named data", sts.Spec.VolumeClaimTemplates)
		}
		return sts.Spec.VolumeClaimTemplates[0]
	}
	wantClaim := func(t *testing.T, pvc corev1.PersistentVolumeClaim, size string, modes []corev1.PersistentVolumeAccessMode) {
		t.Helper()
		if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != size {
			t.Errorf("storage request %s, want %s", got.String(), size)
		}
		if !slices.Equal(pvc.Spec.AccessModes, modes) {
			t.Errorf("accessModes %v, want %v", pvc.Spec.AccessModes, modes)
		}
	}
	storageClass := func(pvc corev1.PersistentVolumeClaim) string {
		if pvc.Spec.StorageClassName == nil {
			return "<unset>"
		}
		return fmt.Sprintf("%q", *pvc.Spec.StorageClassName)
	}

	t.Run("default", func(t *testing.T) {
		pvc := claim(t, helmTemplate(t).statefulSet(t))
		wantClaim(t, pvc, "1Gi", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce})
		if got := storageClass(pvc); got != "<unset>" {
			t.Errorf("storageClassName %s, want it unset (the default StorageClass)", got)
		}
	})
	for _, tc := range []struct{ value, want string }{
		{"fast-ssd", `"fast-ssd"`},
		{"-", `""`}, // no dynamic provisioning
	} {
		t.Run("storageClass "+tc.value, func(t *testing.T) {
			pvc := claim(t, helmTemplate(t, "--set", "store.embedded.storageClass="+tc.value).statefulSet(t))
			if got := storageClass(pvc); got != tc.want {
				t.Errorf("storageClassName %s, want %s", got, tc.want)
			}
		})
	}
	t.Run("size and accessModes", func(t *testing.T) {
		pvc := claim(t, helmTemplate(t, "--values", allFeatures).statefulSet(t))
		wantClaim(t, pvc, "5Gi", []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod})
		if got := storageClass(pvc); got != `"fast-ssd"` {
			t.Errorf("storageClassName %s, want fast-ssd", got)
		}
	})
	t.Run("existingClaim", func(t *testing.T) {
		sts := helmTemplate(t, "--set", "store.embedded.existingClaim=vigil-data,store.embedded.storageClass=fast-ssd").statefulSet(t)
		if len(sts.Spec.VolumeClaimTemplates) != 0 {
			t.Errorf("volumeClaimTemplates %+v with existingClaim", sts.Spec.VolumeClaimTemplates)
		}
		v := mounted(t, sts)
		if v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "vigil-data" || v.PersistentVolumeClaim.ReadOnly {
			t.Errorf("pod volume data %+v, want the PVC vigil-data", v)
		}
	})
}

func TestStatusWritesPerSecond(t *testing.T) {
	for _, lane := range []struct {
		value, flag string
		def, all    float64
	}{
		{"statusWritesPerSecond", "status-writes-per-second", 20, 50},
		{"statusChangesPerSecond", "status-changes-per-second", 200, 300},
	} {
		for _, tc := range []struct {
			args []string
			want float64
		}{
			{nil, lane.def},
			{[]string{"--set", lane.value + "=5"}, 5},
			{[]string{"--set", lane.value + "=0.5"}, 0.5},
			{[]string{"--set-json", lane.value + "=1000000"}, 1e6},
			{[]string{"--values", allFeatures}, lane.all},
		} {
			t.Run(fmt.Sprint(lane.value, "=", tc.want), func(t *testing.T) {
				v, ok := flag(args(t, helmTemplate(t, tc.args...)), lane.flag)
				got, err := strconv.ParseFloat(v, 64)
				if !ok || err != nil || got != tc.want {
					t.Errorf("--%s=%s (present %v, %v), want %v", lane.flag, v, ok, err, tc.want)
				}
			})
		}
		// The manager would take 0 or less for its default: refuse it.
		for _, bad := range []string{"0", "-1", "fast"} {
			t.Run(lane.value+" refuses "+bad, func(t *testing.T) {
				_, err := testenv.HelmTemplate(t.Context(), chartDir, release, namespace, "--set", lane.value+"="+bad)
				if err == nil || !strings.Contains(err.Error(), lane.value+" must be a number above 0") {
					t.Errorf("%s=%s: %v, want refused", lane.value, bad, err)
				}
			})
		}
	}
}

// TestValuesSchema: values.schema.json refuses a misspelt key, a value out
// of bounds or of the wrong kind at install, naming it, and takes every
// value the chart documents (the defaults, and a file setting them all).
func TestValuesSchema(t *testing.T) {
	for _, tc := range []struct{ set, says string }{
		{"prometheusRule.enabeld=true", "additional properties 'enabeld' not allowed"},
		{"pingLogLimit=5000", "/pingLogLimit"},
		{"image.pullPolicy=Sometimes", "/image/pullPolicy"},
		{"store.embedded.accessModes[0]=ReadWriteEverywhere", "/store/embedded/accessModes/0"},
		{"serviceMonitor.interval=30 seconds", "/serviceMonitor/interval"},
		{"projectLimits.team-a.checkLimt=5", "additional properties 'checkLimt' not allowed"},
		{"store.embedded.backup.keep=-1", "/store/embedded/backup/keep"},
		{"image.digest=latest", "/image/digest"},
	} {
		_, err := testenv.HelmTemplate(t.Context(), chartDir, release, namespace, "--set", tc.set)
		if err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("--set %s: %v, want refused saying %q", tc.set, err, tc.says)
		}
	}
	helmTemplate(t, "--values", allFeatures)
	helmTemplate(t, "--set", "projectLimits.team-a.checkLimit=200,projectLimits.team-a.egressAllow[0]=10.1.2.0/24,logLevel=debug")
}

// TestImageDigest: a release's chart pulls the manager, and the backup
// Job, by digest.
func TestImageDigest(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	objs := helmTemplate(t, "--set", "image.digest="+digest+",image.tag=1.2.3,store.embedded.backup.enabled=true")
	want := "ghcr.io/vigil-operator/vigil:1.2.3@" + digest
	if got := manager(t, &objs.statefulSet(t).Spec.Template).Image; got != want {
		t.Errorf("manager image %q, want %q", got, want)
	}
	cj := convert[batchv1.CronJob](t, objs.must(t, "CronJob", "vigil-backup"))
	if got := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image; got != want {
		t.Errorf("backup image %q, want %q", got, want)
	}
}

// TestArtifactHubAnnotations: the CRDs Artifact Hub lists are the chart's,
// and its image is the chart's own version.
func TestArtifactHubAnnotations(t *testing.T) {
	var c struct {
		AppVersion  string            `json:"appVersion"`
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, chartDir+"/Chart.yaml"), &c); err != nil {
		t.Fatal(err)
	}
	var crds []struct{ Kind, Version, Name string }
	if err := yaml.Unmarshal([]byte(c.Annotations["artifacthub.io/crds"]), &crds); err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, crd := range crds {
		listed = append(listed, crd.Name)
		if crd.Version != "v1alpha1" || crd.Kind == "" {
			t.Errorf("artifacthub.io/crds entry %+v", crd)
		}
	}
	files, err := filepath.Glob(filepath.Join(readRepoRoot(t), chartDir, "crds", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var shipped []string
	for _, f := range files {
		shipped = append(shipped, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "monitoring.vigil.dev_"), ".yaml")+".monitoring.vigil.dev")
	}
	slices.Sort(listed)
	slices.Sort(shipped)
	if !slices.Equal(listed, shipped) {
		t.Errorf("Artifact Hub lists CRDs %v, the chart ships %v", listed, shipped)
	}
	if !strings.Contains(c.Annotations["artifacthub.io/images"], "ghcr.io/vigil-operator/vigil:"+c.AppVersion) {
		t.Errorf("artifacthub.io/images %q does not name version %s", c.Annotations["artifacthub.io/images"], c.AppVersion)
	}
	for _, key := range []string{"artifacthub.io/crdsExamples", "artifacthub.io/links"} {
		var list []map[string]any
		if err := yaml.Unmarshal([]byte(c.Annotations[key]), &list); err != nil || len(list) == 0 {
			t.Errorf("%s: %v, %d entries", key, err, len(list))
		}
	}
}

func readRepoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestDashboardSignIn: dashboard.oidc passes the provider's settings, the
// client secret from its Secret, and binds the RoleBinding reader to the
// manager; without it, none of that, and the reader is bound to no one.
func TestDashboardSignIn(t *testing.T) {
	off := helmTemplate(t)
	noFlag(t, args(t, off), "oidc-issuer-url")
	if crb := bindingsTo(t, off, "ClusterRoleBinding", "vigil-dashboard-signin"); len(crb) != 0 {
		t.Errorf("sign-in off, the RoleBinding reader is bound: %v", crb)
	}

	on := helmTemplate(t, "--set", "dashboard.oidc.issuerURL=https://dex.example.com", "--set", "dashboard.oidc.clientID=vigil",
		"--set", "dashboard.oidc.clientSecret.existingSecret=vigil-oidc", "--set", "dashboard.oidc.scopes={email,profile,groups}",
		"--set", "dashboard.oidc.groupsPrefix=oidc:", "--set", "dashboard.keySignIn=false")
	a := args(t, on)
	wantFlag(t, a, "oidc-issuer-url", "https://dex.example.com")
	wantFlag(t, a, "oidc-client-id", "vigil")
	wantFlag(t, a, "oidc-scopes", "email,profile,groups")
	wantFlag(t, a, "oidc-groups-prefix", "oidc:")
	wantFlag(t, a, "dashboard-key-sign-in", "false")
	noFlag(t, a, "oidc-redirect-url")
	c := manager(t, on.podTemplate(t))
	if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool {
		return e.Name == "VIGIL_OIDC_CLIENT_SECRET" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
			e.ValueFrom.SecretKeyRef.Name == "vigil-oidc" && e.ValueFrom.SecretKeyRef.Key == "client-secret"
	}) {
		t.Errorf("no client secret from the Secret in %v", c.Env)
	}
	if crb := bindingsTo(t, on, "ClusterRoleBinding", "vigil-dashboard-signin"); len(crb) != 1 || !slices.Equal(crb[""].Subjects, managerSubject) {
		t.Errorf("the RoleBinding reader's bindings %v, want one to the manager", crb)
	}
}
