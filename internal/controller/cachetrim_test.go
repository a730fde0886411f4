package controller_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/controller"
)

var _ = Describe("What the manager's cache keeps", func() {
	It("drops kubectl's copy of an applied Check, and Vigil's writes leave the copy on the API server", func() {
		ns := newNamespace()
		c := &v1.Check{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "Check"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "applied", Annotations: map[string]string{"team": "billing"}},
			Spec:       v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Tags: "prod"}}
		applied, err := json.Marshal(c)
		Expect(err).NotTo(HaveOccurred())
		c.Annotations[corev1.LastAppliedConfigAnnotation] = string(applied)
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		Eventually(ready(c)).Should(BeTrue())

		cached := &v1.Check{}
		Expect(harness.Manager.GetCache().Get(ctx, client.ObjectKeyFromObject(c), cached)).To(Succeed())
		Expect(cached.Annotations).To(Equal(map[string]string{"team": "billing"}), "the cache kept kubectl's copy")
		Expect(cached.ManagedFields).To(BeEmpty())

		// A write through the door starts from the cached Check.
		_, err = harness.Manager.Checks.Update(ctx, cached, func(c *v1.Check) error { c.Spec.Tags = "prod db"; return nil })
		Expect(err).NotTo(HaveOccurred())
		live := &v1.Check{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), live)).To(Succeed())
		Expect(live.Spec.Tags).To(Equal("prod db"))
		Expect(live.Annotations).To(HaveKeyWithValue(corev1.LastAppliedConfigAnnotation, string(applied)),
			"a write from the trimmed cache removed kubectl's copy: the next kubectl apply would not know what it applied")
		Expect(live.Annotations).To(HaveKeyWithValue("team", "billing"))
	})
})

var _ = DescribeTable("The cache transforms",
	func(in, want client.Object, trim func(any) (any, error)) {
		out, err := trim(in)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(Equal(want))
	},
	Entry("a Job keeps its identity, owner and status", job(true), job(false), controller.TrimJob),
	Entry("a CronJob keeps what its controllers read, not its Job template", cronJobObject(true), cronJobObject(false), controller.TrimCronJob),
	Entry("a Check keeps all but kubectl's bookkeeping", check(true), check(false), controller.TrimCheck),
	Entry("an object without annotations is left so", &v1.Check{Spec: v1.CheckSpec{Tags: "x"}}, &v1.Check{Spec: v1.CheckSpec{Tags: "x"}}, controller.TrimCheck),
)

// objectMeta is an object's metadata, with what only other clients read
// when whole; only: kubectl's annotation is its only one.
func objectMeta(whole, only bool) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Namespace: "a", Name: "nightly", UID: "u-1", Labels: map[string]string{"team": "billing"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: "nightly", UID: "u-0"}}}
	if !only {
		m.Annotations = map[string]string{"vigil.dev/logs": "true"}
	}
	if whole {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[corev1.LastAppliedConfigAnnotation] = `{"kind":"..."}`
		m.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	}
	return m
}

func job(whole bool) client.Object {
	j := &batchv1.Job{ObjectMeta: objectMeta(whole, false), Status: batchv1.JobStatus{Succeeded: 1}}
	if whole {
		j.Spec = batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "job", Image: "busybox"}}}}}
	}
	return j
}

func cronJobObject(whole bool) client.Object {
	suspend, deadline := true, int64(60)
	cj := &batchv1.CronJob{ObjectMeta: objectMeta(whole, true), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", TimeZone: ptrTo("Europe/Riga"),
		Suspend: &suspend, StartingDeadlineSeconds: &deadline, ConcurrencyPolicy: batchv1.ForbidConcurrent},
		Status: batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "nightly-1"}}}}
	if whole {
		cj.Spec.JobTemplate = batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "job", Image: "busybox", Command: []string{"sh", "-c", "backup"}}}}}}}
	}
	return cj
}

func check(whole bool) client.Object {
	return &v1.Check{ObjectMeta: objectMeta(whole, false), Spec: v1.CheckSpec{Timeout: i64(60), Tags: "prod"},
		Status: v1.CheckStatus{State: v1.CheckStateUp}}
}

func ptrTo[T any](v T) *T { return &v }
