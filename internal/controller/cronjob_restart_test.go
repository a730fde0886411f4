package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// What the CronJob controller saw of a suspension is in the ping store, so
// a CronJob resumed while the manager was away has not missed the runs it
// skipped while suspended.
var _ = Describe("A CronJob's suspension across a restart", func() {
	It("does not take the runs skipped while it was suspended for missed ones after the manager restarts", func() {
		ns := newNamespace()
		last := catchUp().Truncate(10 * time.Minute).Add(10 * time.Minute)
		clk.SetTime(last)
		// Followed by a check of its own manifest, not given one: only the
		// store remembers its suspension.
		cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sync"},
			Spec: batchv1.CronJobSpec{Schedule: "*/10 * * * *", Suspend: ptr.To(true),
				StartingDeadlineSeconds: ptr.To[int64](60),
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "sync", Image: "registry.example/sync:1"}},
				}}}}}}
		Expect(k8sClient.Create(ctx, cj)).To(Succeed())
		cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(last))
		Expect(k8sClient.Status().Update(ctx, cj)).To(Succeed())
		timeout := int64(600)
		c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sync"},
			Spec: v1.CheckSpec{Timeout: &timeout, Grace: 600, TZ: "UTC", CronJobRef: &v1.LocalObjectReference{Name: cj.Name}}}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		Eventually(func(g Gomega) store.CronJobSuspension {
			seen, ok, err := harness.Manager.Store.CronJobSuspension(ctx, cj.UID)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ok).To(BeTrue())
			return seen
		}).Should(HaveField("Suspended", BeTrue()))

		// Three runs fall due while it is suspended, and it is resumed
		// while no manager runs.
		clk.Step(35 * time.Minute)
		harness.Restart(func() {
			cur := &batchv1.CronJob{}
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
			cur.Spec.Suspend = ptr.To(false)
			Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		})
		pings := func(g Gomega) []store.LoggedPing {
			pings, err := harness.Manager.Checks.Pings(ctx, c)
			g.Expect(err).NotTo(HaveOccurred())
			return pings
		}
		Eventually(func(g Gomega) store.CronJobSuspension {
			seen, _, err := harness.Manager.Store.CronJobSuspension(ctx, cj.UID)
			g.Expect(err).NotTo(HaveOccurred())
			return seen
		}).Should(Equal(store.CronJobSuspension{Suspended: false, Until: clk.Now().Truncate(time.Microsecond).UTC()}))
		Consistently(pings).WithTimeout(time.Second).Should(BeEmpty())

		// A run due after the resume that is not created is missed, as
		// ever.
		clk.Step(10*time.Minute + time.Minute)
		cur := &batchv1.CronJob{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cj), cur)).To(Succeed())
		cur.Annotations = map[string]string{"touched": "1"}
		Expect(k8sClient.Update(ctx, cur)).To(Succeed())
		Eventually(func(g Gomega) monitor.PingKind {
			p := pings(g)
			g.Expect(p).To(HaveLen(1))
			return p[0].Kind
		}).Should(Equal(monitor.PingFail))
	})
})
