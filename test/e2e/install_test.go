package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/argocd"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/testenv"
)

var _ = Describe("Installed with kustomize (config/default)", Ordered, func() {
	// config/default holds its Namespace.
	describeInstall("", func(string) []unstructured.Unstructured {
		objs, err := testenv.KustomizeBuild(context.Background(), "config/default")
		Expect(err).NotTo(HaveOccurred())
		return objs
	}, false)
})

var _ = Describe("Installed with Helm (charts/vigil, default values)", Ordered, func() {
	// helm install vigil charts/vigil -n vigil-system --create-namespace
	describeInstall("vigil-system", func(heartbeatURL string) []unstructured.Unstructured {
		// Default values, but for the heartbeat, which needs a URL of the
		// user's own. helm install installs the CRDs in crds/; helm
		// template renders them only when asked.
		objs, err := testenv.HelmTemplate(context.Background(), "charts/vigil", "vigil", "vigil-system", "--include-crds",
			"--set", "heartbeat.url="+heartbeatURL, "--set", "heartbeat.interval=1s")
		Expect(err).NotTo(HaveOccurred())
		return objs
	}, true)
})

// describeInstall adds the specs every install must pass to an Ordered
// container. namespace is created before the install is applied, unless
// empty; render returns the install's manifests; withHeartbeat says whether
// it was given heartbeatURL.
func describeInstall(namespace string, render func(heartbeatURL string) []unstructured.Unstructured, withHeartbeat bool) {
	var (
		cl        *cluster
		ctx       = context.Background()
		team      = "team-a"
		rw, ro    string
		pingKey   string
		webhook   *recorder
		heartbeat *recorder
		// onTime is pinged once at the start; the last spec watches it go
		// down when its timeout and grace have passed.
		onTime       checkJSON
		onTimePinged time.Time
	)

	BeforeAll(func() {
		webhook, heartbeat = newRecorder(), newRecorder()
		cl = startCluster(namespace, render(heartbeat.url+"/ping/0f6d3c1e-7a55-4c4e-9a0b-3b0f9d8e2a11"))
		cl.startManager()
		DeferCleanup(func() { cl.stopManager() })

		// A project, with keys created as the README says: `vigil keys`
		// with the user's credentials, not the manager's.
		Expect(cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}})).To(Succeed())
		cl.allowEgress(team, egress.Loopback.String()) // the webhook receiver
		rw = cl.vigil("keys", "create", "-n", team)
		ro = cl.vigil("keys", "create", "-n", team, "--read-only")
		data, err := project.EnsureProjectSecret(ctx, cl.c, team)
		Expect(err).NotTo(HaveOccurred())
		pingKey = string(data[project.DataPingKey])
		Eventually(func() int { return cl.api("GET", "/api/v3/checks/", ro, "").Status }).Should(Equal(http.StatusOK))

		onTime = cl.createCheck(rw, `{"name": "on-time", "timeout": 60, "grace": 60}`)
		onTimePinged = time.Now()
		Expect(cl.ping(onTime.PingURL, "GET", "")).To(Equal("OK"))
	})

	AfterEach(func() { cl.expectHealthyManager() })

	It("runs as its own ServiceAccount, which may not write Secrets, and takes leases only to elect a leader", func() {
		Expect(cl.serviceAccount()).NotTo(BeEmpty())
		// One replica with the embedded store runs without leader election;
		// replicas on PostgreSQL elect one.
		elects := !slices.Contains(cl.managerContainer().Args, "--leader-elect=false")
		Expect(elects).To(Equal(cl.replicaCount() > 1), "leader election exactly when there are several replicas")
		user := fmt.Sprintf("system:serviceaccount:%s:%s", cl.workload.GetNamespace(), cl.serviceAccount())
		for _, tc := range []struct {
			attrs   authorizationv1.ResourceAttributes
			allowed bool
		}{
			{authorizationv1.ResourceAttributes{Namespace: "kube-system", Resource: "secrets", Verb: "update"}, false},
			{authorizationv1.ResourceAttributes{Namespace: team, Resource: "secrets", Verb: "create"}, false},
			{authorizationv1.ResourceAttributes{Namespace: team, Resource: "secrets", Verb: "delete"}, false},
			{authorizationv1.ResourceAttributes{Namespace: team, Resource: "pods", Verb: "delete"}, false},
			{authorizationv1.ResourceAttributes{Namespace: team, Resource: "pods", Subresource: "log", Verb: "get"}, true},
			{authorizationv1.ResourceAttributes{Namespace: team, Group: "monitoring.vigil.dev", Resource: "checks", Verb: "create"}, true},
			{authorizationv1.ResourceAttributes{Namespace: team, Group: "monitoring.vigil.dev", Resource: "maintenancewindows", Verb: "create"}, true},
			{authorizationv1.ResourceAttributes{Namespace: team, Group: "monitoring.vigil.dev", Resource: "maintenancewindows", Verb: "patch"}, false},
			{authorizationv1.ResourceAttributes{Namespace: cl.workload.GetNamespace(), Group: "coordination.k8s.io", Resource: "leases", Verb: "create"}, elects},
			{authorizationv1.ResourceAttributes{Namespace: team, Group: "coordination.k8s.io", Resource: "leases", Verb: "create"}, false},
		} {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &tc.attrs,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + cl.workload.GetNamespace(), "system:authenticated"}}}
			Expect(cl.c.Create(ctx, review)).To(Succeed())
			Expect(review.Status.Allowed).To(Equal(tc.allowed), "%s %s/%s in %q", tc.attrs.Verb, tc.attrs.Resource, tc.attrs.Subresource, tc.attrs.Namespace)
		}
	})

	It("serves a Check applied with kubectl through the API, and an API-created check as a Check object", func() {
		cl.kubectlApply(team, `
apiVersion: monitoring.vigil.dev/v1alpha1
kind: Check
metadata:
  name: nightly-backup
spec:
  name: Nightly backup
  slug: nightly-backup
  schedule: "30 3 * * 1-5"
  tz: Europe/Riga
  grace: 300
`)
		Eventually(func() string { return cl.api("GET", "/api/v3/checks/?slug=nightly-backup", ro, "").Body }).
			Should(ContainSubstring(`"name":"Nightly backup"`))

		created := cl.createCheck(rw, `{"name": "From the API", "slug": "from-api", "timeout": 3600, "tags": "e2e"}`)
		Eventually(func() string {
			return cl.kubectl("get", "checks", "-n", team, "-o", "jsonpath={range .items[*]}{.spec.slug}={.status.uuid}{\"\\n\"}{end}")
		}).Should(ContainSubstring("from-api=" + created.uuid()))
	})

	It("records pings of every form", func() {
		c := cl.createCheck(rw, `{"name": "Pinged", "slug": "pinged", "timeout": 3600}`)
		rid := "5b6f8d8a-3c1e-4f0e-8a4b-1d2c3e4f5a6b"
		for _, p := range []struct{ method, url, body string }{
			{"GET", c.PingURL, ""},
			{"POST", c.PingURL, "backup done: 42 files"},
			{"HEAD", c.PingURL, ""},
			{"GET", c.PingURL + "/start?rid=" + rid, ""},
			{"GET", c.PingURL + "?rid=" + rid, ""},
			{"POST", c.PingURL + "/log", "just a note"},
			{"GET", c.PingURL + "/0", ""},
			{"POST", c.PingURL + "/3", "exit 3"},
			{"GET", c.PingURL + "/fail", ""},
			{"GET", cl.httpURL + "/ping/" + pingKey + "/pinged", ""},
			{"GET", cl.httpURL + "/ping/" + pingKey + "/pinged/start", ""},
		} {
			answer := cl.ping(p.url, p.method, p.body)
			if p.method != "HEAD" {
				Expect(answer).To(Equal("OK"), "%s %s", p.method, p.url)
			}
		}
		// Auto-provisioning through a slug URL.
		Expect(cl.ping(cl.httpURL+"/ping/"+pingKey+"/made-by-a-ping?create=1", "GET", "")).To(Equal("Created"))

		var pings struct {
			Pings []struct {
				Type     string   `json:"type"`
				N        int      `json:"n"`
				Method   string   `json:"method"`
				RID      string   `json:"rid"`
				Duration *float64 `json:"duration"`
				Exit     *int     `json:"exitstatus"`
			} `json:"pings"`
		}
		Eventually(func(g Gomega) {
			r := cl.api("GET", "/api/v3/checks/"+c.uuid()+"/pings/", rw, "")
			g.Expect(r.Status).To(Equal(http.StatusOK), r.Body)
			g.Expect(json.Unmarshal([]byte(r.Body), &pings)).To(Succeed())
			g.Expect(pings.Pings).To(HaveLen(11))
		}).Should(Succeed())
		var types []string
		for _, p := range pings.Pings {
			types = append(types, p.Type)
		}
		// Newest first.
		Expect(types).To(Equal([]string{"start", "success", "fail", "fail", "success", "log", "success", "start", "success", "success", "success"}))
		Expect(pings.Pings[6].RID).To(Equal(rid))
		Expect(pings.Pings[6].Duration).NotTo(BeNil(), "a success after a start with the same rid has a duration")
		Expect(pings.Pings[8].Method).To(Equal("HEAD"))
		body := fmt.Sprintf("/api/v3/checks/%s/pings/%d/body", c.uuid(), pings.Pings[9].N)
		Expect(cl.api("GET", body, rw, "").Body).To(Equal("backup done: 42 files"))
		Eventually(func() string { return cl.api("GET", "/api/v3/checks/?slug=made-by-a-ping", rw, "").Body }).Should(ContainSubstring(`"slug":"made-by-a-ping"`))
	})

	It("notifies a webhook channel when a check goes down, and when it comes back", func() {
		cl.kubectlApply(team, fmt.Sprintf(`
apiVersion: monitoring.vigil.dev/v1alpha1
kind: Channel
metadata:
  name: ops-webhook
spec:
  kind: webhook
  webhook:
    down:
      url: %[1]s/down
      method: POST
      body: '{"check": "$NAME", "status": "$STATUS"}'
    up:
      url: %[1]s/up?check=$NAME
      method: GET
`, webhook.url))
		Eventually(func(g Gomega) {
			ch := &v1.Channel{}
			g.Expect(cl.c.Get(ctx, client.ObjectKey{Namespace: team, Name: "ops-webhook"}, ch)).To(Succeed())
			g.Expect(ch.Status.Conditions).To(ContainElement(And(HaveField("Type", v1.ConditionReady), HaveField("Status", metav1.ConditionTrue))))
		}).Should(Succeed())
		c := cl.createCheck(rw, `{"name": "notified", "timeout": 3600, "channels": "ops-webhook"}`)
		Expect(cl.ping(c.PingURL, "GET", "")).To(Equal("OK"))
		Expect(cl.ping(c.PingURL+"/fail", "GET", "")).To(Equal("OK"))
		Eventually(webhook.requests).Should(ContainElement(`POST /down {"check": "notified", "status": "down"}`))
		Expect(cl.ping(c.PingURL, "GET", "")).To(Equal("OK"))
		Eventually(webhook.requests).Should(ContainElement(`GET /up?check=notified `))

		// Argo CD's health check (config/argocd/health.lua) on the live
		// objects: the check that went down and came back is Healthy.
		Eventually(func() string { return cl.argoHealth(team, c) }).Should(Equal("Healthy"))
	})

	It("holds notifications in a MaintenanceWindow applied with kubectl and in a snooze from the CLI, and tells them when they end", func() {
		c := cl.createCheck(rw, `{"name": "held", "timeout": 3600, "tags": "maint", "channels": "ops-webhook"}`)
		Expect(cl.ping(c.PingURL, "GET", "")).To(Equal("OK"))
		var name string
		Eventually(func() string {
			name = cl.kubectl("get", "checks", "-n", team, "-o", `jsonpath={.items[?(@.status.uuid=="`+c.uuid()+`")].metadata.name}`)
			return name
		}).ShouldNot(BeEmpty())
		maintenance := func() string {
			return cl.kubectl("get", "check", name, "-n", team, "-o", `jsonpath={.status.conditions[?(@.type=="Maintenance")].status}`)
		}
		now := time.Now().UTC()
		cl.kubectlApply(team, fmt.Sprintf(`
apiVersion: monitoring.vigil.dev/v1alpha1
kind: MaintenanceWindow
metadata:
  name: e2e-window
spec:
  tags: [maint]
  from: %q
  to: %q
`, now.Add(-time.Minute).Format(time.RFC3339), now.Add(time.Hour).Format(time.RFC3339)))
		cl.kubectl("wait", "--for=condition=Ready", "maintenancewindow/e2e-window", "-n", team, "--timeout=60s")
		Expect(cl.kubectl("get", "mw", "e2e-window", "-n", team, "-o", "jsonpath={.status.active} {.status.checks}")).To(Equal("true 1"))
		Eventually(maintenance).Should(Equal("True"))

		heldDown := `POST /down {"check": "held", "status": "down"}`
		Expect(cl.ping(c.PingURL+"/fail", "GET", "")).To(Equal("OK"))
		Consistently(webhook.requests, "2s").ShouldNot(ContainElement(heldDown))
		cl.kubectl("delete", "mw", "e2e-window", "-n", team)
		Eventually(webhook.requests).Should(ContainElement(heldDown), "told when the window went")
		Eventually(maintenance).Should(BeEmpty())

		Expect(cl.vigil("snooze", "-n", team, name, "1h")).To(ContainSubstring("notifications held until"))
		Eventually(maintenance).Should(Equal("True"))
		Expect(cl.ping(c.PingURL, "GET", "")).To(Equal("OK"))
		Consistently(webhook.requests, "2s").ShouldNot(ContainElement(`GET /up?check=held `))
		Expect(cl.vigil("snooze", "-n", team, name, "--off")).To(ContainSubstring("snooze ended"))
		Eventually(webhook.requests).Should(ContainElement(`GET /up?check=held `), "told when the snooze ended")
	})

	It("keeps the Argo CD health of a down check Degraded", func() {
		c := cl.createCheck(rw, `{"name": "failing", "timeout": 3600}`)
		Expect(cl.ping(c.PingURL+"/fail", "GET", "")).To(Equal("OK"))
		Eventually(func() string { return cl.argoHealth(team, c) }).Should(Equal("Degraded"))
	})

	It("turns a monitored CronJob's Jobs into pings", func() {
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "report", Annotations: map[string]string{controller.AnnotationCheck: "true"}},
			Spec: batchv1.CronJobSpec{Schedule: "0 4 29 2 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "job", Image: "busybox"}}}},
			}}},
		}
		Expect(cl.c.Create(ctx, cj)).To(Succeed())
		check := &v1.Check{}
		Eventually(func(g Gomega) {
			g.Expect(cl.c.Get(ctx, client.ObjectKey{Namespace: team, Name: controller.CheckNameForCronJob(cj.Name)}, check)).To(Succeed())
			g.Expect(check.Status.UUID).NotTo(BeEmpty())
		}).Should(Succeed())

		// envtest runs no Job controller or kubelet: the test writes what
		// they would.
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "report-1",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr.To(true)}}},
			Spec: cj.Spec.JobTemplate.Spec}
		Expect(cl.c.Create(ctx, job)).To(Succeed())
		started := metav1.NewTime(time.Now().Truncate(time.Second))
		job.Status.StartTime, job.Status.Active = &started, 1
		Expect(cl.c.Status().Update(ctx, job)).To(Succeed())
		// A failed pod of the Job: listing it needs the cronjobs role; its
		// log cannot be read without a kubelet, which only shortens the
		// failure's body.
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "report-1-abcde",
			Labels:          map[string]string{batchv1.JobNameLabel: job.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}}},
			Spec: job.Spec.Template.Spec}
		Expect(cl.c.Create(ctx, pod)).To(Succeed())
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", Image: "busybox",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2}}}}
		Expect(cl.c.Status().Update(ctx, pod)).To(Succeed())
		failedAt := metav1.NewTime(started.Add(3 * time.Second))
		job.Status.Active, job.Status.Failed = 0, 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: failedAt},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: failedAt},
		}
		Expect(cl.c.Status().Update(ctx, job)).To(Succeed())

		Eventually(func() string { return cl.api("GET", "/api/v3/checks/"+check.Status.UUID+"/pings/", rw, "").Body }).
			Should(And(ContainSubstring(`"type":"start"`), ContainSubstring(`"type":"fail"`)))
		Eventually(func() string { return cl.api("GET", "/api/v3/checks/"+check.Status.UUID, rw, "").Body }).Should(ContainSubstring(`"status":"down"`))
	})

	It("publishes ping URLs in Secrets only where a namespace allows it", func() {
		Expect(cl.c.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "vigil-ping-url-secrets"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "vigil-ping-url-secrets"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: cl.workload.GetNamespace(), Name: cl.serviceAccount()}},
		})).To(Succeed())
		cl.kubectlApply(team, `
apiVersion: monitoring.vigil.dev/v1alpha1
kind: Check
metadata:
  name: published
spec:
  timeout: 3600
  pingURLSecret: {name: published-ping}
`)
		Eventually(func(g Gomega) {
			s := &corev1.Secret{}
			g.Expect(cl.c.Get(ctx, client.ObjectKey{Namespace: team, Name: "published-ping"}, s)).To(Succeed())
			g.Expect(string(s.Data[controller.PingURLKey])).To(HavePrefix(cl.httpURL + "/ping/"))
		}).Should(Succeed())
	})

	It("serves badges to anyone with the badge URL", func() {
		r := cl.api("GET", "/api/v3/badges/", ro, "")
		Expect(r.Status).To(Equal(http.StatusOK), r.Body)
		var badges struct {
			Badges map[string]map[string]string `json:"badges"`
		}
		Expect(json.Unmarshal([]byte(r.Body), &badges)).To(Succeed())
		Expect(badges.Badges).To(HaveKey("e2e"))
		resp, err := http.Get(badges.Badges["e2e"]["svg"]) //nolint:noctx // test
		Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusOK))
		Expect(resp.Header.Get("Content-Type")).To(HavePrefix("image/svg+xml"))
	})

	It("serves metrics over HTTPS to Prometheus's ServiceAccount only", func() {
		unauthenticated := cl.metrics("")
		Expect(unauthenticated.Status).To(Equal(http.StatusUnauthorized))

		ns := cl.workload.GetNamespace()
		Expect(cl.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}})).To(Succeed())
		Expect(cl.c.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-vigil"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "vigil-metrics-reader"},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "prometheus"}},
		})).To(Succeed())
		token := cl.token(ns, "prometheus")
		Eventually(func() apiResult { return cl.metrics(token) }).Should(And(
			HaveField("Status", http.StatusOK),
			HaveField("Body", And(ContainSubstring("vigil_pings_total"), ContainSubstring(`vigil_checks{`)))))

		// Every series the chart's alerts read is one this manager exports
		// (up is Prometheus's own).
		// The chart's rules in this install's mode: a Deployment is
		// PostgreSQL mode, which has no store volume of its own to watch.
		args := []string{"--set", "prometheusRule.enabled=true", "--show-only", "templates/prometheusrule.yaml"}
		if cl.workload.GetKind() == "Deployment" {
			args = append(args, "--set", "store.postgres.existingSecret=vigil-postgres")
		}
		rules, err := testenv.HelmTemplate(ctx, "charts/vigil", "vigil", ns, args...)
		Expect(err).NotTo(HaveOccurred())
		Expect(rules).To(HaveLen(1))
		groups, _, _ := unstructured.NestedSlice(rules[0].Object, "spec", "groups")
		Expect(groups).NotTo(BeEmpty())
		for _, g := range groups {
			alerts, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
			for _, a := range alerts {
				expr := a.(map[string]any)["expr"].(string)
				for _, m := range regexp.MustCompile(`\b([a-z_]+)\{`).FindAllStringSubmatch(expr, -1) {
					if m[1] != "up" {
						// A series with labels, or without (vigil_store_full 0);
						// some are measured every 10 s after the start.
						Eventually(func() string { return cl.metrics(token).Body }).Should(MatchRegexp(`(?m)^`+m[1]+`[{ ]`),
							"alert %s reads %s", a.(map[string]any)["alert"], m[1])
					}
				}
			}
		}
	})

	if withHeartbeat {
		It("pings the external heartbeat check while it leads", func() {
			Eventually(heartbeat.requests).Should(ContainElement("POST /ping/0f6d3c1e-7a55-4c4e-9a0b-3b0f9d8e2a11 vigil manager: leader, healthy"))
		})
	}

	It("resumes from its volume after a restart, losing nothing it acknowledged", func() {
		c := cl.createCheck(rw, `{"name": "survivor", "timeout": 3600}`)
		for range 5 {
			Expect(cl.ping(c.PingURL, "GET", "")).To(Equal("OK"))
		}
		Expect(cl.ping(c.PingURL+"/fail", "GET", "")).To(Equal("OK"))
		cl.stopManager()
		cl.startManager()
		r := cl.api("GET", "/api/v3/checks/"+c.uuid(), rw, "")
		Expect(r.Body).To(And(ContainSubstring(`"n_pings":6`), ContainSubstring(`"status":"down"`)))
		Expect(cl.api("GET", "/api/v3/checks/"+c.uuid()+"/flips/", rw, "").Body).To(MatchRegexp(`^\[\{"timestamp":"[^"]+","up":0\}\]$`))
		Expect(cl.ping(c.PingURL, "GET", "")).To(Equal("OK"))
		Expect(cl.api("GET", "/api/v3/checks/"+c.uuid(), rw, "").Body).To(ContainSubstring(`"n_pings":7`))
	})

	It("marks a check down when its timeout and grace have passed", func() {
		deadline := onTimePinged.Add(2 * time.Minute)
		Eventually(func() string { return cl.api("GET", "/api/v3/checks/"+onTime.uuid(), rw, "").Body }).
			WithTimeout(time.Until(deadline) + time.Minute).WithPolling(time.Second).
			Should(ContainSubstring(`"status":"down"`))
		Expect(time.Now()).To(BeTemporally(">=", deadline), "down before its grace had passed")
		// The API says down as soon as the deadline has passed (as the
		// reference does); the leader's deadline loop records the flip
		// within its interval, or once a new leader runs.
		Eventually(func() string { return cl.api("GET", "/api/v3/checks/"+onTime.uuid()+"/flips/", rw, "").Body }).
			Should(MatchRegexp(`^\[\{"timestamp":"[^"]+","up":0\}\]$`))
	})
}

// checkJSON is a check as the Management API returns it to a read-write key.
type checkJSON struct {
	PingURL  string `json:"ping_url"`
	BadgeURL string `json:"badge_url"`
	Slug     string `json:"slug"`
}

func (c checkJSON) uuid() string { return c.PingURL[strings.LastIndex(c.PingURL, "/")+1:] }

func (cl *cluster) createCheck(key, body string) checkJSON {
	GinkgoHelper()
	r := cl.api("POST", "/api/v3/checks/", key, body)
	Expect(r.Status).To(Equal(http.StatusCreated), r.Body)
	var c checkJSON
	Expect(json.Unmarshal([]byte(r.Body), &c)).To(Succeed())
	return c
}

type apiResult struct {
	Status int
	Body   string
}

func (cl *cluster) api(method, path, key, body string) apiResult {
	GinkgoHelper()
	return cl.request(method, cl.httpURL+path, body, map[string]string{"X-Api-Key": key})
}

// request is do for a request to the manager: when it gets no answer, the
// failure says how each replica is, and how its output ends, so that a
// replica that died or cut the connection says why (a suite's whole output
// may be cut).
func (cl *cluster) request(method, url, body string, headers map[string]string) apiResult {
	GinkgoHelper()
	res, err := tryDo(http.DefaultClient, method, url, body, headers)
	if err != nil {
		Fail(fmt.Sprintf("%s %s got no answer: %v\n%s", method, url, err, cl.replicaReport()))
	}
	return res
}

// metrics scrapes every running replica, as Prometheus does, and returns
// the scrapes joined, with the first status that is not 200 if any.
func (cl *cluster) metrics(token string) apiResult {
	h := map[string]string{}
	if token != "" {
		h["Authorization"] = "Bearer " + token
	}
	var all apiResult
	for _, r := range cl.replicas {
		if r == nil {
			continue
		}
		res := do(insecureHTTP, "GET", r.metricsURL+"/metrics", "", h)
		if all.Status == 0 || all.Status == http.StatusOK {
			all.Status = res.Status
		}
		all.Body += res.Body
	}
	return all
}

// ping sends a ping and returns the answer's body.
func (cl *cluster) ping(url, method, body string) string {
	GinkgoHelper()
	r := cl.request(method, url, body, nil)
	Expect(r.Status).To(BeNumerically("<", 300), "%s %s: %d %s", method, url, r.Status, r.Body)
	return r.Body
}

func do(hc *http.Client, method, url, body string, headers map[string]string) apiResult {
	GinkgoHelper()
	res, err := tryDo(hc, method, url, body, headers)
	Expect(err).NotTo(HaveOccurred())
	return res
}

func tryDo(hc *http.Client, method, url, body string, headers map[string]string) (apiResult, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
	if err != nil {
		return apiResult{}, err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return apiResult{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return apiResult{resp.StatusCode, string(b)}, err
}

// vigil runs the vigil CLI as the cluster administrator and returns its
// trimmed standard output.
func (cl *cluster) vigil(args ...string) string {
	GinkgoHelper()
	return cl.run(vigilBin, append(args, "--kubeconfig", cl.adminKubeconfig), "")
}

func (cl *cluster) kubectl(args ...string) string {
	GinkgoHelper()
	return cl.run(cl.kubectlBin, append(args, "--kubeconfig", cl.adminKubeconfig), "")
}

func (cl *cluster) kubectlApply(namespace, manifest string) {
	GinkgoHelper()
	cl.run(cl.kubectlBin, []string{"apply", "-n", namespace, "-f", "-", "--kubeconfig", cl.adminKubeconfig}, manifest)
}

func (cl *cluster) run(bin string, args []string, stdin string) string {
	GinkgoHelper()
	cmd := exec.CommandContext(context.Background(), bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "%s %s: %s", filepath.Base(bin), strings.Join(args, " "), stderr.String())
	return strings.TrimSpace(string(out))
}

// token mints a token for a ServiceAccount, as its pod would hold.
func (cl *cluster) token(namespace, name string) string {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(cl.admin)
	Expect(err).NotTo(HaveOccurred())
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(context.Background(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// argoHealth evaluates config/argocd/health.lua on the check's live object
// and returns Argo CD's health status.
func (cl *cluster) argoHealth(namespace string, c checkJSON) string {
	GinkgoHelper()
	var list v1.CheckList
	Expect(cl.c.List(context.Background(), &list, client.InNamespace(namespace))).To(Succeed())
	for i := range list.Items {
		if checks.UUIDOf(&list.Items[i]) != c.uuid() {
			continue
		}
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&list.Items[i])
		Expect(err).NotTo(HaveOccurred())
		// As Argo CD sees it: JSON numbers are float64.
		raw, err := json.Marshal(obj)
		Expect(err).NotTo(HaveOccurred())
		var decoded map[string]any
		Expect(json.Unmarshal(raw, &decoded)).To(Succeed())
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		status, _, err := argocd.Health(filepath.Join(root, argocd.HealthScript), decoded)
		Expect(err).NotTo(HaveOccurred())
		return status
	}
	Fail("no Check object has UUID " + c.uuid())
	return ""
}

// recorder is a local HTTP server that records the requests it receives as
// "METHOD path?query body".
type recorder struct {
	url  string
	mu   sync.Mutex
	seen []string
}

func newRecorder() *recorder {
	r := &recorder{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		line := req.Method + " " + req.URL.RequestURI() + " " + string(b)
		r.mu.Lock()
		r.seen = append(r.seen, line)
		r.mu.Unlock()
		_, _ = io.WriteString(w, "OK")
	}))
	DeferCleanup(srv.Close)
	r.url = srv.URL
	return r
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func fromUnstructured(obj map[string]any, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(obj, into)
}
