package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// envtest runs no kubelet, scheduler or Job controller: these tests write
// the pod statuses and Events they would, and the CronJob's status.
var _ = Describe("CronJob runs that fail, never start or overlap", func() {
	var (
		ns string
		cj *batchv1.CronJob
		c  *v1.Check
	)
	BeforeEach(func() {
		ns = newNamespace()
		cj = &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etl", Annotations: map[string]string{controller.AnnotationCheck: "true"}},
			Spec: batchv1.CronJobSpec{
				// Far off while the test sets the scene; the tests that
				// need a due run give it a near schedule.
				Schedule: "0 0 29 2 *",
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy:    corev1.RestartPolicyNever,
					ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}},
					Containers: []corev1.Container{{Name: "etl", Image: "registry.example/etl:7",
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
				}}}},
			},
		}
		Expect(k8sClient.Create(ctx, cj)).To(Succeed())
		Eventually(func(g Gomega) {
			c = &v1.Check{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: controller.CheckNameForCronJob(cj.Name)}, c)).To(Succeed())
			g.Expect(c.Status.State).To(Equal(v1.CheckStateNew))
		}).Should(Succeed())
	})

	// newJob makes a Job of the CronJob that started at started (clock
	// time) and is active.
	newJob := func(name string, started time.Time) *batchv1.Job {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: ptr.To(true)}}},
			Spec: cj.Spec.JobTemplate.Spec}
		Expect(k8sClient.Create(ctx, j)).To(Succeed())
		j.Status.StartTime = ptr.To(metav1.NewTime(started))
		j.Status.Active = 1
		j.Status.Ready = ptr.To[int32](0)
		Expect(k8sClient.Status().Update(ctx, j)).To(Succeed())
		return j
	}
	// newPod makes a pod of the Job with the status a kubelet would write.
	newPod := func(j *batchv1.Job, name string, status corev1.PodStatus) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels:          map[string]string{batchv1.JobNameLabel: j.Name},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID, Controller: ptr.To(true)}}},
			Spec: cj.Spec.JobTemplate.Spec.Template.Spec}
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		p.Status = status
		Expect(k8sClient.Status().Update(ctx, p)).To(Succeed())
		return p
	}
	// warn writes a Warning Event about a pod, as a kubelet or the
	// scheduler would.
	warn := func(podName, reason, message string) {
		Expect(k8sClient.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: podName + "."},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: podName, APIVersion: "v1"},
			Type:           corev1.EventTypeWarning, Reason: reason, Message: message,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1, Source: corev1.EventSource{Component: "kubelet"},
		})).To(Succeed())
	}
	failJob := func(j *batchv1.Job, reason string) {
		at := metav1.NewTime(clk.Now())
		j.Status.Active, j.Status.Failed = 0, 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, Message: "failed", LastTransitionTime: at},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: "failed", LastTransitionTime: at},
		}
		Expect(k8sClient.Status().Update(ctx, j)).To(Succeed())
	}
	// failBody waits for the check's newest ping to be a failure and
	// returns its body.
	failBody := func(rid func(string) bool) string {
		var body []byte
		Eventually(func(g Gomega) {
			pings, err := harness.Manager.Checks.Pings(ctx, c)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pings).NotTo(BeEmpty())
			g.Expect(pings[0].Kind).To(Equal(monitor.PingFail))
			g.Expect(rid(pings[0].RID)).To(BeTrue())
			body, err = harness.Manager.Checks.PingBody(ctx, c, pings[0].N)
			g.Expect(err).NotTo(HaveOccurred())
		}).Should(Succeed())
		return string(body)
	}
	anyRID := func(string) bool { return true }

	It("says why a Job failed: OOMKilled with the limit, and a pod that never ran for its image", func() {
		j := newJob("etl-1", catchUp())
		newPod(j, "etl-1-aaaaa", corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{Name: "etl",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}}})
		newPod(j, "etl-1-bbbbb", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "etl",
			Image: "registry.example/etl:7",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example/etl:7"`}}}}})
		warn("etl-1-bbbbb", "Failed", `Failed to pull image "registry.example/etl:7": rpc error: code = NotFound desc = manifest unknown`)
		failJob(j, "BackoffLimitExceeded")
		body := failBody(func(rid string) bool { return rid == string(j.UID) })
		Expect(body).To(ContainSubstring("Job etl-1 failed: BackoffLimitExceeded"))
		Expect(body).To(ContainSubstring("Pod etl-1-aaaaa, container etl exited with code 137 (OOMKilled)."))
		Expect(body).To(ContainSubstring("(its limit is 128Mi): raise resources.limits.memory"))
		Expect(body).To(ContainSubstring(`Pod etl-1-bbbbb never ran: container etl: ImagePullBackOff: Failed to pull image "registry.example/etl:7": rpc error: code = NotFound desc = manifest unknown`))
		Expect(body).To(ContainSubstring(`Hint: the image "registry.example/etl:7" could not be pulled`))
		Expect(body).To(ContainSubstring("imagePullSecrets (regcred)"))
		Expect(body).To(ContainSubstring("The log of container etl is not shown here"))
	})

	It("says why a Job whose pod is gone failed, from the Events: no node for it", func() {
		j := newJob("etl-2", catchUp())
		// The Job controller deleted the pod when the deadline passed; its
		// Events and the Job's own remain.
		Expect(k8sClient.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: "etl-2."},
			InvolvedObject: corev1.ObjectReference{Kind: "Job", Namespace: ns, Name: j.Name, UID: j.UID, APIVersion: "batch/v1"},
			Type:           corev1.EventTypeNormal, Reason: "SuccessfulCreate", Message: "Created pod: etl-2-ccccc",
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1, Source: corev1.EventSource{Component: "job-controller"},
		})).To(Succeed())
		warn("etl-2-ccccc", "FailedScheduling", "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available.")
		failJob(j, "DeadlineExceeded")
		body := failBody(func(rid string) bool { return rid == string(j.UID) })
		Expect(body).To(ContainSubstring("Hint: the Job ran longer than its activeDeadlineSeconds"))
		Expect(body).To(ContainSubstring("Pod etl-2-ccccc never ran: Unschedulable: 0/3 nodes are available: 3 Insufficient memory."))
		Expect(body).To(ContainSubstring("Hint: no node can take the pod"))
	})

	It("reports a run whose pod cannot start, once, as a run that did not start", func() {
		started := catchUp()
		j := newJob("etl-3", started)
		newPod(j, "etl-3-ddddd", corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "etl",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: `secret "etl-db" not found`}}}}})
		Eventually(func(g Gomega) []any {
			pings, err := harness.Manager.Checks.Pings(ctx, c)
			g.Expect(err).NotTo(HaveOccurred())
			out := []any{}
			for _, p := range pings {
				out = append(out, p.Kind)
			}
			return out
		}).Should(Equal([]any{monitor.PingStart}))

		// Past NotStartedAfter (the requeue waits on the real clock: a
		// status write of the Job brings the reconcile now).
		clk.SetTime(started.Add(controller.NotStartedAfter + time.Second))
		j.Status.Ready = ptr.To[int32](0)
		j.Status.Terminating = ptr.To[int32](0)
		Expect(k8sClient.Status().Update(ctx, j)).To(Succeed())
		body := failBody(func(rid string) bool { return rid == string(j.UID) })
		Expect(body).To(ContainSubstring("Job etl-3 has not started: none of its pods has run 5 minutes"))
		Expect(body).To(ContainSubstring(`Pod etl-3-ddddd never ran: container etl: CreateContainerConfigError: secret "etl-db" not found`))
		Expect(body).To(ContainSubstring("Hint: a ConfigMap or Secret the container uses"))
		Eventually(func(g Gomega) v1.CheckState {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			return c.Status.State
		}).Should(Equal(v1.CheckStateDown))

		// Once.
		j.Status.Terminating = ptr.To[int32](1)
		Expect(k8sClient.Status().Update(ctx, j)).To(Succeed())
		Consistently(func(g Gomega) int {
			pings, err := harness.Manager.Checks.Pings(ctx, c)
			g.Expect(err).NotTo(HaveOccurred())
			return len(pings)
		}).WithTimeout(time.Second).Should(Equal(2))
	})

	It("reports a scheduled run that Forbid skipped behind a hung one", func() {
		hung := newJob("etl-4", catchUp().Add(-time.Hour))
		// The last run was created at the next ten-minute mark (after the
		// check was); the schedule becomes every ten minutes.
		last := clk.Now().Truncate(10 * time.Minute).Add(10 * time.Minute)
		clk.SetTime(last)
		cur := &batchv1.CronJob{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Status.LastScheduleTime = ptr.To(metav1.NewTime(last))
		cur.Status.Active = []corev1.ObjectReference{{Kind: "Job", Namespace: ns, Name: hung.Name, UID: hung.UID, APIVersion: "batch/v1"}}
		Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Spec.Schedule = "*/10 * * * *"
		cur.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Consistently(func(g Gomega) int {
			pings, err := harness.Manager.Checks.Pings(ctx, c)
			g.Expect(err).NotTo(HaveOccurred())
			return len(pings)
		}).WithTimeout(time.Second).Should(BeNumerically("<=", 1), "nothing is due yet (the hung Job's start at most)")

		// The next run was due ten minutes after the last; two minutes of
		// slack later it has not started.
		clk.Step(last.Add(10*time.Minute + controller.StartSlack + time.Second).Sub(clk.Now()))
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Annotations["touched"] = "1"
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		body := failBody(anyRID)
		Expect(body).To(ContainSubstring("The run of CronJob etl scheduled at " + last.Add(10*time.Minute).UTC().Format(time.RFC3339) + " did not start"))
		Expect(body).To(ContainSubstring("the previous run (Job etl-4) is still running, and concurrencyPolicy Forbid skips a run"))
	})

	It("does not take runs scheduled while the CronJob was suspended for missed ones, and reports a streak once", func() {
		last := catchUp().Truncate(10 * time.Minute).Add(10 * time.Minute)
		clk.SetTime(last)
		cur := &batchv1.CronJob{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Status.LastScheduleTime = ptr.To(metav1.NewTime(last))
		Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Spec.Schedule, cur.Spec.Suspend = "*/10 * * * *", ptr.To(true)
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(func(g Gomega) v1.CheckState {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			return c.Status.State
		}).Should(Equal(v1.CheckStatePaused))

		// Three runs fall due while it is suspended; then it is resumed.
		clk.Step(35 * time.Minute)
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Spec.Suspend = ptr.To(false)
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(func(g Gomega) map[string]string {
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), c)).To(Succeed())
			return c.Annotations
		}).Should(HaveKey("monitoring.vigil.dev/resumed-at"))
		Consistently(func(g Gomega) []store.LoggedPing {
			pings, err := harness.Manager.Checks.Pings(ctx, c)
			g.Expect(err).NotTo(HaveOccurred())
			return pings
		}).WithTimeout(time.Second).Should(BeEmpty())

		// The next two runs after the resume are not created: one failure
		// for the streak.
		clk.Step(20*time.Minute + controller.StartSlack)
		touch := func(v string) {
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
			cur.Annotations["touched"] = v
			Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		}
		touch("1")
		body := failBody(anyRID)
		Expect(body).To(ContainSubstring("did not start: no Job was created for it within 2 minutes"))
		clk.Step(10 * time.Minute)
		touch("2")
		Consistently(func(g Gomega) int {
			pings, err := harness.Manager.Checks.Pings(ctx, c)
			g.Expect(err).NotTo(HaveOccurred())
			return len(pings)
		}).WithTimeout(time.Second).Should(Equal(1))
	})

	It("reports runs that overlap when the CronJob asks for it", func() {
		first := newJob("etl-5", catchUp())
		clk.Step(30 * time.Minute)
		second := newJob("etl-6", clk.Now())
		cur := &batchv1.CronJob{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Status.Active = []corev1.ObjectReference{
			{Kind: "Job", Namespace: ns, Name: first.Name, UID: first.UID, APIVersion: "batch/v1"},
			{Kind: "Job", Namespace: ns, Name: second.Name, UID: second.UID, APIVersion: "batch/v1"}}
		Expect(k8sClient.Status().Update(ctx, cur)).To(Succeed())
		Consistently(func(g Gomega) []monitor.PingKind {
			pings, err := harness.Manager.Checks.Pings(ctx, c)
			g.Expect(err).NotTo(HaveOccurred())
			var kinds []monitor.PingKind
			for _, p := range pings {
				kinds = append(kinds, p.Kind)
			}
			return kinds
		}).WithTimeout(time.Second).ShouldNot(ContainElement(monitor.PingFail), "overlaps show as two runs, and alert only when asked")

		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Annotations[controller.AnnotationAlertOnOverlap] = "true"
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		body := failBody(anyRID)
		Expect(body).To(ContainSubstring("Runs of CronJob etl overlap: Job etl-6 started at"))
		Expect(body).To(ContainSubstring("while etl-5 (started "))
	})
})
