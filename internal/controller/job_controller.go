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
	"github.com/vigil-operator/vigil/internal/checkindex"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/ping"
	"github.com/vigil-operator/vigil/internal/store"
)

// JobReconciler turns the Jobs of monitored CronJobs into pings: a start
// when the Job starts (its UID as the run id), then a success or a failure
// when it ends, at the Job's own times so durations are the Job's. Each
// Job's pings are recorded once: before recording, the check's ping log is
// read for pings of that run, so a restart or a re-list repeats nothing.
type JobReconciler struct {
	client.Client
	// Recorder stores pings as the ping endpoint does.
	Recorder *ping.Recorder
	// Store reads what has been recorded.
	Store *store.Store
	// Pods lists a failed Job's pods, uncached (nil: no pod logs).
	Pods client.Reader
	// Logs returns the tail of a container's log; nil, or an error (no
	// kubelet, no RBAC), leaves the log out of the failure's body.
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
	var checks v1.CheckList
	if err := r.List(ctx, &checks, client.InNamespace(job.Namespace), client.MatchingFields{checkindex.CronJobField: owner.Name}); err != nil {
		return ctrl.Result{}, err
	}
	if len(checks.Items) == 0 {
		return ctrl.Result{}, nil
	}
	pings := jobPings(job)
	// The failed pod's log costs a pod list and a log read: only fetched
	// when a fail ping is about to be stored, and once for every check.
	logTail := sync.OnceValue(func() []byte { return r.failedPodLog(ctx, job) })
	for i := range checks.Items {
		if err := r.record(ctx, &checks.Items[i], job, pings, logTail); err != nil {
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
// ping's body ends with logTail().
func (r *JobReconciler) record(ctx context.Context, check *v1.Check, job *batchv1.Job, pings []store.Ping, logTail func() []byte) error {
	if len(pings) == 0 {
		return nil
	}
	seen, horizon, err := r.Store.RunKinds(ctx, check.UID, string(job.UID))
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
			p.Body = append(append([]byte(nil), p.Body...), logTail()...)
		}
		if _, err := r.Recorder.Record(ctx, check, p); err != nil {
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

// failedPodLog is the tail of the log of the Job's most recent failed pod,
// introduced by a line that says which pod; empty when it cannot be read.
func (r *JobReconciler) failedPodLog(ctx context.Context, job *batchv1.Job) []byte {
	if r.Pods == nil || r.Logs == nil {
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
	container := failed.Spec.Containers[0].Name
	for _, cs := range failed.Status.ContainerStatuses {
		if cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0 {
			container = cs.Name
			break
		}
	}
	logs, err := r.Logs(ctx, failed.Namespace, failed.Name, container)
	if err != nil || len(logs) == 0 {
		return nil
	}
	if len(logs) > LogTailBytes {
		logs = logs[len(logs)-LogTailBytes:]
	}
	return append([]byte(fmt.Sprintf("\n\nLast lines of pod %s, container %s:\n", failed.Name, container)), logs...)
}
