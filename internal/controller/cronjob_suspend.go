package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	batchv1 "k8s.io/api/batch/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/words"
)

// The CronJob controller's second job: a suspended CronJob's Check is
// paused, and taken out of the pause with a failure when the suspension
// lasts past its limit. (The first, keeping the Check in step with the
// CronJob, is cronjob_controller.go's; the third, what the CronJob got
// wrong about its runs, cronjob_runs.go's.)

// followSuspend pauses the check while the CronJob is suspended and
// resumes it, if it paused it, when the CronJob is resumed. A suspension
// longer than maxSuspended (0: no limit) resumes the check with a failure
// that says so, once per suspension. Pausing is observed state: it goes to
// the ping store, and annotations on the check remember who paused it,
// since when, and whether it alerted.
//
// The store and the API server cannot be written in one transaction, so
// the annotation is written before the pause and removed after the resume:
// whichever write fails, the next reconcile finds a state it can finish
// from. (Written after the pause, a lost annotation would leave a paused
// check that nothing ever resumes.) The alert's failure is recorded once
// per suspension under one run id, so a retry does not repeat it.
func (r *CronJobReconciler) followSuspend(ctx context.Context, cj *batchv1.CronJob, c *v1.Check, maxSuspended time.Duration) (ctrl.Result, *v1.Check, error) {
	suspended := cj.Spec.Suspend != nil && *cj.Spec.Suspend
	mark, marked := c.Annotations[annotationSuspendedSince]
	if !suspended && !marked {
		return ctrl.Result{}, c, nil // running, and not paused by this controller
	}
	if _, err := r.Checks.Config(c); err != nil {
		// A schedule Vigil cannot read: the check controller reports it on
		// the check, and pausing it would change nothing.
		return ctrl.Result{}, c, nil //nolint:nilerr // reported elsewhere
	}
	obs, err := r.Checks.Observed(ctx, c)
	if err != nil {
		return ctrl.Result{}, c, err
	}
	now := r.Clock.Now()
	paused := r.Checks.View(c, obs, now).Status == monitor.StatusPaused
	alerted := c.Annotations[annotationSuspendedAlerted] != ""
	switch {
	case suspended && !marked:
		if paused {
			// Paused by hand before the suspension: it stays paused after
			// it, and its pause is not this controller's to time.
			return ctrl.Result{}, c, nil
		}
		if c, err = r.annotate(ctx, c, annotationSuspendedSince, now.UTC().Format(time.RFC3339)); err != nil {
			return ctrl.Result{}, c, err
		}
		if _, err = r.Checks.Pause(ctx, c); err != nil {
			return ctrl.Result{}, c, err
		}
		return requeueAt(now, now, maxSuspended), c, nil
	case suspended:
		since, err := time.Parse(time.RFC3339, mark)
		if err != nil {
			// Marked by an earlier version ("true"): the suspension is
			// timed from now.
			c, err = r.annotate(ctx, c, annotationSuspendedSince, now.UTC().Format(time.RFC3339))
			return requeueAt(now, now, maxSuspended), c, err
		}
		if !paused && !alerted {
			// Marked, but the pause that follows the mark failed: finish it.
			if _, err := r.Checks.Pause(ctx, c); err != nil {
				return ctrl.Result{}, c, err
			}
			paused = true
		}
		if maxSuspended <= 0 || alerted {
			return ctrl.Result{}, c, nil
		}
		if now.Before(since.Add(maxSuspended)) {
			return requeueAt(now, since, maxSuspended), c, nil
		}
		return ctrl.Result{}, c, r.alertSuspended(ctx, cj, c, since, maxSuspended, paused)
	case marked:
		if paused {
			_, err = r.Checks.Resume(ctx, c)
			if err != nil && !errors.Is(err, monitor.ErrNotPaused) {
				return ctrl.Result{}, c, err
			}
		}
		// The marks go, and the resume's time stays: the runs scheduled
		// while the CronJob was suspended were not missed (watchRuns).
		updated, err := r.Checks.Update(ctx, c, func(c *v1.Check) error {
			delete(c.Annotations, annotationSuspendedAlerted)
			delete(c.Annotations, annotationSuspendedSince)
			c.Annotations[annotationResumedAt] = now.UTC().Format(time.RFC3339)
			return nil
		})
		if err != nil {
			return ctrl.Result{}, c, err
		}
		return ctrl.Result{}, updated, nil
	}
	return ctrl.Result{}, c, nil
}

// requeueAt asks to be back when a suspension that began at since reaches
// its limit (none without one).
func requeueAt(now, since time.Time, limit time.Duration) ctrl.Result {
	if limit <= 0 {
		return ctrl.Result{}
	}
	return ctrl.Result{RequeueAfter: max(since.Add(limit).Sub(now), time.Second)}
}

// alertSuspended takes a check out of its pause with a failure: the
// CronJob has been suspended since since, longer than limit.
func (r *CronJobReconciler) alertSuspended(ctx context.Context, cj *batchv1.CronJob, c *v1.Check, since time.Time, limit time.Duration, paused bool) error {
	if paused {
		if _, err := r.Checks.Resume(ctx, c); err != nil && !errors.Is(err, monitor.ErrNotPaused) {
			return err
		}
	}
	rid := uuid.NewSHA1(uuid.NameSpaceOID, []byte(string(cj.UID)+"/suspended/"+since.UTC().Format(time.RFC3339))).String()
	body := fmt.Sprintf("CronJob %s has been suspended since %s, longer than its limit of %s (%s), so none of its runs happen. "+
		"Resume it with: kubectl patch cronjob %s -n %s -p '{\"spec\":{\"suspend\":false}}'",
		cj.Name, since.UTC().Format(time.RFC3339), words.Duration(limit), maxSuspendedSource(c), cj.Name, cj.Namespace)
	if err := failOnce(ctx, r.Checks, c, store.Ping{At: r.Clock.Now(), RID: rid, Body: []byte(body), UA: cronJobPingUA, Method: "CRONJOB"}); err != nil {
		return err
	}
	_, err := r.annotate(ctx, c, annotationSuspendedAlerted, "true")
	return err
}

// maxSuspendedSource says where a check's suspension limit comes from.
func maxSuspendedSource(c *v1.Check) string {
	if cov := CoverageOf(c); cov != nil && cov.Policy != "" && slices.Contains(cov.PolicyFields, "maxSuspended") {
		return "maxSuspended of " + cov.Policy
	}
	return "annotation " + AnnotationMaxSuspended
}

// cronJobPingUA is the user agent of the pings about a CronJob itself.
const cronJobPingUA = "vigil (Kubernetes CronJob)"

// annotate sets an annotation on the check, or removes it when value is
// empty.
func (r *CronJobReconciler) annotate(ctx context.Context, c *v1.Check, key, value string) (*v1.Check, error) {
	return r.Checks.Update(ctx, c, func(c *v1.Check) error {
		if value == "" {
			delete(c.Annotations, key)
			return nil
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[key] = value
		return nil
	})
}
