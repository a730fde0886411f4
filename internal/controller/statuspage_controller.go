package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/selection"
	"github.com/vigil-operator/vigil/internal/statuspage"
)

// StatusPageReconciler reads each StatusPage: its status says the page's
// address, how many checks it shows and whether it is served (Ready). The
// page itself is made when it is asked for, from the cache and the store.
type StatusPageReconciler struct {
	client.Client
	// BaseURL is the site's root, for the page's address.
	BaseURL string
	// Limit is a namespace's StatusPage limit (project.Limits); nil:
	// project.DefaultObjectLimits'.
	Limit func(namespace string, kind project.ObjectKind) int
	// Recorder records a page past its namespace's limit as an Event.
	Recorder recorder.EventRecorder
	// PastLimitRecheck is how soon a page past the limit is looked at
	// again (pastLimitRecheck when zero).
	PastLimitRecheck time.Duration
}

// pageRecount bounds how long a page's count of checks may lag behind
// checks that appear or change.
const pageRecount = 10 * time.Minute

// Reconcile reads one StatusPage: whether it counts against its
// namespace's limit, whether its selection compiles, and how many checks it
// shows.
func (r *StatusPageReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	sp := &v1.StatusPage{}
	if err := r.Get(ctx, req.NamespacedName, sp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status := beginStatus(r.Client, sp)
	defer func() { err = status.end(ctx, err) }()

	counted, limit, err := r.counted(ctx, sp)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !counted {
		msg := project.PastLimit(project.StatusPages, sp.Namespace, "StatusPages", limit) + "; the page is not served"
		sp.Status.URL, sp.Status.Checks = "", 0
		r.setReady(sp, pastLimitReady(sp.Generation, msg))
		return ctrl.Result{RequeueAfter: recheckPastLimit(r.PastLimitRecheck)}, nil
	}
	chosen, err := statuspage.Selection(sp)
	if err != nil {
		sp.Status.URL, sp.Status.Checks = "", 0
		r.setReady(sp, metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionFalse, Reason: v1.ReasonInvalidSpec,
			Message: err.Error() + "; the page is not served", ObservedGeneration: sp.Generation})
		return ctrl.Result{RequeueAfter: pageRecount}, nil
	}
	shown, err := r.shown(ctx, sp.Namespace, chosen)
	if err != nil {
		return ctrl.Result{}, err
	}
	sp.Status.URL, sp.Status.Checks = statuspage.URL(r.BaseURL, sp), shown
	r.setReady(sp, metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonPublished,
		Message: fmt.Sprintf("the page shows %d checks at status.url", shown), ObservedGeneration: sp.Generation})
	return ctrl.Result{RequeueAfter: pageRecount}, nil
}

// setReady sets the page's Ready condition, with an Event when it newly
// says the page is past its namespace's limit.
func (r *StatusPageReconciler) setReady(sp *v1.StatusPage, ready metav1.Condition) {
	sp.Status.ObservedGeneration = sp.Generation
	if meta.SetStatusCondition(&sp.Status.Conditions, ready) && ready.Reason == v1.ReasonLimitExceeded {
		recordPastLimit(r.Recorder, sp, ready.Message)
	}
}

// shown is how many checks of the namespace the page's selection chooses.
func (r *StatusPageReconciler) shown(ctx context.Context, namespace string, chosen selection.Selection) (int32, error) {
	var list v1.CheckList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return 0, err
	}
	var n int32
	for i := range list.Items {
		if chosen.Selects(&list.Items[i]) {
			n++
		}
	}
	return n, nil
}

// counted reports whether the page counts against its namespace's limit,
// and the limit.
func (r *StatusPageReconciler) counted(ctx context.Context, sp *v1.StatusPage) (bool, int, error) {
	limit := objectLimit(r.Limit, sp.Namespace, project.StatusPages)
	var list v1.StatusPageList
	if err := r.List(ctx, &list, client.InNamespace(sp.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return false, 0, err
	}
	return project.Counts(list.Items, sp.Name, limit), limit, nil
}

// SetupWithManager registers the reconciler: spec changes and deletions.
func (r *StatusPageReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.StatusPage{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("statuspage").
		Complete(r)
}
