package controller

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
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
	}
	return obj, nil
}

// TrimCheck is the cache transform for Checks: a Check is kept whole but
// for kubectl's bookkeeping.
func TrimCheck(obj any) (any, error) {
	if c, ok := obj.(*v1.Check); ok {
		trimMeta(c)
	}
	return obj, nil
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
