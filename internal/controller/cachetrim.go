package controller

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/intern"
)

// The cache transforms of the kinds a fleet has thousands of: what the
// manager's cache keeps of each object is what Vigil reads of it, so that
// memory per check stays a small number (docs/performance.md, "A fleet").
// Anything that reads these kinds through the manager's cache sees them
// trimmed; nothing writes them back whole (Check writes are merge patches
// of the fields they change, and CronJobs and Jobs are never written), so
// what is trimmed here is never lost on the API server.

// TrimJob is the cache transform for Jobs. The manager watches every Job
// in the cluster, and the Job controller, their only reader, needs no more
// than a Job's identity, owner and status: the spec, with its pod template,
// is most of a Job's size.
func TrimJob(obj any) (any, error) {
	if job, ok := obj.(*batchv1.Job); ok {
		job.Spec = batchv1.JobSpec{}
		trimMeta(job)
		shareJobMeta(&job.TypeMeta, job)
		for i := range job.Status.Conditions {
			c := &job.Status.Conditions[i]
			c.Type, c.Status = batchv1.JobConditionType(shared.String(string(c.Type))), corev1.ConditionStatus(shared.String(string(c.Status)))
			c.Reason, c.Message = shared.String(c.Reason), shared.String(c.Message)
		}
	}
	return obj, nil
}

// TrimCronJob is the cache transform for CronJobs: the CronJob and policy
// controllers read a CronJob's schedule, time zone, suspension, deadline,
// concurrency policy, status and metadata, never the Job template (its pod
// spec is most of a CronJob's size).
func TrimCronJob(obj any) (any, error) {
	if cj, ok := obj.(*batchv1.CronJob); ok {
		cj.Spec.JobTemplate = batchv1.JobTemplateSpec{}
		trimMeta(cj)
		shareJobMeta(&cj.TypeMeta, cj)
		cj.Spec.Schedule = shared.String(cj.Spec.Schedule)
	}
	return obj, nil
}

// TrimCheck is the cache transform for Checks: a Check is kept whole but
// for kubectl's bookkeeping, its repeated strings shared with the other
// cached objects'.
func TrimCheck(obj any) (any, error) {
	c, ok := obj.(*v1.Check)
	if !ok {
		return obj, nil
	}
	trimMeta(c)
	shareMeta(&c.TypeMeta, c)
	s := &c.Spec
	s.Tags, s.TZ, s.Methods = shared.String(s.Tags), v1.TimeZone(shared.String(string(s.TZ))), shared.String(s.Methods)
	if s.Schedule != nil {
		*s.Schedule = shared.String(*s.Schedule)
	}
	shareAll(s.Channels)
	st := &c.Status
	if st.UUID == string(c.UID) {
		st.UUID = string(c.UID) // one copy of the UUID a check without spec.uuid answers to
	}
	st.State, st.LastPingType = v1.CheckState(shared.String(string(st.State))), v1.PingType(shared.String(string(st.LastPingType)))
	shareConditions(st.Conditions)
	if cov := st.Coverage; cov != nil {
		cov.Policy = shared.String(cov.Policy)
		shareAll(cov.PolicyFields)
		shareAll(cov.AnnotationFields)
	}
	return c, nil
}

// shared is the cache's one copy of the short strings its objects repeat
// (package intern): at most 16,384 of them, about 1.5 MiB.
var shared = intern.NewStrings(1 << 14)

// shareMeta shares the strings of a Check's type and metadata that many
// objects repeat: its kind, namespace, owners' kinds, labels, annotations
// and finalizers. Its name and UID are its own.
func shareMeta(t *metav1.TypeMeta, o metav1.Object) {
	shareKinds(t, o)
	o.SetLabels(shared.Map(o.GetLabels()))
	o.SetAnnotations(shared.Map(o.GetAnnotations()))
	shareAll(o.GetFinalizers())
}

// shareJobMeta shares what a Job or CronJob repeats of other objects: its
// kinds, namespace and label keys. Not its label values: a Job's are its
// own name and its controller's UID, which would fill the pool with
// strings no other object has.
func shareJobMeta(t *metav1.TypeMeta, o metav1.Object) {
	shareKinds(t, o)
	if l := o.GetLabels(); len(l) > 0 {
		out := make(map[string]string, len(l))
		for k, v := range l {
			out[shared.String(k)] = v
		}
		o.SetLabels(out)
	}
}

// shareKinds shares an object's kind, namespace and owners' kinds.
func shareKinds(t *metav1.TypeMeta, o metav1.Object) {
	t.APIVersion, t.Kind = shared.String(t.APIVersion), shared.String(t.Kind)
	o.SetNamespace(shared.String(o.GetNamespace()))
	refs := o.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion, refs[i].Kind = shared.String(refs[i].APIVersion), shared.String(refs[i].Kind)
	}
}

// shareAll shares each of a list's strings, in place.
func shareAll(l []string) {
	for i, s := range l {
		l[i] = shared.String(s)
	}
}

// shareConditions shares the words of each condition, in place.
func shareConditions(l []metav1.Condition) {
	for i := range l {
		c := &l[i]
		c.Type, c.Status = shared.String(c.Type), metav1.ConditionStatus(shared.String(string(c.Status)))
		c.Reason, c.Message = shared.String(c.Reason), shared.String(c.Message)
	}
}

// trimMeta drops what only other clients read: the managed fields
// (server-side apply's) and kubectl's last-applied-configuration
// annotation, a copy of the object as applied, which for a Check applied
// with kubectl is as big as the rest of it.
func trimMeta(o metav1.Object) {
	o.SetManagedFields(nil)
	if a := o.GetAnnotations(); a != nil {
		if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
			delete(a, corev1.LastAppliedConfigAnnotation)
			if len(a) == 0 {
				o.SetAnnotations(nil)
			}
		}
	}
}
