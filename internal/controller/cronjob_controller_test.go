package controller_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

var _ = Describe("CronJob monitoring", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	cronJob := func(name string, annotations map[string]string) *batchv1.CronJob {
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: annotations},
			Spec: batchv1.CronJobSpec{
				Schedule: "30 2 29 2 *", // far off: the suite moves its clock, and a due run would be reported missed
				TimeZone: ptr.To("Europe/Riga"),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "job", Image: "busybox"}},
				}}}},
			},
		}
		Expect(k8sClient.Create(ctx, cj)).To(Succeed())
		return cj
	}

	checkFor := func(cj *batchv1.CronJob) func(Gomega) *v1.Check {
		return func(g Gomega) *v1.Check {
			c := &v1.Check{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.CheckNameForCronJob(cj.Name)}, c)).To(Succeed())
			return c
		}
	}

	It("gives an annotated CronJob a Check in step with it, and removes it with the annotation", func() {
		cj := cronJob("backup", map[string]string{
			controller.AnnotationCheck: "true", controller.AnnotationGrace: "10m",
			controller.AnnotationTags: "prod  db", controller.AnnotationChannels: "ops, dev",
		})
		var c *v1.Check
		Eventually(func(g Gomega) {
			c = checkFor(cj)(g)
			g.Expect(*c.Spec.Schedule).To(Equal("30 2 29 2 *"))
		}).Should(Succeed())
		Expect(c.Spec.Timeout).To(BeNil())
		Expect(c.Spec.TZ).To(BeEquivalentTo("Europe/Riga"))
		Expect(c.Spec.Grace).To(BeEquivalentTo(600))
		Expect(c.Spec.Tags).To(Equal("prod db"))
		Expect(c.Spec.Channels).To(Equal([]string{"ops", "dev"}))
		Expect(c.Spec.Name).To(Equal("backup"))
		Expect(c.Spec.CronJobRef).To(Equal(&v1.LocalObjectReference{Name: "backup"}))
		Expect(metav1.IsControlledBy(c, cj)).To(BeTrue(), "owned by the CronJob: deleted with it")

		// A hand edit of the check's CronJob-managed fields is put back.
		// (A merge patch, as kubectl sends: the controller writes status
		// meanwhile, which would fail an update of the version read above.)
		edited := c.DeepCopy()
		edited.Spec.Grace = 120
		Expect(k8sClient.Patch(ctx, edited, client.MergeFrom(c))).To(Succeed())
		Eventually(func(g Gomega) int64 { return checkFor(cj)(g).Spec.Grace }).Should(BeEquivalentTo(600))

		// The CronJob changes; so does its check.
		cur := &batchv1.CronJob{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Spec.Schedule = "@hourly"
		cur.Spec.TimeZone = nil
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(func(g Gomega) {
			c := checkFor(cj)(g)
			g.Expect(*c.Spec.Schedule).To(Equal("0 * * * *"))
			g.Expect(c.Spec.TZ).To(BeEquivalentTo("UTC"))
		}).Should(Succeed())

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		delete(cur.Annotations, controller.AnnotationCheck)
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.CheckNameForCronJob(cj.Name)}, &v1.Check{})
		}).Should(MatchError(ContainSubstring("not found")))
	})

	It("leaves CronJobs without the annotation alone", func() {
		cj := cronJob("plain", nil)
		Consistently(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.CheckNameForCronJob(cj.Name)}, &v1.Check{})
		}).WithTimeout(time.Second).Should(MatchError(ContainSubstring("not found")))
	})

	It("pauses the check while the CronJob is suspended", func() {
		cj := cronJob("nightly", map[string]string{controller.AnnotationCheck: "true"})
		Eventually(checkFor(cj)).Should(HaveField("Status.State", Not(BeEmpty())))
		cur := &batchv1.CronJob{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Spec.Suspend = ptr.To(true)
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(checkFor(cj)).Should(HaveField("Status.State", v1.CheckStatePaused))

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Spec.Suspend = ptr.To(false)
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(checkFor(cj)).Should(HaveField("Status.State", v1.CheckStateNew))
	})

	It("resumes the check it paused even when writing its marker failed", func() {
		cj := cronJob("flaky", map[string]string{controller.AnnotationCheck: "true"})
		Eventually(checkFor(cj)).Should(HaveField("Status.State", v1.CheckStateNew))
		marked := func(g Gomega) bool {
			_, ok := checkFor(cj)(g).Annotations[pausedBySuspend]
			return ok
		}
		suspend := func(suspended bool) {
			cur := &batchv1.CronJob{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
			cur.Spec.Suspend = ptr.To(suspended)
			Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		}

		// The API server refuses the marker: the check is not paused
		// without it (a pause no one would resume) ...
		unfreeze := freezeAnnotation(ns, controller.CheckNameForCronJob(cj.Name), pausedBySuspend)
		suspend(true)
		Consistently(checkFor(cj)).WithTimeout(2 * time.Second).Should(HaveField("Status.State", v1.CheckStateNew))
		// ... and is, with it, once the write goes through.
		unfreeze()
		Eventually(checkFor(cj)).Should(HaveField("Status.State", v1.CheckStatePaused))
		Expect(marked(Default)).To(BeTrue())

		// Removing the marker fails: the check is resumed all the same,
		// and the marker goes once the write goes through.
		unfreeze = freezeAnnotation(ns, controller.CheckNameForCronJob(cj.Name), pausedBySuspend)
		suspend(false)
		Eventually(checkFor(cj)).Should(HaveField("Status.State", v1.CheckStateNew))
		Expect(marked(Default)).To(BeTrue())
		unfreeze()
		Eventually(marked).Should(BeFalse())
	})

	It("records each Job of a linked CronJob as start, then success or failure, once", func() {
		cj := cronJob("report", nil)
		// A check managed by its own manifest, linked to the CronJob.
		timeout := int64(86400)
		c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "report"},
			Spec: v1.CheckSpec{Timeout: &timeout, Grace: 3600, TZ: "UTC", CronJobRef: &v1.LocalObjectReference{Name: cj.Name}}}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())

		newJob := func(name string) *batchv1.Job {
			j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr.To(true)}}},
				Spec: cj.Spec.JobTemplate.Spec}
			Expect(k8sClient.Create(ctx, j)).To(Succeed())
			return j
		}
		// envtest runs no Job controller: the test writes the status a
		// kubelet and the Job controller would.
		// Job times follow the controllers' clock, as they would in a
		// cluster, and come after the check's creation (real time).
		base := clk.Now()
		if now := time.Now(); now.After(base) {
			base = now
		}
		started := metav1.NewTime(base.Add(time.Second).Truncate(time.Second))
		ok := newJob("report-1")
		ok.Status.StartTime = &started
		ok.Status.Active = 1
		Expect(k8sClient.Status().Update(ctx, ok)).To(Succeed())

		// The check's ping log, oldest first.
		pings := func(g Gomega) []store.LoggedPing {
			logged, err := harness.Manager.Store.Pings(ctx, c.UID, 100)
			g.Expect(err).NotTo(HaveOccurred())
			for i, j := 0, len(logged)-1; i < j; i, j = i+1, j-1 {
				logged[i], logged[j] = logged[j], logged[i]
			}
			return logged
		}
		Eventually(pings).Should(ConsistOf(And(HaveField("Kind", monitor.PingStart), HaveField("RID", string(ok.UID)))))

		done := metav1.NewTime(started.Add(42 * time.Second))
		ok.Status.Active, ok.Status.Succeeded = 0, 1
		ok.Status.CompletionTime = &done
		ok.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: done},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: done},
		}
		Expect(k8sClient.Status().Update(ctx, ok)).To(Succeed())
		Eventually(pings).Should(HaveLen(2))
		success := pings(Default)[1]
		Expect(success.Kind).To(Equal(monitor.PingSuccess))
		Expect(success.RID).To(Equal(string(ok.UID)))
		Expect(success.At).To(BeTemporally("==", done.Time))

		// failJob makes a Job that fails at the given time, with a failed
		// pod, whose log the suite's log reader makes up.
		failJob := func(name string, at time.Time) *batchv1.Job {
			j := newJob(name)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-x7k2p",
				Labels:          map[string]string{batchv1.JobNameLabel: j.Name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true)}}},
				Spec: cj.Spec.JobTemplate.Spec.Template.Spec}
			Expect(k8sClient.Create(ctx, pod)).To(Succeed())
			pod.Status.Phase = corev1.PodFailed
			pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "job", Image: "busybox",
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}}}
			Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
			j.Status.StartTime = ptr.To(metav1.NewTime(at.Add(-time.Minute)))
			failedAt := metav1.NewTime(at)
			j.Status.Failed = 1
			j.Status.Conditions = []batchv1.JobCondition{
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: failedAt},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: failedAt},
			}
			Expect(k8sClient.Status().Update(ctx, j)).To(Succeed())
			return j
		}
		lastBody := func(n int) string {
			Eventually(pings).Should(HaveLen(n))
			last := pings(Default)[n-1]
			Expect(last.Kind).To(Equal(monitor.PingFail))
			body, _, err := harness.Manager.Store.PingBody(ctx, c.UID, last.N)
			Expect(err).NotTo(HaveOccurred())
			return string(body)
		}

		// The CronJob does not let its logs out: the fail ping says how
		// the pod ended, and how the CronJob's owner would let them out.
		bad := failJob("report-2", done.Add(2*time.Minute))
		body := lastBody(4)
		Expect(body).To(ContainSubstring("Job report-2 failed: BackoffLimitExceeded"))
		Expect(body).To(ContainSubstring("Pod report-2-x7k2p, container job exited with code 2 (Error)."))
		Expect(body).To(ContainSubstring("Hint: every attempt failed, and the Job's backoffLimit allows no more"))
		Expect(body).To(ContainSubstring(`The log of container job is not shown here: CronJob report does not have the annotation monitoring.vigil.dev/logs: "true"`))
		Expect(body).NotTo(ContainSubstring("connecting to db"))

		// Its owner lets them out.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cj)).To(Succeed())
		cj.Annotations = map[string]string{controller.AnnotationLogs: "true"}
		Expect(k8sClient.Update(ctx, cj)).To(Succeed())
		Eventually(func(g Gomega) map[string]string {
			cached := &batchv1.CronJob{}
			g.Expect(harness.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(cj), cached)).To(Succeed())
			return cached.Annotations
		}).Should(HaveKeyWithValue(controller.AnnotationLogs, "true"))
		worse := failJob("report-3", done.Add(4*time.Minute))
		body = lastBody(6)
		Expect(body).To(ContainSubstring("Job report-3 failed: BackoffLimitExceeded"))
		Expect(body).To(ContainSubstring("Pod report-3-x7k2p, container job exited with code 2 (Error).\n\nLast lines of the log of container job in pod report-3-x7k2p:\nconnecting to db\nERROR: report-3-x7k2p/job could not connect"))

		// The controller did all this from Jobs cached without their spec.
		cached := &batchv1.Job{}
		Expect(harness.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(bad), cached)).To(Succeed())
		Expect(cached.Spec.Template.Spec.Containers).To(BeEmpty())
		Expect(cached.ManagedFields).To(BeEmpty())
		Expect(cached.Status.Conditions).To(HaveLen(2))

		// A re-list (here: any change to the Jobs) records nothing twice.
		for _, j := range []*batchv1.Job{ok, bad, worse} {
			cur := &batchv1.Job{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(j), cur)).To(Succeed())
			cur.Labels = map[string]string{"touched": "yes"}
			Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		}
		Consistently(pings).WithTimeout(2 * time.Second).Should(HaveLen(6))
		Eventually(func(g Gomega) int64 {
			cur := &v1.Check{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), cur)).To(Succeed())
			return cur.Status.NPings
		}).Should(BeEquivalentTo(6))

		// A restarted manager, with nothing in memory, reconciles every
		// Job again and records none of them twice.
		reconciled := startJobController()
		Eventually(reconciled).Should(ContainElements(client.ObjectKeyFromObject(ok), client.ObjectKeyFromObject(bad), client.ObjectKeyFromObject(worse)))
		Consistently(pings).WithTimeout(time.Second).Should(HaveLen(6))
	})
})

// startJobController runs a Job controller in a manager of its own, as a
// restarted Vigil would, until the spec ends. The function it returns lists
// the Jobs reconciled so far.
func startJobController() func() []client.ObjectKey {
	mgr, err := ctrl.NewManager(harness.ManagerConfig, ctrl.Options{Scheme: k8sClient.Scheme(), Cache: manager.CacheOptions(nil),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	Expect(err).NotTo(HaveOccurred())
	door, err := checks.New(ctx, checks.Options{Cache: mgr.GetCache(), Client: mgr.GetClient(), Live: mgr.GetAPIReader(),
		Store: harness.Manager.Store, Clock: clk})
	Expect(err).NotTo(HaveOccurred())
	jobs := &controller.JobReconciler{
		Client: mgr.GetClient(), Checks: door, Pods: mgr.GetAPIReader(),
		Logs: func(context.Context, string, string, string) ([]byte, error) {
			return []byte("a log read again\n"), nil
		},
	}
	var mu sync.Mutex
	var done []client.ObjectKey
	Expect(ctrl.NewControllerManagedBy(mgr).Named("job-after-restart").For(&batchv1.Job{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			res, err := jobs.Reconcile(ctx, req)
			if err == nil {
				mu.Lock()
				done = append(done, req.NamespacedName)
				mu.Unlock()
			}
			return res, err
		}))).To(Succeed())
	mctx, stop := context.WithCancel(ctx)
	DeferCleanup(stop)
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(mctx)).To(Succeed())
	}()
	return func() []client.ObjectKey {
		mu.Lock()
		defer mu.Unlock()
		return append([]client.ObjectKey(nil), done...)
	}
}

// pausedBySuspend is the annotation with which the CronJob controller marks
// a check it paused.
const pausedBySuspend = "monitoring.vigil.dev/paused-by-suspend"

// freezeAnnotation makes the API server refuse any update of the Check that
// adds or removes the annotation, as a user's admission policy could, until
// the function it returns is called. Both return once the API server
// enforces what they say.
func freezeAnnotation(ns, check, annotation string) (unfreeze func()) {
	has := func(obj string) string {
		return fmt.Sprintf("(has(%[1]s.metadata.annotations) && %[2]q in %[1]s.metadata.annotations)", obj, annotation)
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "freeze-"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				ResourceNames: []string{check},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{v1.GroupVersion.Group},
						APIVersions: []string{"*"}, Resources: []string{"checks"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: has("object") + " == " + has("oldObject"),
				Message:    annotation + " is frozen",
			}},
		},
	}
	Expect(k8sClient.Create(ctx, policy)).To(Succeed())
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}},
		},
	}
	Expect(k8sClient.Create(ctx, binding)).To(Succeed())

	// A dry run of the write the policy refuses tells when it is in force.
	toggle := func() error {
		c := &v1.Check{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: check}, c); err != nil {
			return err
		}
		changed := c.DeepCopy()
		if _, ok := c.Annotations[annotation]; ok {
			delete(changed.Annotations, annotation)
		} else {
			if changed.Annotations == nil {
				changed.Annotations = map[string]string{}
			}
			changed.Annotations[annotation] = "true"
		}
		return k8sClient.Patch(ctx, changed, client.MergeFrom(c), client.DryRunAll)
	}
	Eventually(toggle).Should(MatchError(ContainSubstring("is frozen")))
	return func() {
		Expect(k8sClient.Delete(ctx, binding)).To(Succeed())
		Expect(k8sClient.Delete(ctx, policy)).To(Succeed())
		Eventually(toggle).Should(Succeed())
	}
}
