// Package cronjobs runs Vigil's CronJob monitoring against a whole cluster:
// etcd, kube-apiserver, kube-controller-manager (its CronJob and Job
// controllers create real Jobs and pods on schedule), kube-scheduler and a
// node kwok simulates (config/dev/kwok-stages.yaml: pods run, succeed,
// fail with an exit code and reason, or never pull their image), with the
// manager under its shipped RBAC. The scene is set once, every CronJob at
// the same time, and each spec waits for its part of the story: the first
// runs start at the next minute.
package cronjobs

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ctrl "sigs.k8s.io/controller-runtime"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/devenv"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/scheme"
	"github.com/vigil-operator/vigil/internal/testenv"
)

var (
	ctx       context.Context
	k8sClient client.Client
	mgr       *manager.Manager
	forbidden *testenv.Forbidden
)

const (
	team     = "team-data"
	platform = "platform-team"
	other    = "unlabelled-team"
)

func TestCronJobs(t *testing.T) {
	RegisterFailHandler(Fail)
	// A run starts at the next minute; a pod that cannot start is
	// reported 10 s later, a suspension after a minute.
	SetDefaultEventuallyTimeout(3 * time.Minute)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "CronJobs on a whole cluster")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter)))
	var cancel context.CancelFunc
	ctx, cancel = context.WithCancel(context.Background())
	DeferCleanup(cancel)
	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	assets, err := testenv.Assets()
	Expect(err).NotTo(HaveOccurred())
	kwok, err := testenv.Tool("kwok")
	Expect(err).NotTo(HaveOccurred(), "`make test` builds kwok from Go modules")
	addr, err := testenv.FreeAddr(ctx)
	Expect(err).NotTo(HaveOccurred())
	_, port, _ := net.SplitHostPort(addr)
	apiPort, _ := strconv.Atoi(port)

	cp, err := testenv.StartDev(ctx, devenv.Options{
		Dir: GinkgoT().TempDir(), Assets: assets, CRDDir: filepath.Join(root, "config", "crd", "bases"),
		APIServerPort: apiPort, Namespace: "default", Progress: GinkgoWriter,
		Kwok: kwok, KwokStages: filepath.Join(root, "config", "dev", "kwok-stages.yaml"),
	})
	DeferCleanup(func() { Expect(cp.Stop()).To(Succeed()) })
	Expect(err).NotTo(HaveOccurred(), "starting the cluster (`make test` builds kube-controller-manager and kube-scheduler)")
	k8sClient, err = client.New(cp.Config, client.Options{Scheme: scheme.New()})
	Expect(err).NotTo(HaveOccurred())

	managerConfig, f, err := testenv.AsManager(ctx, cp.Config)
	Expect(err).NotTo(HaveOccurred())
	forbidden = f
	store, err := testenv.StoreDSN(ctx, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	httpAddr, err := testenv.FreeAddr(ctx)
	Expect(err).NotTo(HaveOccurred())
	mgr, err = manager.New(ctx, managerConfig, manager.Options{
		Store: store, HTTPAddr: httpAddr, BaseURL: "http://" + httpAddr, MetricsAddr: "0", ProbeAddr: "0",
		CronJobTimeZone: "UTC", CronJobStartTimeout: 10 * time.Second,
	})
	Expect(err).NotTo(HaveOccurred())
	stopped := make(chan struct{})
	go func() {
		defer GinkgoRecover()
		defer close(stopped)
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(stopped).WithTimeout(time.Minute).Should(BeClosed())
		Expect(forbidden.Requests()).To(BeEmpty(), "the manager made calls its RBAC does not allow")
		Expect(testenv.StopPostgres()).To(Succeed())
	})

	setScene()
})

// setScene creates every namespace, policy and CronJob at once.
func setScene() {
	for name, labels := range map[string]map[string]string{
		team: nil, platform: {"vigil.dev/cronjobs": "on"}, other: nil,
	} {
		Expect(k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})).To(Succeed())
	}
	batch := map[string]string{"tier": "batch"}
	Expect(k8sClient.Create(ctx, &v1.CronJobPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: team, Name: "batch"},
		Spec: v1.CronJobPolicySpec{Selector: &metav1.LabelSelector{MatchLabels: batch},
			CronJobDefaults: v1.CronJobDefaults{Grace: &metav1.Duration{Duration: 5 * time.Minute}, Tags: "batch"}}})).To(Succeed())
	Expect(k8sClient.Create(ctx, &v1.ClusterCronJobPolicy{ObjectMeta: metav1.ObjectMeta{Name: "platform"},
		Spec: v1.ClusterCronJobPolicySpec{NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"vigil.dev/cronjobs": "on"}},
			CronJobDefaults: v1.CronJobDefaults{Tags: "platform"}}})).To(Succeed())

	type scene struct {
		namespace, name string
		annotations     map[string]string
		podLabels       map[string]string
		podAnnotations  map[string]string
		change          func(*batchv1.CronJob)
	}
	for _, s := range []scene{
		{namespace: team, name: "backup"},
		{namespace: team, name: "report"},
		{namespace: team, name: "scratch", annotations: map[string]string{controller.AnnotationCheck: "false"}},
		{namespace: team, name: "oom", podLabels: map[string]string{"vigil.dev/simulate": "fail"},
			podAnnotations: map[string]string{"vigil.dev/simulate-exit-code": "137", "vigil.dev/simulate-reason": "OOMKilled"}},
		{namespace: team, name: "pull", podLabels: map[string]string{"vigil.dev/simulate": "image-pull"},
			change: func(cj *batchv1.CronJob) {
				cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Image = "registry.example/etl:does-not-exist"
			}},
		{namespace: team, name: "nowhere", change: func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Template.Spec.NodeSelector = map[string]string{"vigil.dev/pool": "gpu"}
		}},
		{namespace: team, name: "paused", annotations: map[string]string{controller.AnnotationMaxSuspended: "1m"},
			change: func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr.To(true) }},
		{namespace: platform, name: "sync"},
		{namespace: other, name: "sync"},
	} {
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: s.name, Labels: batch, Annotations: s.annotations},
			Spec: batchv1.CronJobSpec{
				Schedule: "* * * * *",
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
					BackoffLimit: ptr.To[int32](0),
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: s.podLabels, Annotations: s.podAnnotations},
						Spec: corev1.PodSpec{
							RestartPolicy: corev1.RestartPolicyNever,
							Containers: []corev1.Container{{Name: "job", Image: "busybox", Command: []string{"sh", "-c", "sleep 3"},
								Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}},
						},
					},
				}},
			},
		}
		if s.change != nil {
			s.change(cj)
		}
		Expect(k8sClient.Create(ctx, cj)).To(Succeed())
	}
}

func checkOf(namespace, cronJob string) func(Gomega) *v1.Check {
	return func(g Gomega) *v1.Check {
		c := &v1.Check{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: controller.CheckNameForCronJob(cronJob)}, c)).To(Succeed())
		return c
	}
}

// failBody waits for a failure in the ping log of the check of a CronJob
// of the team's namespace and returns the body of the newest.
func failBody(cronJob string) string {
	var body []byte
	Eventually(func(g Gomega) {
		c := checkOf(team, cronJob)(g)
		pings, err := mgr.Checks.Pings(ctx, c)
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range pings {
			if p.Kind == monitor.PingFail {
				body, err = mgr.Checks.PingBody(ctx, c, p.N)
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
		}
		g.Expect(pings).To(ContainElement(HaveField("Kind", monitor.PingFail)))
	}).Should(Succeed())
	return string(body)
}

var _ = Describe("CronJobs covered by policy", func() {
	It("gives the CronJobs a policy selects a Check, leaves out the opted-out one, and records their real runs", func() {
		for _, name := range []string{"backup", "report", "oom", "pull", "nowhere", "paused"} {
			Eventually(checkOf(team, name)).Should(HaveField("Status.Coverage.Policy", "CronJobPolicy/batch"))
		}
		Expect(checkOf(team, "backup")(Default).Spec.Tags).To(Equal("batch"))
		Expect(checkOf(team, "backup")(Default).Spec.Grace).To(BeEquivalentTo(300))
		Consistently(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: team, Name: controller.CheckNameForCronJob("scratch")}, &v1.Check{})
		}).WithTimeout(2 * time.Second).Should(MatchError(ContainSubstring("not found")))
		Eventually(func(g Gomega) v1.CronJobPolicyStatus {
			p := &v1.CronJobPolicy{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: team, Name: "batch"}, p)).To(Succeed())
			return p.Status
		}).Should(HaveField("CronJobs", BeEquivalentTo(6)))

		// kube-controller-manager starts a Job at the minute; kwok runs its
		// pod for 3 s; Vigil records the run.
		Eventually(func(g Gomega) []monitor.PingKind {
			pings, err := mgr.Checks.Pings(ctx, checkOf(team, "backup")(g))
			g.Expect(err).NotTo(HaveOccurred())
			var kinds []monitor.PingKind
			for _, p := range pings {
				kinds = append(kinds, p.Kind)
			}
			return kinds
		}).Should(ContainElements(monitor.PingStart, monitor.PingSuccess))
		Eventually(checkOf(team, "backup")).Should(HaveField("Status.State", v1.CheckStateUp))
	})

	It("covers a labelled namespace by the cluster policy, and not another", func() {
		Eventually(checkOf(platform, "sync")).Should(HaveField("Status.Coverage.Policy", "ClusterCronJobPolicy/platform"))
		Expect(checkOf(platform, "sync")(Default).Spec.Tags).To(Equal("platform"))
		Consistently(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: other, Name: controller.CheckNameForCronJob("sync")}, &v1.Check{})
		}).WithTimeout(2 * time.Second).Should(MatchError(ContainSubstring("not found")))
	})
})

var _ = Describe("Failures that say why", func() {
	It("says a pod was killed by its memory limit", func() {
		body := failBody("oom")
		Expect(body).To(MatchRegexp(`Job oom-\d+ failed: BackoffLimitExceeded`))
		Expect(body).To(MatchRegexp(`Pod oom-\d+-\w+, container job exited with code 137 \(OOMKilled\)\.`))
		Expect(body).To(ContainSubstring("Hint: the container used more memory than it may (its limit is 64Mi)"))
	})

	It("says a run has not started because its image cannot be pulled", func() {
		body := failBody("pull")
		Expect(body).To(MatchRegexp(`Job pull-\d+ has not started: none of its pods has run`))
		Expect(body).To(ContainSubstring(`never ran: container job: ImagePullBackOff: Back-off pulling image "registry.example/etl:does-not-exist"`))
		Expect(body).To(ContainSubstring(`Hint: the image "registry.example/etl:does-not-exist" could not be pulled`))
		Eventually(checkOf(team, "pull")).Should(HaveField("Status.State", v1.CheckStateDown))
	})

	It("says a run has not started because no node can take its pod, in the scheduler's words", func() {
		body := failBody("nowhere")
		Expect(body).To(MatchRegexp(`Job nowhere-\d+ has not started`))
		Expect(body).To(ContainSubstring("never ran: Unschedulable: 0/1 nodes are available"))
		Expect(body).To(ContainSubstring("node affinity/selector"))
		Expect(body).To(ContainSubstring("Hint: no node can take the pod"))
	})

	It("alerts once for a CronJob suspended past its limit", func() {
		body := failBody("paused")
		Expect(body).To(ContainSubstring("CronJob paused has been suspended since"))
		Expect(body).To(ContainSubstring("longer than its limit of 1 minute"))
		Eventually(checkOf(team, "paused")).Should(HaveField("Status.State", v1.CheckStateDown))
		Consistently(func(g Gomega) int {
			pings, err := mgr.Checks.Pings(ctx, checkOf(team, "paused")(g))
			g.Expect(err).NotTo(HaveOccurred())
			return len(pings)
		}).WithTimeout(3 * time.Second).Should(Equal(1))
	})
})
