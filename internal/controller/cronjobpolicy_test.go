package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/monitor"
)

var _ = Describe("CronJob policies", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	cronJob := func(namespace, name string, lbls, annotations map[string]string) *batchv1.CronJob {
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: lbls, Annotations: annotations},
			Spec: batchv1.CronJobSpec{
				Schedule: "0 0 29 2 *", // far off: the suite moves its clock
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "job", Image: "busybox"}},
				}}}},
			},
		}
		Expect(k8sClient.Create(ctx, cj)).To(Succeed())
		return cj
	}
	checkOf := func(namespace, cronJob string) func(Gomega) *v1.Check {
		return func(g Gomega) *v1.Check {
			c := &v1.Check{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: controller.CheckNameForCronJob(cronJob)}, c)).To(Succeed())
			return c
		}
	}
	noCheck := func(namespace, cronJob string) func() error {
		return func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: controller.CheckNameForCronJob(cronJob)}, &v1.Check{})
		}
	}
	policyStatus := func(key client.ObjectKey, obj interface {
		client.Object
	}) func(Gomega) v1.CronJobPolicyStatus {
		return func(g Gomega) v1.CronJobPolicyStatus {
			g.Expect(k8sClient.Get(ctx, key, obj)).To(Succeed())
			switch p := obj.(type) {
			case *v1.CronJobPolicy:
				g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
				return p.Status
			case *v1.ClusterCronJobPolicy:
				g.Expect(p.Status.ObservedGeneration).To(Equal(p.Generation))
				return p.Status
			}
			panic("not a policy")
		}
	}

	It("covers the CronJobs it selects, leaves out the opted-out one, and follows its edits", func() {
		batch := map[string]string{"tier": "batch"}
		cronJob(ns, "backup", batch, nil)
		cronJob(ns, "report", batch, map[string]string{controller.AnnotationGrace: "2m"})
		cronJob(ns, "cleanup", batch, nil)
		cronJob(ns, "experiment", batch, map[string]string{controller.AnnotationCheck: "false"})
		cronJob(ns, "web-warmup", map[string]string{"tier": "web"}, nil)
		policy := &v1.CronJobPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "batch-jobs"}, Spec: v1.CronJobPolicySpec{
			Selector: &metav1.LabelSelector{MatchLabels: batch},
			CronJobDefaults: v1.CronJobDefaults{Grace: &metav1.Duration{Duration: 15 * time.Minute}, Tags: "batch",
				AlertPolicy: v1.AlertPolicy{FailureThreshold: 2}},
		}}
		Expect(k8sClient.Create(ctx, policy)).To(Succeed())

		for _, name := range []string{"backup", "report", "cleanup"} {
			Eventually(checkOf(ns, name)).Should(HaveField("Status.Coverage", PointTo(HaveField("Policy", "CronJobPolicy/batch-jobs"))))
		}
		backup := checkOf(ns, "backup")(Default)
		Expect(backup.Spec.Grace).To(BeEquivalentTo(900))
		Expect(backup.Spec.Tags).To(Equal("batch"))
		Expect(backup.Spec.FailureThreshold).To(BeEquivalentTo(2))
		Expect(*backup.Spec.Schedule).To(Equal("0 0 29 2 *"))
		Expect(backup.Status.Coverage.PolicyFields).To(ConsistOf("grace", "tags", "failureThreshold"))
		report := checkOf(ns, "report")(Default)
		Expect(report.Spec.Grace).To(BeEquivalentTo(120), "the CronJob's annotation wins over the policy")
		Expect(report.Status.Coverage.AnnotationFields).To(ConsistOf("grace"))
		Expect(report.Status.Coverage.PolicyFields).To(ConsistOf("tags", "failureThreshold"))
		Consistently(noCheck(ns, "experiment")).WithTimeout(time.Second).Should(MatchError(ContainSubstring("not found")))
		Expect(noCheck(ns, "web-warmup")()).To(MatchError(ContainSubstring("not found")))
		Eventually(policyStatus(client.ObjectKeyFromObject(policy), &v1.CronJobPolicy{})).Should(And(
			HaveField("CronJobs", BeEquivalentTo(3)),
			HaveField("Conditions", ContainElement(And(HaveField("Type", v1.ConditionConflicting), HaveField("Status", metav1.ConditionFalse)))),
		))

		// What a user writes by hand on a policy's check stays; what the
		// policy sets follows the policy.
		Expect(k8sClient.Patch(ctx, backup, client.RawPatch(client.Merge.Type(),
			[]byte(`{"spec":{"desc":"nightly database backup","minRuntime":"30s","channels":["pager"]}}`)))).To(Succeed())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(policy), policy)).To(Succeed())
		policy.Spec.Grace = &metav1.Duration{Duration: 30 * time.Minute}
		policy.Spec.FailureThreshold = 0
		Expect(k8sClient.Update(ctx, policy)).To(Succeed())
		Eventually(func(g Gomega) {
			c := checkOf(ns, "backup")(g)
			g.Expect(c.Spec.Grace).To(BeEquivalentTo(1800))
			g.Expect(c.Spec.FailureThreshold).To(BeZero(), "the policy no longer sets it")
			g.Expect(c.Spec.Desc).To(Equal("nightly database backup"))
			g.Expect(c.Spec.MinRuntime).To(Equal(&metav1.Duration{Duration: 30 * time.Second}))
			g.Expect(c.Spec.Channels).To(Equal([]string{"pager"}), "neither the policy nor an annotation sets channels")
			g.Expect(c.Status.Coverage).NotTo(BeNil())
			g.Expect(c.Status.Coverage.PolicyFields).To(ConsistOf("grace", "tags"))
		}).Should(Succeed())

		// A CronJob that leaves the selector loses its Check; the policy
		// counts what it covers.
		cur := &batchv1.CronJob{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cleanup"}, cur)).To(Succeed())
		cur.Labels = map[string]string{"tier": "web"}
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(noCheck(ns, "cleanup")).Should(MatchError(ContainSubstring("not found")))
		Eventually(policyStatus(client.ObjectKeyFromObject(policy), &v1.CronJobPolicy{})).Should(HaveField("CronJobs", BeEquivalentTo(2)))

		// Deleting the policy removes the Checks it made.
		Expect(k8sClient.Delete(ctx, policy)).To(Succeed())
		Eventually(noCheck(ns, "backup")).Should(MatchError(ContainSubstring("not found")))
		Eventually(noCheck(ns, "report")).Should(MatchError(ContainSubstring("not found")))
	})

	It("reports a CronJob two policies select, and applies the first by name", func() {
		cronJob(ns, "sync", nil, nil)
		for _, name := range []string{"team-b", "team-a"} {
			Expect(k8sClient.Create(ctx, &v1.CronJobPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: v1.CronJobPolicySpec{CronJobDefaults: v1.CronJobDefaults{Tags: name}}})).To(Succeed())
		}
		Eventually(checkOf(ns, "sync")).Should(HaveField("Status.Coverage", PointTo(And(
			HaveField("Policy", "CronJobPolicy/team-a"),
			HaveField("AlsoSelectedBy", ConsistOf("CronJobPolicy/team-b")),
		))))
		Expect(checkOf(ns, "sync")(Default).Spec.Tags).To(Equal("team-a"))
		for _, name := range []string{"team-a", "team-b"} {
			Eventually(policyStatus(client.ObjectKey{Namespace: ns, Name: name}, &v1.CronJobPolicy{})).Should(And(
				HaveField("Conflicts", ConsistOf(ContainSubstring("sync: also selected by"))),
				HaveField("Conditions", ContainElement(And(HaveField("Type", v1.ConditionConflicting),
					HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1.ReasonSelectedTwice)))),
			))
		}
		Expect(policyStatus(client.ObjectKey{Namespace: ns, Name: "team-a"}, &v1.CronJobPolicy{})(Default).CronJobs).To(BeEquivalentTo(1))
		Expect(policyStatus(client.ObjectKey{Namespace: ns, Name: "team-b"}, &v1.CronJobPolicy{})(Default).CronJobs).To(BeZero())
	})

	It("covers labelled namespaces by a cluster policy, and lets a namespace's own policy win", func() {
		label := map[string]string{"vigil-test/cronjobs": ns}
		policy := &v1.ClusterCronJobPolicy{ObjectMeta: metav1.ObjectMeta{Name: "platform-" + ns}, Spec: v1.ClusterCronJobPolicySpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: label},
			CronJobDefaults:   v1.CronJobDefaults{Tags: "platform", Channels: []string{"*"}},
		}}
		Expect(k8sClient.Create(ctx, policy)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, policy))).To(Succeed()) })
		other := newNamespace()
		cronJob(ns, "etl", nil, nil)
		cronJob(other, "etl", nil, nil)
		Consistently(noCheck(ns, "etl")).WithTimeout(time.Second).Should(MatchError(ContainSubstring("not found")),
			"the namespace is not labelled yet")

		namespace := &corev1.Namespace{}
		Expect(k8sClient.Get(ctx, client.ObjectKey{Name: ns}, namespace)).To(Succeed())
		namespace.Labels = label
		Expect(k8sClient.Update(ctx, namespace)).To(Succeed())
		Eventually(checkOf(ns, "etl")).Should(HaveField("Status.Coverage", PointTo(HaveField("Policy", "ClusterCronJobPolicy/platform-"+ns))))
		Expect(checkOf(ns, "etl")(Default).Spec.Channels).To(Equal([]string{"*"}))
		Consistently(noCheck(other, "etl")).WithTimeout(time.Second).Should(MatchError(ContainSubstring("not found")))
		Eventually(policyStatus(client.ObjectKeyFromObject(policy), &v1.ClusterCronJobPolicy{})).Should(HaveField("CronJobs", BeEquivalentTo(1)))

		// The namespace's own policy takes over its CronJobs.
		Expect(k8sClient.Create(ctx, &v1.CronJobPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ours"},
			Spec: v1.CronJobPolicySpec{CronJobDefaults: v1.CronJobDefaults{Tags: "ours"}}})).To(Succeed())
		Eventually(func(g Gomega) {
			c := checkOf(ns, "etl")(g)
			g.Expect(c.Status.Coverage).To(PointTo(HaveField("Policy", "CronJobPolicy/ours")))
			g.Expect(c.Spec.Tags).To(Equal("ours"))
			g.Expect(c.Spec.Channels).To(BeEmpty(), "channels were the cluster policy's, and ours sets none")
		}).Should(Succeed())
		Eventually(policyStatus(client.ObjectKeyFromObject(policy), &v1.ClusterCronJobPolicy{})).Should(HaveField("CronJobs", BeZero()))
	})

	It("refuses a policy whose selector cannot be read", func() {
		p := &v1.CronJobPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: v1.CronJobPolicySpec{
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}}}
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		cronJob(ns, "anything", nil, nil)
		Eventually(func(g Gomega) {
			st := policyStatus(client.ObjectKeyFromObject(p), &v1.CronJobPolicy{})(g)
			ready := meta.FindStatusCondition(st.Conditions, v1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Message).To(ContainSubstring("spec.selector"))
		}).Should(Succeed())
		Consistently(noCheck(ns, "anything")).WithTimeout(time.Second).Should(MatchError(ContainSubstring("not found")))
	})

	It("takes a check down once when its CronJob stays suspended past its limit", func() {
		cj := cronJob(ns, "archive", nil, map[string]string{controller.AnnotationCheck: "true", controller.AnnotationMaxSuspended: "2h"})
		Eventually(checkOf(ns, "archive")).Should(HaveField("Status.State", v1.CheckStateNew))
		cur := &batchv1.CronJob{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Spec.Suspend = ptr.To(true)
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(checkOf(ns, "archive")).Should(HaveField("Status.State", v1.CheckStatePaused))

		// Past the limit (the controller's requeue runs on the real clock:
		// a touch of the CronJob brings the reconcile now).
		clk.Step(2*time.Hour + time.Minute)
		touch := func(value string) {
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
			cur.Annotations["touched"] = value
			Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		}
		touch("1")
		Eventually(checkOf(ns, "archive")).Should(HaveField("Status.State", v1.CheckStateDown))
		c := checkOf(ns, "archive")(Default)
		pings, err := harness.Manager.Checks.Pings(ctx, c)
		Expect(err).NotTo(HaveOccurred())
		Expect(pings).To(HaveLen(1))
		Expect(pings[0].Kind).To(Equal(monitor.PingFail))
		body, err := harness.Manager.Checks.PingBody(ctx, c, pings[0].N)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(body)).To(And(ContainSubstring("CronJob archive has been suspended since"),
			ContainSubstring("longer than its limit of 2 hours"), ContainSubstring("annotation monitoring.vigil.dev/max-suspended")))

		// Once: another reconcile, still suspended, adds nothing.
		touch("2")
		Consistently(func(g Gomega) int {
			p, err := harness.Manager.Checks.Pings(ctx, c)
			g.Expect(err).NotTo(HaveOccurred())
			return len(p)
		}).WithTimeout(time.Second).Should(Equal(1))
		Expect(checkOf(ns, "archive")(Default).Status.State).To(Equal(v1.CheckStateDown))

		// Resumed: the markers go, and the check waits for a run.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Spec.Suspend = ptr.To(false)
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(func(g Gomega) map[string]string { return checkOf(ns, "archive")(g).Annotations }).Should(And(
			Not(HaveKey("monitoring.vigil.dev/paused-by-suspend")), Not(HaveKey("monitoring.vigil.dev/suspended-alerted"))))
	})
})
