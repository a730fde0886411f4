package controller

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// channelsField indexes checks by the Channel names their spec lists, its
// escalation's included.
const channelsField = "vigil.spec.channels"

// CheckOptions tune the check controller.
type CheckOptions struct {
	// MaxConcurrentReconciles bounds parallel reconciles (default 16: a
	// reconcile mostly waits for the store's commit, and parallel ones
	// share it).
	MaxConcurrentReconciles int
}

// SetupWithManager registers the reconciler: it watches Checks (their spec
// and metadata, not the status the projector writes), and Channels so that
// a check naming a Channel that appears later recovers.
func (r *CheckReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, opts CheckOptions) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1.Check{}, channelsField, func(o client.Object) []string {
		return o.(*v1.Check).Spec.NamedChannels()
	}); err != nil {
		return err
	}
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = 16
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.Check{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{},
			predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		// Only a Channel appearing or going changes what a check that
		// names it reports; its status changes with every delivery.
		Watches(&v1.Channel{}, handler.EnqueueRequestsFromMapFunc(r.checksNaming),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		// A check appearing, going, or changing its spec or labels may
		// make or break a cycle of the checks that depend on it.
		Watches(&v1.Check{}, handler.EnqueueRequestsFromMapFunc(r.dependents),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Named("check").
		WithOptions(controller.Options{MaxConcurrentReconciles: opts.MaxConcurrentReconciles, RecoverPanic: ptr(true)}).
		Complete(r)
}

// checksNaming maps a Channel to the checks in its namespace that name it.
func (r *CheckReconciler) checksNaming(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1.CheckList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{channelsField: o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return reqs
}

// dependents maps a check to the checks of its namespace that depend on
// it (for an update, on its old or its new labels: both are mapped).
func (r *CheckReconciler) dependents(_ context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*v1.Check)
	if !ok {
		return nil
	}
	var reqs []reconcile.Request
	for _, key := range r.Checks.Dependents(c) {
		reqs = append(reqs, reconcile.Request{NamespacedName: key})
	}
	return reqs
}

func ptr[T any](v T) *T { return &v }
