package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/notify"
	"github.com/vigil-operator/vigil/internal/project"
)

// ChannelReconciler keeps each Channel's Ready condition true to whether the
// channel can deliver: its kind is known and every Secret key it references
// exists (and, when the manager requires it, is in a labelled Secret).
type ChannelReconciler struct {
	client.Client
	// SecretReader reads the Secrets channels reference. They are not in the
	// manager's cache, which holds only project Secrets, so this is an
	// uncached reader; notify.LabelledSecrets when Channels may use only
	// labelled Secrets.
	SecretReader client.Reader
	Recorder     recorder.EventRecorder
	// Recheck is how often a Channel is validated again, since Secret
	// changes do not trigger a reconcile; a channel that is not ready is
	// rechecked sooner.
	Recheck time.Duration
	// Limit is a namespace's limit of objects of a kind (project.Limits);
	// nil: project.DefaultObjectLimits'. A Channel past it is ignored: the
	// Door routes no check to it, by the same count (the oldest first).
	Limit func(namespace string, kind project.ObjectKind) int
}

// Reconcile validates one Channel and records the result in its status.
func (r *ChannelReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, err error) {
	ch := &v1.Channel{}
	if err := r.Get(ctx, req.NamespacedName, ch); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	status := beginStatus(r.Client, ch)
	defer func() { err = status.end(ctx, err) }()

	reason, message, err := r.validate(ctx, ch)
	if err != nil {
		return ctrl.Result{}, err // reading a Secret failed: retry with backoff
	}
	ready := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: reason,
		Message: message, ObservedGeneration: ch.Generation}
	if reason != v1.ReasonChannelReady {
		ready.Status = metav1.ConditionFalse
	}
	ch.Status.ObservedGeneration = ch.Generation
	if meta.SetStatusCondition(&ch.Status.Conditions, ready) && ready.Status == metav1.ConditionFalse && r.Recorder != nil {
		r.Recorder.Eventf(ch, nil, corev1.EventTypeWarning, reason, "Validate", "%s", message)
	}
	recheck := r.Recheck
	if recheck == 0 {
		recheck = 10 * time.Minute
	}
	if ready.Status == metav1.ConditionFalse {
		recheck = min(recheck, 30*time.Second)
	}
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// validate returns the Ready reason and message, or an error when a Secret
// could not be read for a reason other than its absence.
func (r *ChannelReconciler) validate(ctx context.Context, ch *v1.Channel) (reason, message string, err error) {
	limit := objectLimit(r.Limit, ch.Namespace, project.Channels)
	var list v1.ChannelList
	if err := r.List(ctx, &list, client.InNamespace(ch.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return "", "", err
	}
	if !project.Counts(list.Items, ch.Name, limit) {
		return v1.ReasonLimitExceeded, project.PastLimit(project.Channels, ch.Namespace, "Channels", limit) +
			"; no check is routed to it", nil
	}
	kind, ok := notify.Lookup(ch.Spec.Kind)
	if !ok {
		return v1.ReasonInvalidSpec, fmt.Sprintf("unknown channel kind %q", ch.Spec.Kind), nil
	}
	if ch.Spec.Kind == v1.ChannelGroup {
		return r.validateGroup(ctx, ch)
	}
	refs := kind.SecretRefs(&ch.Spec)
	secrets := map[string]*corev1.Secret{}
	for _, ref := range refs {
		s, seen := secrets[ref.Name]
		if !seen {
			s = &corev1.Secret{}
			err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: ch.Namespace, Name: ref.Name}, s)
			var notAllowed *notify.SecretNotAllowedError
			if errors.As(err, &notAllowed) {
				return v1.ReasonSecretNotAllowed, notAllowed.Error(), nil
			}
			if apierrors.IsNotFound(err) {
				s = nil
			} else if err != nil {
				return "", "", fmt.Errorf("reading Secret %s/%s: %w", ch.Namespace, ref.Name, err)
			}
			secrets[ref.Name] = s
		}
		if s == nil {
			return v1.ReasonSecretNotFound, fmt.Sprintf("Secret %q not found in namespace %s", ref.Name, ch.Namespace), nil
		}
		if len(s.Data[ref.Key]) == 0 {
			return v1.ReasonSecretKeyMissing, fmt.Sprintf("Secret %q has no key %q (or it is empty)", ref.Name, ref.Key), nil
		}
	}
	msg := fmt.Sprintf("%s channel is ready", ch.Spec.Kind)
	if len(secrets) > 0 {
		names := make([]string, 0, len(secrets))
		for n := range secrets {
			names = append(names, n)
		}
		msg += " (Secrets: " + strings.Join(sorted(names), ", ") + ")"
	}
	return v1.ReasonChannelReady, msg, nil
}

// validateGroup checks that each member of a group Channel exists in its
// namespace and is not a group: a member that is missing would silently
// receive nothing.
func (r *ChannelReconciler) validateGroup(ctx context.Context, ch *v1.Channel) (reason, message string, err error) {
	if ch.Spec.Group == nil {
		return v1.ReasonInvalidSpec, "the channel has no group settings", nil
	}
	for _, name := range ch.Spec.Group.Channels {
		member := &v1.Channel{}
		err := r.Get(ctx, client.ObjectKey{Namespace: ch.Namespace, Name: name}, member)
		switch {
		case apierrors.IsNotFound(err):
			return v1.ReasonMemberNotFound, fmt.Sprintf("member Channel %q not found in namespace %s", name, ch.Namespace), nil
		case err != nil:
			return "", "", fmt.Errorf("reading Channel %s/%s: %w", ch.Namespace, name, err)
		case member.Spec.Kind == v1.ChannelGroup:
			return v1.ReasonMemberIsGroup, fmt.Sprintf("member Channel %q is a group: groups are not followed further; list its members instead", name), nil
		}
	}
	return v1.ReasonChannelReady, "group channel is ready (members: " + strings.Join(ch.Spec.Group.Channels, ", ") + ")", nil
}

// SetupWithManager registers the reconciler. Only spec changes matter: the
// dispatcher patches a Channel's status on every delivery, and the
// reconciler looks at the Secrets again on its own schedule. A Channel that
// comes or goes (or changes) is also news to the groups that name it.
func (r *ChannelReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1.Channel{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&v1.Channel{}, handler.EnqueueRequestsFromMapFunc(r.groupsNaming),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Named("channel").
		Complete(r)
}

// groupsNaming are the group Channels of obj's namespace that list it.
func (r *ChannelReconciler) groupsNaming(ctx context.Context, obj client.Object) []reconcile.Request {
	var list v1.ChannelList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		g := &list.Items[i]
		if g.Spec.Group != nil && slices.Contains(g.Spec.Group.Channels, obj.GetName()) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(g)})
		}
	}
	return out
}
