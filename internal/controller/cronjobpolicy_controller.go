package controller

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/coverage"
	"github.com/vigil-operator/vigil/internal/project"
)

// policyInputs are the policies that could cover the CronJobs of one
// namespace, and the namespace's labels, as the cache holds them.
type policyInputs struct {
	namespaceLabels map[string]string
	namespaced      []coverage.Policy
	cluster         []coverage.Policy
}

// policiesFor reads the policies of a namespace, the first limit of them,
// and, when cluster policies are given (read once by the caller), the
// namespace's labels. A policy whose selector does not parse covers
// nothing, nor one past the namespace's limit (its Ready condition says
// why).
func policiesFor(ctx context.Context, c client.Reader, namespace string, limit int, cluster []coverage.Policy) (policyInputs, error) {
	in := policyInputs{cluster: cluster}
	var err error
	if in.namespaced, err = namespacedPolicies(ctx, c, namespace, limit); err != nil || len(cluster) == 0 {
		return in, err
	}
	ns := namespaceMeta()
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return in, client.IgnoreNotFound(err)
	}
	in.namespaceLabels = ns.Labels
	return in, nil
}

// namespacedPolicies are the CronJobPolicies of a namespace that count
// against its limit (the oldest limit of them) and parse.
func namespacedPolicies(ctx context.Context, c client.Reader, namespace string, limit int) ([]coverage.Policy, error) {
	var list v1.CronJobPolicyList
	if err := c.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	counted := project.Oldest(list.Items, limit)
	var out []coverage.Policy
	for i := range counted {
		if p, err := coverage.Namespaced(&counted[i]); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// clusterPolicies are the ClusterCronJobPolicies that parse.
func clusterPolicies(ctx context.Context, c client.Reader) ([]coverage.Policy, error) {
	var list v1.ClusterCronJobPolicyList
	if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []coverage.Policy
	for i := range list.Items {
		if p, err := coverage.Cluster(&list.Items[i]); err == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// namespaceMeta is a Namespace's metadata: the cache keeps no more of
// namespaces than that.
func namespaceMeta() *metav1.PartialObjectMetadata {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	return ns
}

// cronJob is what the decision reads of a CronJob of the namespace.
func (in policyInputs) cronJob(cj *batchv1.CronJob) coverage.CronJob {
	return coverage.CronJob{Namespace: cj.Namespace, Name: cj.Name, Labels: cj.Labels, Annotations: cj.Annotations,
		NamespaceLabels: in.namespaceLabels}
}

// CronJobPolicyReconciler writes the status of CronJobPolicies and
// ClusterCronJobPolicies: how many CronJobs each gives a Check, and the
// CronJobs another policy of its level also selects. (The Checks
// themselves are the CronJob controller's.) A request without a namespace
// is a ClusterCronJobPolicy's.
type CronJobPolicyReconciler struct {
	client.Client
	// ClusterPolicies: ClusterCronJobPolicies apply.
	ClusterPolicies bool
	// Limit is a namespace's limit of objects of a kind (project.Limits);
	// nil: project.DefaultObjectLimits'.
	Limit func(namespace string, kind project.ObjectKind) int
	// Recorder records a policy past its namespace's limit as an Event.
	Recorder recorder.EventRecorder
	// PastLimitRecheck is how soon a policy past the limit is looked at
	// again (pastLimitRecheck when zero).
	PastLimitRecheck time.Duration
}

// policyLimit is the namespace's CronJobPolicy limit.
func (r *CronJobPolicyReconciler) policyLimit(namespace string) int {
	return objectLimit(r.Limit, namespace, project.CronJobPolicies)
}

// maxConflicts bounds the conflicts a policy's status lists.
const maxConflicts = 20

// Reconcile writes one policy's status: past its namespace's limit, it
// covers nothing; otherwise the CronJobs of the namespaces it covers are
// tallied.
func (r *CronJobPolicyReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	p, st := policyObject(req)
	if err := r.Get(ctx, req.NamespacedName, p); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status := beginStatus(r.Client, p)
	defer func() { err = status.end(ctx, err) }()

	if namespaced, ok := p.(*v1.CronJobPolicy); ok {
		var list v1.CronJobPolicyList
		if err := r.List(ctx, &list, client.InNamespace(p.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
			return ctrl.Result{}, err
		}
		if limit := r.policyLimit(p.GetNamespace()); !project.Counts(list.Items, p.GetName(), limit) {
			r.pastLimit(namespaced, limit)
			return ctrl.Result{RequeueAfter: recheckPastLimit(r.PastLimitRecheck)}, nil
		}
	}
	compiled, invalid := compilePolicy(p)
	namespaces, err := r.namespacesOf(ctx, p, compiled, invalid == nil)
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.tally(ctx, st, p.GetGeneration(), compiled, invalid, namespaces)
}

// policyObject is the policy a request names, a ClusterCronJobPolicy when
// it has no namespace, and its status.
func policyObject(req ctrl.Request) (client.Object, *v1.CronJobPolicyStatus) {
	if req.Namespace != "" {
		p := &v1.CronJobPolicy{}
		return p, &p.Status
	}
	p := &v1.ClusterCronJobPolicy{}
	return p, &p.Status
}

// compilePolicy compiles either kind of policy.
func compilePolicy(p client.Object) (coverage.Policy, error) {
	if namespaced, ok := p.(*v1.CronJobPolicy); ok {
		return coverage.Namespaced(namespaced)
	}
	return coverage.Cluster(p.(*v1.ClusterCronJobPolicy))
}

// namespacesOf are the namespaces a policy covers: a CronJobPolicy's own,
// a ClusterCronJobPolicy's those its namespace selector matches (none when
// it is not valid).
func (r *CronJobPolicyReconciler) namespacesOf(ctx context.Context, p client.Object, compiled coverage.Policy, valid bool) ([]string, error) {
	if p.GetNamespace() != "" {
		return []string{p.GetNamespace()}, nil
	}
	if !valid {
		return nil, nil
	}
	var list metav1.PartialObjectMetadataList
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.List(ctx, &list); err != nil {
		return nil, err
	}
	var namespaces []string
	for _, ns := range list.Items {
		if compiled.Namespaces.Matches(labels.Set(ns.Labels)) {
			namespaces = append(namespaces, ns.Name)
		}
	}
	return namespaces, nil
}

// pastLimit fills the status of a policy past its namespace's limit: it
// covers nothing, and says so, with an Event when it newly does.
func (r *CronJobPolicyReconciler) pastLimit(p *v1.CronJobPolicy, limit int) {
	msg := project.PastLimit(project.CronJobPolicies, p.Namespace, "CronJobPolicies", limit) + "; the policy covers nothing"
	st := &p.Status
	st.ObservedGeneration, st.CronJobs, st.Conflicts = p.Generation, 0, nil
	meta.RemoveStatusCondition(&st.Conditions, v1.ConditionConflicting)
	if meta.SetStatusCondition(&st.Conditions, pastLimitReady(p.Generation, msg)) {
		recordPastLimit(r.Recorder, p, msg)
	}
}

// tally fills a policy's status: the CronJobs of the namespaces it covers,
// and its conflicts. invalid is why the policy cannot apply.
func (r *CronJobPolicyReconciler) tally(ctx context.Context, st *v1.CronJobPolicyStatus, gen int64, p coverage.Policy, invalid error, namespaces []string) error {
	st.ObservedGeneration, st.CronJobs, st.Conflicts = gen, 0, nil
	ready := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonPolicyApplied, ObservedGeneration: gen}
	if invalid != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, v1.ReasonInvalidSpec, invalid.Error()+"; the policy covers nothing"
		meta.SetStatusCondition(&st.Conditions, ready)
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionConflicting)
		return nil //nolint:nilerr // the spec's error is the status, not the reconcile's
	}
	// The cluster's policies once, not once per namespace.
	var cluster []coverage.Policy
	if r.ClusterPolicies {
		var err error
		if cluster, err = clusterPolicies(ctx, r.Client); err != nil {
			return err
		}
	}
	conflicts := 0
	for _, ns := range namespaces {
		in, err := policiesFor(ctx, r.Client, ns, r.policyLimit(ns), cluster)
		if err != nil {
			return err
		}
		// Read only: the cache's objects, not copies of every jobTemplate.
		var cronJobs batchv1.CronJobList
		if err := r.List(ctx, &cronJobs, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		for i := range cronJobs.Items {
			cj := in.cronJob(&cronJobs.Items[i])
			if !p.Selects(cj) {
				continue
			}
			d := coverage.Decide(cj, in.namespaced, in.cluster)
			if d.Policy == nil || d.Policy.Kind != p.Kind {
				continue // opted out, or a namespace's own policy applies
			}
			if d.Policy.Name == p.Name {
				st.CronJobs++
			}
			if others := otherPolicies(d, p); len(others) > 0 {
				conflicts++
				if len(st.Conflicts) < maxConflicts {
					name := cj.Name
					if p.Kind == coverage.KindCluster {
						name = cj.Namespace + "/" + cj.Name
					}
					st.Conflicts = append(st.Conflicts, fmt.Sprintf("%s: also selected by %s; %s applies",
						name, strings.Join(others, ", "), d.Policy.Ref()))
				}
			}
		}
	}
	ready.Message = fmt.Sprintf("The policy gives %d CronJob(s) a Check", st.CronJobs)
	meta.SetStatusCondition(&st.Conditions, ready)
	conflicting := metav1.Condition{Type: v1.ConditionConflicting, Status: metav1.ConditionFalse, Reason: v1.ReasonNoConflict,
		Message: "No other policy of its level selects its CronJobs", ObservedGeneration: gen}
	if conflicts > 0 {
		conflicting.Status, conflicting.Reason = metav1.ConditionTrue, v1.ReasonSelectedTwice
		conflicting.Message = fmt.Sprintf("%d CronJob(s) it selects are selected by another %s too; the first policy by name applies (status.conflicts)",
			conflicts, p.Kind)
	}
	meta.SetStatusCondition(&st.Conditions, conflicting)
	return nil
}

// otherPolicies are the policies of p's level that select a CronJob with
// p, as the decision names them; none when p is alone.
func otherPolicies(d coverage.Decision, p coverage.Policy) []string {
	all := append([]string{d.Policy.Ref()}, d.AlsoSelectedBy...)
	if len(all) < 2 {
		return nil
	}
	return slices.DeleteFunc(all, func(ref string) bool { return ref == p.Ref() })
}

// SetupWithManager registers the reconciler: the policies, the CronJobs
// they may select, and (for cluster policies) namespaces' labels.
func (r *CronJobPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("cronjobpolicy").
		// A policy's change changes the others of its namespace (their
		// conflicts) and the cluster's (a namespace's own policy takes its
		// CronJobs from them).
		Watches(&v1.CronJobPolicy{}, handler.EnqueueRequestsFromMapFunc(r.namespaceAndClusterPolicies),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&batchv1.CronJob{}, handler.EnqueueRequestsFromMapFunc(r.namespaceAndClusterPolicies),
			builder.WithPredicates(coverageChanged())).
		WithOptions(controller.Options{RecoverPanic: ptr(true)})
	if r.ClusterPolicies {
		b = b.Watches(&v1.ClusterCronJobPolicy{}, handler.EnqueueRequestsFromMapFunc(r.clusterPolicies),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.clusterPolicies),
				builder.WithPredicates(predicate.LabelChangedPredicate{}))
	}
	return b.Complete(r)
}

// coverageChanged passes the CronJob events that can change what covers
// it: creation, deletion, and its labels or annotations.
func coverageChanged() predicate.Predicate {
	return predicate.Or(predicate.LabelChangedPredicate{}, predicate.AnnotationChangedPredicate{},
		predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool { return false }})
}

// namespaceAndClusterPolicies are the policies of an object's namespace
// and the cluster's.
func (r *CronJobPolicyReconciler) namespaceAndClusterPolicies(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1.CronJobPolicyList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
		return nil
	}
	out := r.clusterPolicies(ctx, o)
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
	}
	return out
}

// clusterPolicies are every ClusterCronJobPolicy (none when they do not
// apply).
func (r *CronJobPolicyReconciler) clusterPolicies(ctx context.Context, _ client.Object) []reconcile.Request {
	if !r.ClusterPolicies {
		return nil
	}
	var list v1.ClusterCronJobPolicyList
	if err := r.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	}
	return out
}
