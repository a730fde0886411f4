package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/coverage"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/store"
)

// Annotations on a CronJob (internal/coverage has the rest).
const (
	// AnnotationCheck "true" gives the CronJob a Check; "false" opts it out
	// of every CronJobPolicy and ClusterCronJobPolicy.
	AnnotationCheck = coverage.AnnotationCheck
	// AnnotationGrace is the grace period: seconds ("600") or a duration
	// ("10m"); default one hour, at least one minute.
	AnnotationGrace = coverage.AnnotationGrace
	// AnnotationChannels assigns Channels: comma-separated object names, or
	// "*" for all.
	AnnotationChannels = coverage.AnnotationChannels
	// AnnotationTags are the check's tags, space-separated.
	AnnotationTags = coverage.AnnotationTags
	// AnnotationName is the check's display name; default the CronJob's.
	AnnotationName = coverage.AnnotationName
	// AnnotationMaxSuspended is how long the CronJob may stay suspended
	// before its check goes down ("24h").
	AnnotationMaxSuspended = coverage.AnnotationMaxSuspended
	// AnnotationAlertOnOverlap "true" makes runs that overlap a failure.
	AnnotationAlertOnOverlap = coverage.AnnotationAlertOnOverlap
	// AnnotationLogs "true" lets the tail of a failed pod's log into the
	// fail ping of every check that follows the CronJob (its own, and any
	// Check whose spec.cronJobRef names it). Without it a fail ping says
	// which container failed and how, but no log line: AnnotationCheck
	// and policies do not imply it (docs/cronjobs.md).
	AnnotationLogs = "monitoring.vigil.dev/logs"

	// LabelCronJob marks the Check made for a CronJob with its name.
	LabelCronJob = "monitoring.vigil.dev/cronjob"
	// AnnotationCoverage, on a Check made for a CronJob, is what made it
	// (v1.Coverage as JSON): the check controller shows it in the Check's
	// status, and the next reconcile knows which alert-policy fields a
	// policy set, to clear the ones it no longer sets.
	AnnotationCoverage = "monitoring.vigil.dev/coverage"
	// annotationSuspendedSince marks a check this controller paused
	// because its CronJob is suspended, with when it saw the suspension,
	// so it resumes only what it paused and knows how long it has been.
	annotationSuspendedSince = "monitoring.vigil.dev/paused-by-suspend"
	// annotationResumedAt is when this controller resumed the check with
	// its CronJob: runs scheduled before it were not missed.
	annotationResumedAt = "monitoring.vigil.dev/resumed-at"
	// annotationSuspendedAlerted marks a check that went down because its
	// CronJob stayed suspended past its limit: once per suspension.
	annotationSuspendedAlerted = "monitoring.vigil.dev/suspended-alerted"
)

// CronJobReconciler keeps a Check for every CronJob that a CronJobPolicy,
// a ClusterCronJobPolicy or the annotation monitoring.vigil.dev/check:
// "true" covers (internal/coverage decides): schedule and time zone copied
// from the CronJob, the rest from policy and annotations, owned by the
// CronJob (deleted with it), removed when nothing covers it any more, and
// paused while the CronJob is suspended (down if that lasts too long).
type CronJobReconciler struct {
	client.Client
	Clock clock.PassiveClock
	// DefaultTimeZone is the zone of CronJobs without spec.timeZone: the
	// zone kube-controller-manager runs in (UTC in most clusters).
	DefaultTimeZone string
	// Checks writes the Checks it keeps, and pauses and resumes them while
	// their CronJob is suspended.
	Checks *checks.Door
	// ClusterPolicies: ClusterCronJobPolicies apply (the manager watches
	// every namespace; namespaces are read for their labels).
	ClusterPolicies bool

	// Suspensions is where the controller keeps when it last saw each
	// CronJob suspended (the ping store): its runs scheduled until then
	// were not missed, also after a restart or a change of leader.
	Suspensions Suspensions
}

// Suspensions keeps what the CronJob controller last saw of each
// CronJob's suspension (store.Store).
type Suspensions interface {
	CronJobSuspension(ctx context.Context, uid types.UID) (store.CronJobSuspension, bool, error)
	SeeCronJobSuspension(ctx context.Context, namespace string, uid types.UID, seen store.CronJobSuspension) error
}

// Reconcile brings the CronJob's Check in step with the CronJob.
func (r *CronJobReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cj := &batchv1.CronJob{}
	if err := r.Get(ctx, req.NamespacedName, cj); err != nil {
		// A deleted CronJob's Check goes with it (owner reference).
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	existing, err := r.ownedCheck(ctx, cj)
	if err != nil {
		return ctrl.Result{}, err
	}
	decision, err := r.decide(ctx, cj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !decision.Covered {
		if existing != nil {
			if err := r.Checks.Delete(ctx, existing); err != nil {
				return ctrl.Result{}, err
			}
		}
		// Checks written by hand may follow it (spec.cronJobRef).
		next, err := r.watchRuns(ctx, cj, cj.Annotations[AnnotationAlertOnOverlap] == "true", time.Time{})
		return ctrl.Result{RequeueAfter: next}, err
	}

	desired := func(c *v1.Check) error {
		r.desired(cj, decision, c)
		return controllerutil.SetControllerReference(cj, c, r.Scheme())
	}
	check := existing
	if check == nil {
		check = &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: cj.Namespace, Name: CheckNameForCronJob(cj.Name)}}
		if err := desired(check); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Checks.CreateOwned(ctx, check); apierrors.IsAlreadyExists(err) {
			// A Check of that name written by hand: it stays, and the
			// CronJob is looked at again later rather than in a tight loop.
			log.FromContext(ctx).Info("a Check with the name Vigil gives CronJob checks exists and is not the CronJob's; leaving it",
				"check", check.Name, "cronJob", cj.Name)
			return ctrl.Result{RequeueAfter: 10 * time.Minute}, nil
		} else if err != nil {
			return ctrl.Result{}, fmt.Errorf("creating the check for CronJob %s: %w", cj.Name, err)
		}
	} else {
		var err error
		if check, err = r.Checks.Update(ctx, check, desired); err != nil {
			return ctrl.Result{}, err
		}
	}
	res, check, err := r.followSuspend(ctx, cj, check, decision.Settings.MaxSuspended)
	if err != nil {
		return res, err
	}
	resumedAt, _ := time.Parse(time.RFC3339, check.Annotations[annotationResumedAt])
	next, err := r.watchRuns(ctx, cj, decision.Settings.AlertOnOverlap, resumedAt)
	if next > 0 && (res.RequeueAfter == 0 || next < res.RequeueAfter) {
		res.RequeueAfter = next
	}
	return res, err
}

// decide reads the policies that could cover the CronJob from the cache.
func (r *CronJobReconciler) decide(ctx context.Context, cj *batchv1.CronJob) (coverage.Decision, error) {
	var cluster []coverage.Policy
	if r.ClusterPolicies {
		var err error
		if cluster, err = clusterPolicies(ctx, r.Client); err != nil {
			return coverage.Decision{}, err
		}
	}
	in, err := policiesFor(ctx, r.Client, cj.Namespace, r.Checks.ObjectLimit(cj.Namespace, project.CronJobPolicies), cluster)
	if err != nil {
		return coverage.Decision{}, err
	}
	return coverage.Decide(in.cronJob(cj), in.namespaced, in.cluster), nil
}

// CheckNameForCronJob is the name of the Check made for a CronJob.
func CheckNameForCronJob(cronJob string) string {
	name := "cronjob-" + cronJob
	if len(name) > 253 {
		name = name[:253]
	}
	return name
}

// ownedCheck finds the Check this controller made for the CronJob.
func (r *CronJobReconciler) ownedCheck(ctx context.Context, cj *batchv1.CronJob) (*v1.Check, error) {
	var list v1.CheckList
	if err := r.List(ctx, &list, client.InNamespace(cj.Namespace), client.MatchingLabels{LabelCronJob: cj.Name}); err != nil {
		return nil, err
	}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], cj) {
			return &list.Items[i], nil
		}
	}
	return nil, nil
}

// desired writes what the CronJob, its policy and its annotations say
// into the check, leaving everything else alone: the UUID, and fields
// neither the policy nor an annotation sets, as written on the check by
// hand. A field that a policy or an annotation set before and no longer
// does goes back to its default. A new check (or one made before
// policies, without the coverage annotation) gets the defaults.
func (r *CronJobReconciler) desired(cj *batchv1.CronJob, d coverage.Decision, c *v1.Check) {
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels[LabelCronJob] = cj.Name
	schedule := cronJobSchedule(cj.Spec.Schedule)
	c.Spec.Schedule, c.Spec.Timeout = &schedule, nil
	c.Spec.TZ = v1.TimeZone(r.zone(cj))
	c.Spec.CronJobRef = &v1.LocalObjectReference{Name: cj.Name}
	s := d.Settings
	was := CoverageOf(c)
	var owned []string
	if was != nil {
		owned = append(slices.Clone(was.PolicyFields), was.AnnotationFields...)
	}
	follows := func(field string) bool {
		return was == nil || slices.Contains(owned, field) ||
			slices.Contains(s.PolicyFields, field) || slices.Contains(s.AnnotationFields, field)
	}
	if follows("name") {
		c.Spec.Name = s.Name
	}
	if follows("grace") {
		c.Spec.Grace = int64(s.Grace / time.Second)
	}
	if follows("tags") {
		c.Spec.Tags = s.Tags
	}
	if follows("channels") {
		c.Spec.Channels = s.Channels
	}
	coverage.ApplyAlert(&c.Spec.AlertPolicy, &s.Alert, owned)

	now := &v1.Coverage{CronJob: cj.Name, PolicyFields: s.PolicyFields, AnnotationFields: s.AnnotationFields,
		AlsoSelectedBy: d.AlsoSelectedBy}
	if d.Policy != nil {
		now.Policy = d.Policy.Ref()
	}
	text, _ := json.Marshal(now)
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[AnnotationCoverage] = string(text)
}

// CoverageOf reads what made a Check for a CronJob from its annotation;
// nil when none did (or the annotation is not this controller's JSON).
func CoverageOf(c *v1.Check) *v1.Coverage {
	text, ok := c.Annotations[AnnotationCoverage]
	if !ok || len(text) > 4096 {
		return nil
	}
	var cov v1.Coverage
	if json.Unmarshal([]byte(text), &cov) != nil || cov.CronJob == "" {
		return nil
	}
	return &cov
}

// cronJobSchedule turns the macros Kubernetes accepts into the five-field
// form the reference's cron dialect needs.
func cronJobSchedule(s string) string {
	switch strings.TrimSpace(s) {
	case "@yearly", "@annually":
		return "0 0 1 1 *"
	case "@monthly":
		return "0 0 1 * *"
	case "@weekly":
		return "0 0 * * 0"
	case "@daily", "@midnight":
		return "0 0 * * *"
	case "@hourly":
		return "0 * * * *"
	}
	return s
}

// SetupWithManager registers the reconciler: CronJobs, the Checks they
// own, and what decides whether they are covered (policies, and
// namespaces' labels for cluster policies).
func (r *CronJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("cronjob").
		For(&batchv1.CronJob{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{},
			runsChanged()))).
		// A check's status changes with every ping; only a change to its
		// spec (or its deletion) can take it out of step with the CronJob.
		Owns(&v1.Check{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// A Check linked by hand (spec.cronJobRef) is told of its CronJob's
		// missed runs from its creation on.
		Watches(&v1.Check{}, handler.EnqueueRequestsFromMapFunc(linkedCronJob),
			builder.WithPredicates(predicate.Funcs{
				UpdateFunc: func(e event.UpdateEvent) bool { return false },
				DeleteFunc: func(event.DeleteEvent) bool { return false },
			})).
		Watches(&v1.CronJobPolicy{}, handler.EnqueueRequestsFromMapFunc(r.namespaceCronJobs),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		// Each CronJob's runs bring a reconcile or two; a few workers keep
		// thousands of them, and a policy's edit over all, from queueing.
		WithOptions(controller.Options{RecoverPanic: ptr(true), MaxConcurrentReconciles: 4})
	if r.ClusterPolicies {
		b = b.Watches(&v1.ClusterCronJobPolicy{}, handler.EnqueueRequestsFromMapFunc(r.allCronJobs),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceCronJobs),
				builder.WithPredicates(predicate.LabelChangedPredicate{}))
	}
	return b.Complete(r)
}

// linkedCronJob is the CronJob a Check written by hand follows.
func linkedCronJob(_ context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*v1.Check)
	if !ok || c.Spec.CronJobRef == nil || metav1.GetControllerOf(c) != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: c.Namespace, Name: c.Spec.CronJobRef.Name}}}
}

// namespaceCronJobs are the CronJobs of a policy's namespace (or of a
// namespace).
func (r *CronJobReconciler) namespaceCronJobs(ctx context.Context, o client.Object) []reconcile.Request {
	ns := o.GetNamespace()
	if ns == "" {
		ns = o.GetName() // a Namespace
	}
	return r.cronJobs(ctx, client.InNamespace(ns))
}

// allCronJobs are every CronJob the manager watches: a cluster policy
// changed.
func (r *CronJobReconciler) allCronJobs(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.cronJobs(ctx)
}

func (r *CronJobReconciler) cronJobs(ctx context.Context, opts ...client.ListOption) []reconcile.Request {
	var list batchv1.CronJobList
	if err := r.List(ctx, &list, opts...); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, cj := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cj)})
	}
	return out
}
