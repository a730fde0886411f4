package controller

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
)

// Annotations on a CronJob that ask Vigil to monitor it.
const (
	// AnnotationCheck "true" gives the CronJob a Check.
	AnnotationCheck = "monitoring.vigil.dev/check"
	// AnnotationGrace is the grace period: seconds ("600") or a duration
	// ("10m"); default one hour, at least one minute.
	AnnotationGrace = "monitoring.vigil.dev/grace"
	// AnnotationChannels assigns Channels: comma-separated object names, or
	// "*" for all.
	AnnotationChannels = "monitoring.vigil.dev/channels"
	// AnnotationTags are the check's tags, space-separated.
	AnnotationTags = "monitoring.vigil.dev/tags"
	// AnnotationName is the check's display name; default the CronJob's.
	AnnotationName = "monitoring.vigil.dev/name"
	// AnnotationLogs "true" lets the tail of a failed pod's log into the
	// fail ping of every check that follows the CronJob (its own, and any
	// Check whose spec.cronJobRef names it). Without it a fail ping says
	// which container failed and how, but no log line: AnnotationCheck
	// does not imply it (docs/cronjobs.md).
	AnnotationLogs = "monitoring.vigil.dev/logs"

	// LabelCronJob marks the Check made for a CronJob with its name.
	LabelCronJob = "monitoring.vigil.dev/cronjob"
	// annotationPausedBySuspend marks a check this controller paused
	// because its CronJob is suspended, so it resumes only what it paused.
	annotationPausedBySuspend = "monitoring.vigil.dev/paused-by-suspend"

	defaultCronJobGrace = time.Hour
)

// CronJobReconciler keeps a Check for every CronJob annotated
// monitoring.vigil.dev/check: "true": schedule and time zone copied from the
// CronJob, grace, channels and tags from annotations, owned by the CronJob
// (deleted with it), removed when the annotation goes, and paused while the
// CronJob is suspended.
type CronJobReconciler struct {
	client.Client
	Clock clock.PassiveClock
	// DefaultTimeZone is the zone of CronJobs without spec.timeZone: the
	// zone kube-controller-manager runs in (UTC in most clusters).
	DefaultTimeZone string
	// Checks writes the Checks it keeps, and pauses and resumes them while
	// their CronJob is suspended.
	Checks *checks.Door
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
	if cj.Annotations[AnnotationCheck] != "true" {
		if existing == nil {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, r.Checks.Delete(ctx, existing)
	}

	desired := func(c *v1.Check) error {
		r.desired(cj, c)
		return controllerutil.SetControllerReference(cj, c, r.Scheme())
	}
	check := existing
	if check == nil {
		check = &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: cj.Namespace, Name: CheckNameForCronJob(cj.Name)}}
		if err := desired(check); err != nil {
			return ctrl.Result{}, err
		}
		if err := r.Checks.CreateOwned(ctx, check); err != nil {
			return ctrl.Result{}, fmt.Errorf("creating the check for CronJob %s: %w", cj.Name, err)
		}
	} else {
		var err error
		if check, err = r.Checks.Update(ctx, check, desired); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, r.followSuspend(ctx, cj, check)
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

// desired writes what the CronJob says into the check, leaving everything
// else (the UUID, fields set by hand) alone.
func (r *CronJobReconciler) desired(cj *batchv1.CronJob, c *v1.Check) {
	if c.Labels == nil {
		c.Labels = map[string]string{}
	}
	c.Labels[LabelCronJob] = cj.Name
	schedule := cronJobSchedule(cj.Spec.Schedule)
	c.Spec.Schedule, c.Spec.Timeout = &schedule, nil
	tz := r.DefaultTimeZone
	if cj.Spec.TimeZone != nil && *cj.Spec.TimeZone != "" {
		tz = *cj.Spec.TimeZone
	}
	if tz == "" {
		tz = "UTC"
	}
	c.Spec.TZ = v1.TimeZone(tz)
	c.Spec.Grace = int64(parseGrace(cj.Annotations[AnnotationGrace]) / time.Second)
	c.Spec.Name = cj.Annotations[AnnotationName]
	if c.Spec.Name == "" {
		c.Spec.Name = cj.Name
	}
	c.Spec.Tags = strings.Join(strings.Fields(cj.Annotations[AnnotationTags]), " ")
	c.Spec.Channels = nil
	for _, ch := range strings.Split(cj.Annotations[AnnotationChannels], ",") {
		if ch = strings.TrimSpace(ch); ch != "" {
			c.Spec.Channels = append(c.Spec.Channels, ch)
		}
	}
	c.Spec.CronJobRef = &v1.LocalObjectReference{Name: cj.Name}
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

// parseGrace reads the grace annotation; anything unreadable is the
// default, and the result is within the API's 1 minute .. 365 days.
func parseGrace(s string) time.Duration {
	s = strings.TrimSpace(s)
	d := defaultCronJobGrace
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		d = time.Duration(n) * time.Second
	} else if v, err := time.ParseDuration(s); err == nil {
		d = v
	}
	return min(max(d, time.Minute), 365*24*time.Hour).Truncate(time.Second)
}

// followSuspend pauses the check while the CronJob is suspended and
// resumes it, if it paused it, when the CronJob is resumed. Pausing is
// observed state: it goes to the ping store, and an annotation on the
// check remembers who paused it.
//
// The store and the API server cannot be written in one transaction, so
// the annotation is written before the pause and removed after the resume:
// whichever write fails, the next reconcile finds a state it can finish
// from. (Written after the pause, a lost annotation would leave a paused
// check that nothing ever resumes.)
func (r *CronJobReconciler) followSuspend(ctx context.Context, cj *batchv1.CronJob, c *v1.Check) error {
	suspended := cj.Spec.Suspend != nil && *cj.Spec.Suspend
	if _, err := r.Checks.Config(c); err != nil {
		// A schedule Vigil cannot read: the check controller reports it on
		// the check, and pausing it would change nothing.
		return nil //nolint:nilerr // reported elsewhere
	}
	obs, err := r.Checks.Observed(ctx, c)
	if err != nil {
		return err
	}
	paused := r.Checks.View(c, obs, r.Clock.Now()).Status == monitor.StatusPaused
	marked := c.Annotations[annotationPausedBySuspend] == "true"
	switch {
	case suspended && !paused:
		if c, err = r.markPausedBySuspend(ctx, c, true); err != nil {
			return err
		}
		_, err = r.Checks.Pause(ctx, c)
		return err
	case !suspended && marked:
		if paused {
			_, err = r.Checks.Resume(ctx, c)
			if err != nil && !errors.Is(err, monitor.ErrNotPaused) {
				return err
			}
		}
		_, err = r.markPausedBySuspend(ctx, c, false)
		return err
	}
	// Suspended and paused (by this controller, or by hand before the
	// suspension: then it stays paused after it), or running and not ours.
	return nil
}

// markPausedBySuspend sets or removes the annotation that says this
// controller paused the check.
func (r *CronJobReconciler) markPausedBySuspend(ctx context.Context, c *v1.Check, mark bool) (*v1.Check, error) {
	return r.Checks.Update(ctx, c, func(c *v1.Check) error {
		if !mark {
			delete(c.Annotations, annotationPausedBySuspend)
			return nil
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[annotationPausedBySuspend] = "true"
		return nil
	})
}

// SetupWithManager registers the reconciler: CronJobs, and the Checks they
// own.
func (r *CronJobReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("cronjob").
		For(&batchv1.CronJob{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// A check's status changes with every ping; only a change to its
		// spec (or its deletion) can take it out of step with the CronJob.
		Owns(&v1.Check{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{RecoverPanic: ptr(true)}).
		Complete(r)
}
