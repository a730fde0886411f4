package controller

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/maintenance"
	"github.com/vigil-operator/vigil/internal/project"
)

// MaintenanceWindowReconciler reads each MaintenanceWindow: its Ready
// condition says whether the window is understood, its status when it is
// active and next starts and how many checks it covers. When a window
// appears, changes or goes, the checks it concerns are observed again (those
// it selects, and those whose rows say it holds them), so that their rows in
// the ping store (the window that holds them, and when it starts or ends)
// follow at once; from then on the starts and ends are the deadline loop's,
// as any change of a check is. Only those: a snooze is a window, and a
// tenant's hundred snoozes must not have the store's one writer read every
// row of its namespace a hundred times. A check the window no longer
// selects and did not hold may wake once at the window's old start, and
// find nothing to do. A snooze's window is deleted once it has ended.
type MaintenanceWindowReconciler struct {
	client.Client
	Checks *checks.Door
	// Clock tells the time; a fake clock in tests.
	Clock clock.PassiveClock
	// Recorder records a window past its namespace's limit as an Event.
	Recorder recorder.EventRecorder
	// PastLimitRecheck is how soon a window past the limit is looked at
	// again (pastLimitRecheck when zero).
	PastLimitRecheck time.Duration
}

// windowRecount bounds how long a window's count of checks may lag behind
// checks that appear or change their labels.
const windowRecount = 10 * time.Minute

// Reconcile reads one MaintenanceWindow: whether it counts against its
// namespace's limit, whether it compiles, when it is active, and how many
// checks it covers; the checks it concerns are observed again when it
// changed.
func (r *MaintenanceWindowReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	if err := r.Checks.RefreshWindows(ctx, req.Namespace); err != nil {
		return ctrl.Result{}, err
	}
	mw := &v1.MaintenanceWindow{}
	if err := r.Get(ctx, req.NamespacedName, mw); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.observeConcerned(ctx, req.Namespace, req.Name, nil) // the window went
	}
	status := beginStatus(r.Client, mw)
	defer func() { err = status.end(ctx, err) }()

	st := &mw.Status
	wasPast, changed := wasPastLimit(st.Conditions), st.ObservedGeneration != mw.Generation
	st.ObservedGeneration = mw.Generation
	st.Active, st.ActiveUntil, st.NextStart, st.Checks = false, nil, nil, 0
	counted, limit, err := r.counted(ctx, mw)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !counted {
		// RefreshWindows left it out: it holds nothing. The checks it held
		// until now (the limit was lowered) are observed without it.
		if !wasPast {
			if err := r.observeConcerned(ctx, mw.Namespace, mw.Name, nil); err != nil {
				return ctrl.Result{}, err
			}
		}
		msg := project.PastLimit(project.MaintenanceWindows, mw.Namespace, "MaintenanceWindows", limit) + "; it holds nothing"
		if meta.SetStatusCondition(&st.Conditions, pastLimitReady(mw.Generation, msg)) {
			recordPastLimit(r.Recorder, mw, msg)
		}
		return ctrl.Result{RequeueAfter: recheckPastLimit(r.PastLimitRecheck)}, nil
	}
	now := r.Clock.Now()
	covered, err := r.namespaceChecks(ctx, mw.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	w, invalid := maintenance.Compile(mw)
	// Changed, or counted again after it was past the limit: its checks'
	// rows are to hold it now.
	if changed || wasPast {
		var selects func(*v1.Check) bool
		if invalid == nil {
			selects = w.Selects
		}
		if err := r.observeAmong(ctx, covered, mw.Namespace, mw.Name, selects); err != nil {
			return ctrl.Result{}, err
		}
	}
	if invalid != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: v1.ReasonInvalidSpec, Message: invalid.Error() + "; the window holds nothing", ObservedGeneration: mw.Generation})
		return ctrl.Result{RequeueAfter: windowRecount}, nil
	}
	wake := r.schedule(mw, w, covered, now)
	if mw.Labels[v1.LabelSnooze] == "true" && !st.Active && st.NextStart == nil {
		// A snooze that has ended is done: nothing shows it any more.
		status.cancel()
		return ctrl.Result{}, client.IgnoreNotFound(r.Delete(ctx, mw, client.Preconditions{UID: &mw.UID}))
	}
	after := windowRecount
	if !wake.IsZero() {
		after = min(after, wake.Sub(now)+time.Second)
	}
	return ctrl.Result{RequeueAfter: max(after, time.Second)}, nil
}

// schedule fills the status of a window that compiles: whether it is
// active at now and until when, when it next starts, and how many of the
// covered checks it selects. It returns when the window next starts or
// ends (zero: never).
func (r *MaintenanceWindowReconciler) schedule(mw *v1.MaintenanceWindow, w *maintenance.Window, covered []*v1.Check, now time.Time) time.Time {
	st := &mw.Status
	var wake time.Time
	span, active := w.At(now)
	if active {
		st.Active, st.ActiveUntil, wake = true, timePtr(span.End), span.End
		span, _ = w.At(span.End)
	}
	if !span.IsZero() {
		st.NextStart = timePtr(span.Start)
		if wake.IsZero() {
			wake = span.Start
		}
	}
	for _, c := range covered {
		if w.Selects(c) {
			st.Checks++
		}
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: v1.ReasonScheduled, Message: fmt.Sprintf("the window covers %d checks; %s", st.Checks, windowWhen(st)),
		ObservedGeneration: mw.Generation})
	return wake
}

// counted reports whether the window counts against its namespace's
// limit, and the limit.
func (r *MaintenanceWindowReconciler) counted(ctx context.Context, mw *v1.MaintenanceWindow) (bool, int, error) {
	limit := r.Checks.ObjectLimit(mw.Namespace, project.MaintenanceWindows)
	if maintenance.IsSnooze(mw) {
		return true, limit, nil // nothing to list
	}
	var list v1.MaintenanceWindowList
	if err := r.List(ctx, &list, client.InNamespace(mw.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return false, 0, err
	}
	counted, _ := maintenance.Counted(list.Items)
	return project.Counts(counted, mw.Name, limit), limit, nil
}

// windowWhen says when a window is active, in words for its Ready message.
func windowWhen(st *v1.MaintenanceWindowStatus) string {
	switch {
	case st.Active:
		return "active until " + st.ActiveUntil.UTC().Format(time.RFC3339)
	case st.NextStart != nil:
		return "next active from " + st.NextStart.UTC().Format(time.RFC3339)
	}
	return "it will not be active again"
}

// namespaceChecks are the namespace's checks, from the cache.
func (r *MaintenanceWindowReconciler) namespaceChecks(ctx context.Context, namespace string) ([]*v1.Check, error) {
	var list v1.CheckList
	if err := r.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	out := make([]*v1.Check, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// observeConcerned has the checks a change of the window name concerns
// observed now: those it selects (selects, when not nil) and those whose
// rows say it holds them.
func (r *MaintenanceWindowReconciler) observeConcerned(ctx context.Context, namespace, name string, selects func(*v1.Check) bool) error {
	all, err := r.namespaceChecks(ctx, namespace)
	if err != nil {
		return err
	}
	return r.observeAmong(ctx, all, namespace, name, selects)
}

// observeAmong is observeConcerned of the namespace's checks all, already
// listed.
func (r *MaintenanceWindowReconciler) observeAmong(ctx context.Context, all []*v1.Check, namespace, name string, selects func(*v1.Check) bool) error {
	rows, err := r.Checks.ObservedIn(ctx, namespace)
	if err != nil {
		return err
	}
	var concerned []*v1.Check
	for _, c := range all {
		if (selects != nil && selects(c)) || rows.Of(c.UID).Maintenance == name {
			concerned = append(concerned, c)
		}
	}
	return r.observe(ctx, concerned)
}

// observeChunk bounds the checks of one store transaction.
const observeChunk = 500

// observe has the checks observed now, but not those the check controller
// has stalled (it does not monitor them).
func (r *MaintenanceWindowReconciler) observe(ctx context.Context, all []*v1.Check) error {
	var monitored []*v1.Check
	for _, c := range all {
		if !meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionStalled) {
			monitored = append(monitored, c)
		}
	}
	for len(monitored) > 0 {
		n := min(len(monitored), observeChunk)
		if _, err := r.Checks.Observe(ctx, monitored[:n], r.Clock.Now()); err != nil {
			return err
		}
		monitored = monitored[n:]
	}
	return nil
}

func timePtr(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// SetupWithManager registers the reconciler: spec changes and deletions
// (its own status writes are not its business).
func (r *MaintenanceWindowReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.MaintenanceWindow{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("maintenancewindow").
		Complete(r)
}
