package controller_test

import (
	"encoding/json"
	"unsafe"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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

var _ = Describe("The cache's shared strings", func() {
	// decoded is a Check as the watch decodes it: every string in bytes
	// of its own.
	decoded := func(name, uid string) *v1.Check {
		raw, err := json.Marshal(&v1.Check{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "Check"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, UID: types.UID(uid),
				Labels: map[string]string{"app.kubernetes.io/part-of": "billing"}, Finalizers: []string{"monitoring.vigil.dev/check"}},
			Spec: v1.CheckSpec{Schedule: ptrTo("0 3 * * *"), TZ: "Europe/Riga", Tags: "prod backup", Channels: []string{"oncall"}},
			Status: v1.CheckStatus{UUID: uid, State: v1.CheckStateUp, LastPingType: v1.PingSuccess, Conditions: []metav1.Condition{{
				Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonMonitoring, Message: "Vigil is monitoring this check"}}}})
		Expect(err).NotTo(HaveOccurred())
		c := &v1.Check{}
		Expect(json.Unmarshal(raw, c)).To(Succeed())
		out, err := controller.TrimCheck(c)
		Expect(err).NotTo(HaveOccurred())
		return out.(*v1.Check)
	}
	same := func(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

	It("keeps one copy of what Checks repeat, and each its own name and UID", func() {
		a, b := decoded("nightly", "0b9c4a8e-0000-4c55-9a4b-1c2d3e4f5a6b"), decoded("hourly", "0b9c4a8e-1111-4c55-9a4b-1c2d3e4f5a6b")
		for what, pair := range map[string][2]string{
			"apiVersion":       {a.APIVersion, b.APIVersion},
			"kind":             {a.Kind, b.Kind},
			"namespace":        {a.Namespace, b.Namespace},
			"label value":      {a.Labels["app.kubernetes.io/part-of"], b.Labels["app.kubernetes.io/part-of"]},
			"finalizer":        {a.Finalizers[0], b.Finalizers[0]},
			"schedule":         {*a.Spec.Schedule, *b.Spec.Schedule},
			"time zone":        {string(a.Spec.TZ), string(b.Spec.TZ)},
			"tags":             {a.Spec.Tags, b.Spec.Tags},
			"channel":          {a.Spec.Channels[0], b.Spec.Channels[0]},
			"state":            {string(a.Status.State), string(b.Status.State)},
			"last ping type":   {string(a.Status.LastPingType), string(b.Status.LastPingType)},
			"condition reason": {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
			"condition text":   {a.Status.Conditions[0].Message, b.Status.Conditions[0].Message},
		} {
			Expect(pair[0]).To(Equal(pair[1]), what)
			Expect(same(pair[0], pair[1])).To(BeTrue(), "two cached Checks keep a copy each of their %s", what)
		}
		for k := range a.Labels {
			for k2 := range b.Labels {
				Expect(same(k, k2)).To(BeTrue(), "two cached Checks keep a copy each of a label's key")
			}
		}
		Expect(same(a.Name, b.Name)).To(BeFalse())
		Expect(same(a.Status.UUID, string(a.UID))).To(BeTrue(), "the status's UUID is a second copy of the UID")
	})
})

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
