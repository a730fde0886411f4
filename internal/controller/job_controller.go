package controller

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/jobfailure"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/words"
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
	// Clock tells how long a Job's pods have waited to run (nil: runs that
	// cannot start are not reported).
	Clock clock.PassiveClock
	// StartTimeout is how long they may wait; 0: NotStartedAfter.
	StartTimeout time.Duration
	// Pods lists a failed Job's pods and their Events, uncached (nil: the
	// failure's body says nothing of its pods).
	Pods client.Reader
	// Logs returns the tail of a container's log, read only for a CronJob
	// annotated AnnotationLogs "true"; nil, or an error (no kubelet, no
	// RBAC), leaves the log out of the failure's body.
	Logs func(ctx context.Context, namespace, pod, container string) ([]byte, error)
	// Workers is how many Jobs are reconciled at once (DefaultJobWorkers
	// when 0).
	Workers int
}

// DefaultJobWorkers is how many Jobs the controller reconciles at once. A
// Job's reconcile mostly waits: for the store to commit its pings, and
// for the pod reads of a failure. One worker took a :00 wave of runs one
// commit at a time; several share the store's group commit
// (docs/performance.md, "A :00 wave of CronJob runs").
const DefaultJobWorkers = 8

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
	detail := sync.OnceValue(func() []byte { return r.failure(ctx, job, owner) })
	for i := range linked.Items {
		if err := r.record(ctx, &linked.Items[i], job, pings, detail); err != nil {
			return ctrl.Result{}, err
		}
	}
	return r.notStarted(ctx, job, linked.Items)
}

// NotStartedAfter is how long, by default, a Job's pods may wait to run
// before a run that cannot start (no node for it, an image that cannot be pulled, a
// missing Secret) is reported as a failure, rather than only as a run that
// never ends.
const NotStartedAfter = 5 * time.Minute

// notStarted reports, once, a running Job none of whose pods has run
// NotStartedAfter after it started, when its pods say why they cannot:
// a fail ping under its own run id, so the Job's own pings still follow if
// it starts after all. Until then the Job is looked at again.
func (r *JobReconciler) notStarted(ctx context.Context, job *batchv1.Job, linked []v1.Check) (ctrl.Result, error) {
	if job.Status.StartTime == nil || ended(job) || r.Clock == nil || (job.Status.Ready != nil && *job.Status.Ready > 0) ||
		job.Status.Succeeded > 0 || job.Status.Failed > 0 {
		return ctrl.Result{}, nil
	}
	limit := r.StartTimeout
	if limit <= 0 {
		limit = NotStartedAfter
	}
	waited := r.Clock.Since(job.Status.StartTime.Time)
	if waited < limit {
		return ctrl.Result{RequeueAfter: limit - waited}, nil
	}
	in, ok := r.readPods(ctx, job)
	if !ok {
		return ctrl.Result{RequeueAfter: limit}, nil
	}
	var stuck []jobfailure.Story
	for _, s := range jobfailure.Stories(in) {
		if s.Ran {
			return ctrl.Result{}, nil // it runs after all
		}
		stuck = append(stuck, s)
	}
	if len(stuck) == 0 {
		// Pods that wait for no known reason (a slow pull): look again.
		return ctrl.Result{RequeueAfter: limit}, nil
	}
	// The run's own id: the run ends with this failure, and the Job's own
	// failure, if it comes, is not counted again; its success still is.
	rid := string(job.UID)
	body := jobfailure.Bound(fmt.Sprintf("Job %s has not started: none of its pods has run %s after it was created.%s",
		job.Name, words.Duration(waited), jobfailure.Tell(stuck)))
	for i := range linked {
		if err := failOnce(ctx, r.Checks, &linked[i], store.Ping{At: r.Clock.Now(), RID: rid, Body: body, UA: jobPingUA, Method: "JOB"}); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, nil
}

// ended says whether the Job has completed or failed.
func ended(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
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

// SetupWithManager registers the reconciler for Jobs.
func (r *JobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	// Only Jobs a CronJob controls can be owed pings: the rest, however
	// busy, never reach Reconcile.
	spawned := predicate.NewPredicateFuncs(func(o client.Object) bool { return cronJobOf(o) != nil })
	return ctrl.NewControllerManagedBy(mgr).
		Named("job").
		For(&batchv1.Job{}, builder.WithPredicates(spawned)).
		WithOptions(controller.Options{RecoverPanic: ptr(true), MaxConcurrentReconciles: cmp.Or(r.Workers, DefaultJobWorkers)}).
		Complete(r)
}

// failure is what a fail ping says after the Job's own reason: why, in
// plain words, from the Job's pods and their Events (internal/jobfailure),
// then either the tail of the failed container's log, when the CronJob
// allows it, or how to allow it; empty when the pods cannot be read.
//
// A pod's log is the CronJob owner's to give: whoever may create a Check
// with spec.cronJobRef, or hold the project's API key, can read what the
// fail ping holds, and may not be allowed to read pods' logs. Only an
// annotation on the CronJob itself, which only who may edit the CronJob
// writes, lets the log in.
func (r *JobReconciler) failure(ctx context.Context, job *batchv1.Job, owner *metav1.OwnerReference) []byte {
	in, ok := r.readPods(ctx, job)
	if !ok {
		return nil
	}
	allowed := r.logsAllowed(ctx, job.Namespace, owner)
	in.TerminationMessages = allowed
	stories := jobfailure.Stories(in)
	out := jobfailure.Explain(in, stories)
	failed, ok := jobfailure.Failed(stories)
	if !ok {
		return out
	}
	if !allowed {
		return fmt.Appendf(out, "\n\nThe log of container %s is not shown here: CronJob %s does not have the annotation %s: \"true\" (docs/cronjobs.md).",
			failed.Container, owner.Name, AnnotationLogs)
	}
	if r.Logs == nil {
		return out
	}
	logs, err := r.Logs(ctx, job.Namespace, failed.Pod, failed.Container)
	switch {
	case err != nil:
		return fmt.Appendf(out, "\n\nThe log of container %s in pod %s could not be read.", failed.Container, failed.Pod)
	case len(logs) == 0:
		return fmt.Appendf(out, "\n\nThe log of container %s in pod %s is empty.", failed.Container, failed.Pod)
	}
	if len(logs) > LogTailBytes {
		logs = logs[len(logs)-LogTailBytes:]
	}
	return append(fmt.Appendf(out, "\n\nLast lines of the log of container %s in pod %s:\n", failed.Container, failed.Pod), logs...)
}

// maxPodsRead bounds the pods whose Events are read for one Job.
const maxPodsRead = 10

// readPods reads a Job's pods (uncached: the manager watches no pods) and
// the Warning Events of its pods, also of those already deleted, whose
// names the Job's own Events give ("Created pod: ..."). ok is false when
// the pods cannot be listed.
func (r *JobReconciler) readPods(ctx context.Context, job *batchv1.Job) (jobfailure.Input, bool) {
	in := jobfailure.Input{Job: job}
	if r.Pods == nil {
		return in, false
	}
	var pods corev1.PodList
	if err := r.Pods.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return in, false
	}
	var names []string
	for _, p := range pods.Items {
		if metav1.IsControlledBy(&p, job) {
			in.Pods = append(in.Pods, p)
			names = append(names, p.Name)
		}
	}
	var jobEvents corev1.EventList
	if err := r.Pods.List(ctx, &jobEvents, client.InNamespace(job.Namespace), client.MatchingFields{
		"involvedObject.kind": "Job", "involvedObject.name": job.Name}); err == nil {
		for _, e := range jobEvents.Items {
			if name, ok := strings.CutPrefix(e.Message, "Created pod: "); ok && e.InvolvedObject.UID == job.UID && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	if len(names) > maxPodsRead {
		names = names[len(names)-maxPodsRead:]
	}
	for _, name := range names {
		var events corev1.EventList
		if err := r.Pods.List(ctx, &events, client.InNamespace(job.Namespace), client.MatchingFields{
			"involvedObject.kind": "Pod", "involvedObject.name": name, "type": corev1.EventTypeWarning}); err == nil {
			in.Events = append(in.Events, events.Items...)
		}
	}
	return in, true
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
