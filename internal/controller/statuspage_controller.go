package controller

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/project"
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

// Reconcile reads one StatusPage.
func (r *StatusPageReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sp := &v1.StatusPage{}
	if err := r.Get(ctx, req.NamespacedName, sp); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := sp.DeepCopy()
	st := &sp.Status
	ready := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonPublished, ObservedGeneration: sp.Generation}
	st.URL, st.Checks = statuspage.URL(r.BaseURL, sp), 0
	chosen, err := statuspage.Selection(sp)
	counted, limit, countErr := r.counted(ctx, sp)
	switch {
	case countErr != nil:
		return ctrl.Result{}, countErr
	case !counted:
		st.URL = ""
		ready = pastLimitReady(sp.Generation, project.PastLimit(project.StatusPages, sp.Namespace, "StatusPages", limit)+"; the page is not served")
	case err != nil:
		st.URL = ""
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, v1.ReasonInvalidSpec, err.Error()+"; the page is not served"
	default:
		var list v1.CheckList
		if err := r.List(ctx, &list, client.InNamespace(sp.Namespace)); err != nil {
			return ctrl.Result{}, err
		}
		for i := range list.Items {
			if chosen.Selects(&list.Items[i]) {
				st.Checks++
			}
		}
		ready.Message = fmt.Sprintf("the page shows %d checks at status.url", st.Checks)
	}
	changed := meta.SetStatusCondition(&st.Conditions, ready)
	st.ObservedGeneration = sp.Generation
	if !equality.Semantic.DeepEqual(before.Status, sp.Status) {
		// An update: "checks": 0 must be written for the column to show
		// it. The controller is the status's only writer.
		if err := r.Status().Update(ctx, sp); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing status of StatusPage %s: %w", req, err)
		}
	}
	if !counted {
		if changed {
			recordPastLimit(r.Recorder, sp, ready.Message)
		}
		return ctrl.Result{RequeueAfter: recheckPastLimit(r.PastLimitRecheck)}, nil
	}
	return ctrl.Result{RequeueAfter: pageRecount}, nil
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
