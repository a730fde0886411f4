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

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/statuspage"
)

// StatusPageReconciler reads each StatusPage: its status says the page's
// address, how many checks it shows and whether it is served (Ready). The
// page itself is made when it is asked for, from the cache and the store.
type StatusPageReconciler struct {
	client.Client
	// BaseURL is the site's root, for the page's address.
	BaseURL string
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
	if err != nil {
		st.URL = ""
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, v1.ReasonInvalidSpec, err.Error()+"; the page is not served"
	} else {
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
	meta.SetStatusCondition(&st.Conditions, ready)
	st.ObservedGeneration = sp.Generation
	if !equality.Semantic.DeepEqual(before.Status, sp.Status) {
		// An update: "checks": 0 must be written for the column to show
		// it. The controller is the status's only writer.
		if err := r.Status().Update(ctx, sp); err != nil {
			return ctrl.Result{}, fmt.Errorf("writing status of StatusPage %s: %w", req, err)
		}
	}
	return ctrl.Result{RequeueAfter: pageRecount}, nil
}

// SetupWithManager registers the reconciler: spec changes and deletions.
func (r *StatusPageReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.StatusPage{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("statuspage").
		Complete(r)
}
