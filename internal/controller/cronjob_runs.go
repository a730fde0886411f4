package controller

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/schedule"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/words"
)

// The CronJob controller's third job: what a CronJob itself got wrong
// about its runs (a run never created, runs that overlap), told to every
// check that follows it.

// StartSlack is how long after its scheduled time a CronJob's run may take
// to be created before it is reported as a run that never started, when
// the CronJob sets no startingDeadlineSeconds (kube-controller-manager
// creates a due Job within seconds).
const StartSlack = 2 * time.Minute

// missedLookback bounds how far back the scheduled times a CronJob may
// have missed are walked: the newest matters, and a minutely schedule
// walks 2,880 steps.
const missedLookback = 48 * time.Hour

// maxMissedSteps bounds the walk for any schedule.
const maxMissedSteps = 20_000

// watchRuns reports what a CronJob itself got wrong about its runs, to
// every check that follows it: a scheduled run that was never created
// (skipped behind a running one by concurrencyPolicy Forbid, reported once
// per blocking run; missed past startingDeadlineSeconds or not created at
// all, once per streak of missed runs), and, when the CronJob asks for it,
// runs that overlap. Runs scheduled while the CronJob was suspended, or
// before resumedAt (when the check was last resumed with it), were not
// missed. It returns when to look again: when the next run is overdue.
func (r *CronJobReconciler) watchRuns(ctx context.Context, cj *batchv1.CronJob, alertOnOverlap bool, resumedAt time.Time) (time.Duration, error) {
	now := r.Clock.Now()
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		// Its runs until now are not missed; nothing to read first.
		return 0, r.Suspensions.SeeCronJobSuspension(ctx, cj.Namespace, cj.UID, store.CronJobSuspension{Suspended: true, Until: now})
	}
	seen, _, err := r.Suspensions.CronJobSuspension(ctx, cj.UID)
	if err != nil {
		return 0, err
	}
	if seen.Suspended {
		// Resumed since last seen suspended: until now.
		seen = store.CronJobSuspension{Until: now}
		if err := r.Suspensions.SeeCronJobSuspension(ctx, cj.Namespace, cj.UID, seen); err != nil {
			return 0, err
		}
	}
	sched, err := schedule.Parse(cronJobSchedule(cj.Spec.Schedule), r.zone(cj))
	if err != nil {
		return 0, nil //nolint:nilerr // the check reports a schedule it cannot read
	}
	var linked v1.CheckList
	if err := r.List(ctx, &linked, client.InNamespace(cj.Namespace), client.MatchingFields{checks.CronJobField: cj.Name}); err != nil {
		return 0, err
	}
	if len(linked.Items) == 0 {
		return 0, nil
	}
	if alertOnOverlap && len(cj.Status.Active) > 1 {
		if err := r.reportOverlap(ctx, cj, linked.Items); err != nil {
			return 0, err
		}
	}

	slack := StartSlack
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		slack = max(time.Duration(*d)*time.Second, 10*time.Second)
	}
	last := cj.CreationTimestamp.Time
	if resumedAt.After(last) {
		last = resumedAt
	}
	if t := cj.Status.LastScheduleTime; t != nil && t.After(last) {
		last = t.Time
	}
	if seen.Until.After(last) {
		last = seen.Until
	}
	// The newest scheduled time after the last run whose slack is over.
	var missed time.Time
	from := last
	if lookback := now.Add(-missedLookback); lookback.After(from) {
		from = lookback
	}
	due, ok := sched.Next(from)
	steps := 0
	for ; ok && !now.Before(due.Add(slack)) && steps < maxMissedSteps; steps++ {
		missed = due
		due, ok = sched.Next(due)
	}
	if !missed.IsZero() {
		if err := r.reportMissed(ctx, cj, linked.Items, missed, last, slack); err != nil {
			return 0, err
		}
	}
	switch {
	case !ok:
		return 0, nil
	case steps == maxMissedSteps:
		return time.Minute, nil // a schedule denser than the walk: look again soon, not at once
	}
	return max(due.Add(slack).Sub(now), time.Second), nil
}

// zone is the time zone a CronJob's schedule is read in.
func (r *CronJobReconciler) zone(cj *batchv1.CronJob) string {
	if cj.Spec.TimeZone != nil && *cj.Spec.TimeZone != "" {
		return *cj.Spec.TimeZone
	}
	if r.DefaultTimeZone != "" {
		return r.DefaultTimeZone
	}
	return "UTC"
}

// reportMissed records that the run scheduled at due was never created,
// and why as far as the CronJob tells: once per run that blocks it, or
// once per streak of missed runs since last.
func (r *CronJobReconciler) reportMissed(ctx context.Context, cj *batchv1.CronJob, linked []v1.Check, due, last time.Time, slack time.Duration) error {
	at := due.UTC().Format(time.RFC3339)
	key := string(cj.UID) + "/missed-after/" + last.UTC().Format(time.RFC3339)
	var why string
	switch {
	case cj.Spec.ConcurrencyPolicy == batchv1.ForbidConcurrent && len(cj.Status.Active) > 0:
		key = string(cj.UID) + "/blocked-by/" + string(cj.Status.Active[0].UID)
		why = fmt.Sprintf("the previous run (Job %s) is still running, and concurrencyPolicy Forbid skips a run while one is running. "+
			"Hint: a run that hangs blocks every later one; give the jobTemplate an activeDeadlineSeconds.", cj.Status.Active[0].Name)
	case cj.Spec.StartingDeadlineSeconds != nil:
		why = fmt.Sprintf("it was not started within its startingDeadlineSeconds (%s), so Kubernetes skipped it. "+
			"Hint: kube-controller-manager was down or too busy at that time.", words.Duration(time.Duration(*cj.Spec.StartingDeadlineSeconds)*time.Second))
	default:
		why = fmt.Sprintf("no Job was created for it within %s. Hint: is kube-controller-manager (its CronJob controller) running?", words.Duration(slack))
	}
	body := fmt.Sprintf("The run of CronJob %s scheduled at %s did not start: %s", cj.Name, at, why)
	return r.recordOnce(ctx, linked, key, due, body)
}

// reportOverlap records that runs of the CronJob overlap: its newest
// active Job started while an older one was still running.
func (r *CronJobReconciler) reportOverlap(ctx context.Context, cj *batchv1.CronJob, linked []v1.Check) error {
	type run struct {
		name    string
		started time.Time
	}
	var runs []run
	for _, ref := range cj.Status.Active {
		job := &batchv1.Job{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: cj.Namespace, Name: ref.Name}, job); err != nil || job.UID != ref.UID {
			continue
		}
		started := job.CreationTimestamp.Time
		if job.Status.StartTime != nil {
			started = job.Status.StartTime.Time
		}
		runs = append(runs, run{ref.Name, started})
	}
	if len(runs) < 2 {
		return nil
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].started.Before(runs[j].started) })
	newest := runs[len(runs)-1]
	var older []string
	for _, o := range runs[:len(runs)-1] {
		older = append(older, fmt.Sprintf("%s (started %s)", o.name, o.started.UTC().Format(time.RFC3339)))
	}
	body := fmt.Sprintf("Runs of CronJob %s overlap: Job %s started at %s while %s still ran. "+
		"Hint: a run takes longer than the time between runs; set concurrencyPolicy Forbid or Replace, or space the schedule out.",
		cj.Name, newest.name, newest.started.UTC().Format(time.RFC3339), strings.Join(older, ", "))
	return r.recordOnce(ctx, linked, string(cj.UID)+"/overlap/"+newest.name, newest.started, body)
}

// recordOnce records a fail ping about the CronJob on each check, once:
// under a run id made from key. What happened at a time before a check
// existed says nothing about it.
func (r *CronJobReconciler) recordOnce(ctx context.Context, linked []v1.Check, key string, at time.Time, body string) error {
	rid := uuid.NewSHA1(uuid.NameSpaceOID, []byte(key)).String()
	for i := range linked {
		c := &linked[i]
		if at.Before(c.CreationTimestamp.Time) {
			continue
		}
		if err := failOnce(ctx, r.Checks, c, store.Ping{At: r.Clock.Now(), RID: rid, Body: []byte(body), UA: cronJobPingUA, Method: "CRONJOB"}); err != nil {
			return err
		}
	}
	return nil
}

// failOnce records p as a failure of the check, from Kubernetes, unless
// its ping log already holds a failure of p's run id: what the CronJob
// and Job controllers find themselves is recorded once, also across
// restarts and retries.
func failOnce(ctx context.Context, d *checks.Door, c *v1.Check, p store.Ping) error {
	seen, _, err := d.RunKinds(ctx, c, p.RID)
	if err != nil || seen[monitor.PingFail] {
		return err
	}
	p.Kind, p.Scheme = monitor.PingFail, "kubernetes"
	if _, err := d.RecordPing(ctx, c, p); err != nil {
		return fmt.Errorf("recording a failure for check %s: %w", c.Name, err)
	}
	return nil
}

// runsChanged passes a CronJob's status changes that say a run was
// created or ended: its last schedule time and its active Jobs.
func runsChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*batchv1.CronJob)
			n, ok2 := e.ObjectNew.(*batchv1.CronJob)
			if !ok1 || !ok2 {
				return false
			}
			return !o.Status.LastScheduleTime.Equal(n.Status.LastScheduleTime) || len(o.Status.Active) != len(n.Status.Active)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
