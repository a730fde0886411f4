package controller

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// JobReconciler turns the Jobs of monitored CronJobs into pings: a start
// when the Job starts (its UID as the run id), then a success or a failure
// when it ends, at the Job's own times so durations are the Job's. Each
// Job's pings are recorded once: before recording, the check's ping log is
// read for pings of that run, so a restart or a re-list repeats nothing.
type JobReconciler struct {
	client.Client
	// Checks records pings as the ping endpoint does.
	Checks *checks.Door
	// Pods lists a failed Job's pods, uncached (nil: the failure's body
	// says nothing of its pod).
	Pods client.Reader
	// Logs returns the tail of a container's log, read only for a CronJob
	// annotated AnnotationLogs "true"; nil, or an error (no kubelet, no
	// RBAC), leaves the log out of the failure's body.
	Logs func(ctx context.Context, namespace, pod, container string) ([]byte, error)
}

// LogTailBytes bounds the log tail a failure ping carries: its last bytes.
const LogTailBytes = 10_000

// jobPingUA is the user agent of the pings a Job produces.
const jobPingUA = "vigil (Kubernetes Job)"

// Reconcile records what one Job owes its CronJob's checks.
func (r *JobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	job := &batchv1.Job{}
	if err := r.Get(ctx, req.NamespacedName, job); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	owner := cronJobOf(job)
	if owner == nil {
		return ctrl.Result{}, nil
	}
	var linked v1.CheckList
	if err := r.List(ctx, &linked, client.InNamespace(job.Namespace), client.MatchingFields{checks.CronJobField: owner.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if len(linked.Items) == 0 {
		return ctrl.Result{}, nil
	}
	pings := jobPings(job)
	// The failed pod costs a pod list and perhaps a log read: only looked
	// at when a fail ping is about to be stored, and once for every check.
	detail := sync.OnceValue(func() []byte { return r.failedPod(ctx, job, owner) })
	for i := range linked.Items {
		if err := r.record(ctx, &linked.Items[i], job, pings, detail); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// jobPings are the pings a Job's status calls for, oldest first.
func jobPings(job *batchv1.Job) []store.Ping {
	rid := string(job.UID)
	var out []store.Ping
	if job.Status.StartTime != nil {
		out = append(out, store.Ping{Kind: monitor.PingStart, At: job.Status.StartTime.Time, RID: rid})
	}
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			at := c.LastTransitionTime.Time
			if job.Status.CompletionTime != nil {
				at = job.Status.CompletionTime.Time
			}
			out = append(out, store.Ping{Kind: monitor.PingSuccess, At: at, RID: rid,
				Body: []byte(fmt.Sprintf("Job %s completed (%d succeeded)", job.Name, job.Status.Succeeded))})
		case batchv1.JobFailed:
			out = append(out, store.Ping{Kind: monitor.PingFail, At: c.LastTransitionTime.Time, RID: rid,
				Body: []byte(fmt.Sprintf("Job %s failed: %s: %s", job.Name, c.Reason, c.Message))})
		}
	}
	for i := range out {
		out[i].Scheme, out[i].UA, out[i].Method = "kubernetes", jobPingUA, "JOB"
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// record stores the Job's pings the check's log does not yet hold; a fail
// ping's body ends with failure().
func (r *JobReconciler) record(ctx context.Context, check *v1.Check, job *batchv1.Job, pings []store.Ping, failure func() []byte) error {
	if len(pings) == 0 {
		return nil
	}
	seen, horizon, err := r.Checks.RunKinds(ctx, check, string(job.UID))
	if err != nil {
		return err
	}
	ended := seen[monitor.PingSuccess] || seen[monitor.PingFail]
	for _, p := range pings {
		// Once the log has been trimmed, a ping older than everything it
		// keeps may have been recorded and trimmed away: never record it
		// again.
		if seen[p.Kind] || (p.Kind == monitor.PingStart && ended) || (!horizon.IsZero() && p.At.Before(horizon)) {
			continue
		}
		// A Job that started before the check existed says nothing about it.
		if p.At.Before(check.CreationTimestamp.Add(-time.Second)) {
			continue
		}
		if p.Kind == monitor.PingFail {
			p.Body = append(append([]byte(nil), p.Body...), failure()...)
		}
		if _, err := r.Checks.RecordPing(ctx, check, p); err != nil {
			return fmt.Errorf("recording Job %s for check %s: %w", job.Name, check.Name, err)
		}
		if p.Kind != monitor.PingStart {
			ended = true
		}
	}
	return nil
}

// cronJobOf is the CronJob that controls a Job, or nil.
func cronJobOf(job metav1.Object) *metav1.OwnerReference {
	owner := metav1.GetControllerOf(job)
	if owner == nil || owner.Kind != "CronJob" || owner.APIVersion != batchv1.SchemeGroupVersion.String() {
		return nil
	}
	return owner
}

// TrimJob is the cache transform for Jobs. The manager watches every Job
// in the cluster, and the Job controller, their only reader, needs no more
// than a Job's identity, owner and status: the spec, with its pod template,
// and the managed fields are most of a Job's size, so the cache drops them.
// Anything else that reads Jobs through the manager's cache sees them so.
func TrimJob(obj any) (any, error) {
	if job, ok := obj.(*batchv1.Job); ok {
		job.Spec = batchv1.JobSpec{}
		job.ManagedFields = nil
	}
	return obj, nil
}

// SetupWithManager registers the reconciler for Jobs.
func (r *JobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	// Only Jobs a CronJob controls can be owed pings: the rest, however
	// busy, never reach Reconcile.
	spawned := predicate.NewPredicateFuncs(func(o client.Object) bool { return cronJobOf(o) != nil })
	return ctrl.NewControllerManagedBy(mgr).
		Named("job").
		For(&batchv1.Job{}, builder.WithPredicates(spawned)).
		WithOptions(controller.Options{RecoverPanic: ptr(true)}).
		Complete(r)
}

// failedPod is what a fail ping says of the Job's most recent failed pod:
// the container that failed and how it ended, then either the tail of its
// log, when the CronJob allows it, or how to allow it; empty when there is
// no such pod or it cannot be listed.
//
// A pod's log is the CronJob owner's to give: whoever may create a Check
// with spec.cronJobRef, or hold the project's API key, can read what the
// fail ping holds, and may not be allowed to read pods' logs. Only an
// annotation on the CronJob itself, which only who may edit the CronJob
// writes, lets the log in.
func (r *JobReconciler) failedPod(ctx context.Context, job *batchv1.Job, owner *metav1.OwnerReference) []byte {
	if r.Pods == nil {
		return nil
	}
	var pods corev1.PodList
	if err := r.Pods.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil
	}
	var failed *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase == corev1.PodFailed && metav1.IsControlledBy(p, job) &&
			(failed == nil || failed.CreationTimestamp.Before(&p.CreationTimestamp)) {
			failed = p
		}
	}
	if failed == nil || len(failed.Spec.Containers) == 0 {
		return nil
	}
	container, ended := failed.Spec.Containers[0].Name, ""
	for _, cs := range failed.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			container, ended = cs.Name, fmt.Sprintf(" exited with code %d", t.ExitCode)
			if t.Reason != "" {
				ended += " (" + t.Reason + ")"
			}
			break
		}
	}
	out := fmt.Appendf(nil, "\n\nPod %s, container %s%s.", failed.Name, container, ended)
	if !r.logsAllowed(ctx, job.Namespace, owner) {
		return fmt.Appendf(out, "\nIts log is not shown here: CronJob %s does not have the annotation %s: \"true\" (docs/cronjobs.md).",
			owner.Name, AnnotationLogs)
	}
	if r.Logs == nil {
		return out
	}
	logs, err := r.Logs(ctx, failed.Namespace, failed.Name, container)
	switch {
	case err != nil:
		return append(out, "\nIts log could not be read."...)
	case len(logs) == 0:
		return append(out, "\nIts log is empty."...)
	}
	if len(logs) > LogTailBytes {
		logs = logs[len(logs)-LogTailBytes:]
	}
	return append(append(out, "\nLast lines of its log:\n"...), logs...)
}

// logsAllowed says whether the CronJob that owns a Job (that very object,
// not a later one of the same name) lets its pods' logs into fail pings.
func (r *JobReconciler) logsAllowed(ctx context.Context, namespace string, owner *metav1.OwnerReference) bool {
	cj := &batchv1.CronJob{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: owner.Name}, cj); err != nil {
		return false
	}
	return cj.UID == owner.UID && cj.Annotations[AnnotationLogs] == "true"
}
