package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/dependency"
	"github.com/vigil-operator/vigil/internal/projection"
	"github.com/vigil-operator/vigil/internal/schedule"
	"github.com/vigil-operator/vigil/internal/store"
)

// CheckReconciler judges each Check's spec: it validates what the schema
// cannot, keeps the check's rows in the ping store in step with the object
// (created when it is first reconciled, its deadline moved when the spec
// changes, forgotten when it is deleted), publishes the ping URL where the
// spec asks, and hands its verdict to the projector, which writes status.
// Time is the deadline loop's business, not a requeue per check.
type CheckReconciler struct {
	client.Client
	// Checks parses specs and records what time did to checks.
	Checks *checks.Door
	// Store holds the checks' rows: their UUIDs' owners, and the rows of
	// deleted checks, which the reconciler forgets.
	Store     *store.Store
	Projector *projection.Projector
	// Clock tells the time; a fake clock in tests.
	Clock clock.PassiveClock
	// BaseURL builds the ping URL, such as "https://vigil.example.com".
	BaseURL string
	// SecretReader reads the Secrets checks publish their ping URL in,
	// uncached: the manager caches only project Secrets.
	SecretReader client.Reader
}

// duplicateRecheck is how often a check whose UUID another check owns looks
// again: deleting the other check does not trigger this one.
const duplicateRecheck = time.Minute

// bindingRecheck is how soon a check whose namespace does not let the
// manager write its ping-URL Secret tries again: the RoleBinding that
// allows it, often applied beside the check, cannot be watched.
const bindingRecheck = 10 * time.Second

// Reconcile judges one Check.
func (r *CheckReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	check := &v1.Check{}
	if err := r.Get(ctx, req.NamespacedName, check); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.forgetOthers(ctx, req.NamespacedName, "")
		}
		return ctrl.Result{}, err
	}
	uuid := checks.UUIDOf(check)
	verdict := projection.Verdict{Generation: check.Generation, UUID: uuid, Coverage: CoverageOf(check)}
	// The verdict goes to the projector whatever happens below.
	defer func() { r.Projector.SetVerdict(check, verdict) }()

	problem, err := r.validate(ctx, check)
	if err == nil && (problem == nil || !problem.stalled) {
		err = r.observe(ctx, check)
	}
	if err != nil {
		verdict.Retrying = err.Error()
		return ctrl.Result{}, err
	}
	if problem != nil && problem.stalled {
		verdict.Reason, verdict.Message, verdict.Stalled = problem.reason, problem.message, true
		if problem.recheck > 0 {
			return ctrl.Result{RequeueAfter: problem.recheck}, nil
		}
		// Only a new spec can fix it, and a new spec triggers a reconcile.
		return ctrl.Result{}, reconcile.TerminalError(errors.New(problem.message))
	}
	if err := r.publishPingURL(ctx, check, checks.PingURL(r.BaseURL, uuid), uuid); err != nil {
		publishProblem := pingURLSecretProblem(check, err)
		if publishProblem == nil {
			verdict.Retrying = err.Error()
			return ctrl.Result{}, err
		}
		if problem == nil {
			problem = publishProblem
		}
	}
	if problem != nil {
		verdict.Reason, verdict.Message = problem.reason, problem.message
		// Problems that another object's change fixes (a Channel or a
		// Secret appearing) are looked at again.
		return ctrl.Result{RequeueAfter: problem.recheck}, nil
	}
	return ctrl.Result{}, nil
}

// observe brings the check's rows in the ping store in step with the
// object: the rows of an earlier object of the same name go, the check's
// own appear if they are missing, and a changed spec moves its deadline
// (and records the down it may already have missed).
func (r *CheckReconciler) observe(ctx context.Context, check *v1.Check) error {
	if err := r.forgetOthers(ctx, client.ObjectKeyFromObject(check), check.UID); err != nil {
		return err
	}
	_, err := r.Checks.Observe(ctx, []*v1.Check{check}, r.Clock.Now())
	return err
}

// forgetOthers forgets the rows the store holds for the name that are not
// keep's: those of a deleted object, or of the object a re-created one
// replaced.
func (r *CheckReconciler) forgetOthers(ctx context.Context, key types.NamespacedName, keep types.UID) error {
	r.Projector.ForgetName(key, keep)
	uids, err := r.Store.Named(ctx, key.Namespace, key.Name)
	if err != nil {
		return err
	}
	var gone []types.UID
	for _, uid := range uids {
		if uid != keep {
			gone = append(gone, uid)
		}
	}
	return r.Store.Forget(ctx, gone...)
}

// specProblem is something wrong with a spec that the schema could not
// catch.
type specProblem struct {
	reason, message string
	// stalled problems stop monitoring; the others (an unknown channel)
	// only make the check not Ready.
	stalled bool
	recheck time.Duration
}

// validate checks what the CRD schema cannot: the schedule and time zone,
// a UUID another check already owns, and the channels the spec names.
func (r *CheckReconciler) validate(ctx context.Context, check *v1.Check) (*specProblem, error) {
	if _, err := r.Checks.Config(check); err != nil {
		reason := v1.ReasonInvalidSchedule
		if errors.Is(err, schedule.ErrInvalidTimezone) {
			reason = v1.ReasonInvalidTimeZone
		}
		return &specProblem{reason: reason, message: err.Error(), stalled: true}, nil
	}
	if problem, err := r.claimUUID(ctx, check); problem != nil || err != nil {
		return problem, err
	}
	missing, err := r.missingChannels(ctx, check)
	if err != nil {
		return nil, err
	}
	if len(missing) > 0 {
		return &specProblem{reason: v1.ReasonUnknownChannel,
			message: fmt.Sprintf("spec.channels names Channels that do not exist in namespace %s: %v; the check is monitored but they cannot be notified",
				check.Namespace, missing)}, nil
	}
	if check.Spec.DependsOn == nil {
		return nil, nil
	}
	// The namespace's checks as the cache has them now: the Door's
	// graph follows the same events on another goroutine, and may not
	// have seen the change that woke this reconcile yet.
	var list v1.CheckList
	if err := r.List(ctx, &list, client.InNamespace(check.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	all := make([]*v1.Check, len(list.Items))
	for i := range list.Items {
		all[i] = &list.Items[i]
	}
	return dependencyProblem(dependency.NewGraph(all).Of(check.Name)), nil
}

// dependencyRecheck is how often a check whose spec.dependsOn is refused
// looks again, besides when a check it names or selects changes (the
// watch on dependents): the change that fixes a cycle may be elsewhere.
const dependencyRecheck = time.Minute

// dependencyProblem is why the check's spec.dependsOn holds nothing, if
// it does not: the check is monitored, and notified as if it had none.
func dependencyProblem(res dependency.Resolved) *specProblem {
	switch {
	case res.Problem == nil:
		return nil
	case dependency.IsCycle(res.Problem):
		return &specProblem{reason: v1.ReasonDependencyCycle, recheck: dependencyRecheck,
			message: res.Problem.Error() + "; the check's dependencies hold nothing until the cycle is broken"}
	default:
		return &specProblem{reason: v1.ReasonTooManyDependencies, recheck: dependencyRecheck,
			message: res.Problem.Error() + "; the check's dependencies hold nothing"}
	}
}

// claimUUID makes sure the check's UUID is its own: no older check of its
// project names it, and the ping store records its project as the UUID's
// owner (claiming it when no project does). spec.uuid is the tenant's to
// write, so a check that names another project's UUID is refused, however
// old it is: the UUID stays its project's across a re-create there.
func (r *CheckReconciler) claimUUID(ctx context.Context, check *v1.Check) (*specProblem, error) {
	uuid := checks.UUIDOf(check)
	olderElsewhere := false
	for _, other := range r.Checks.WithUUID(uuid) {
		if other.UID == check.UID || !checks.Older(other, check) {
			continue
		}
		if other.Namespace == check.Namespace {
			return &specProblem{reason: v1.ReasonDuplicateUUID, stalled: true, recheck: duplicateRecheck,
				message: fmt.Sprintf("UUID %s is already used by check %s; give this check another spec.uuid", uuid, other.Name)}, nil
		}
		olderElsewhere = true
	}
	// An older check of another project that has not claimed the UUID yet
	// (a store that predates claims) keeps its turn: this one claims only
	// what no one else could.
	owner, err := r.Store.ClaimUUID(ctx, uuid, check.Namespace, check.UID, r.Clock.Now(), !olderElsewhere)
	if err != nil {
		return nil, err
	}
	if owner != check.Namespace {
		// The other project is not named: its namespace is none of this
		// one's business.
		return &specProblem{reason: v1.ReasonDuplicateUUID, stalled: true, recheck: duplicateRecheck,
			message: fmt.Sprintf("UUID %s belongs to another project; give this check another spec.uuid", uuid)}, nil
	}
	return nil, nil
}

func (r *CheckReconciler) missingChannels(ctx context.Context, check *v1.Check) ([]string, error) {
	var missing []string
	for _, name := range check.Spec.NamedChannels() {
		err := r.Get(ctx, client.ObjectKey{Namespace: check.Namespace, Name: name}, &v1.Channel{})
		if apierrors.IsNotFound(err) {
			missing = append(missing, name)
		} else if err != nil {
			return nil, err
		}
	}
	return missing, nil
}

// Keys of a published ping-URL Secret.
const (
	PingURLKey   = "PING_URL"
	CheckUUIDKey = "CHECK_UUID"
)

// publishPingURL keeps the Secret spec.pingURLSecret names in step with the
// check's ping URL. It only ever writes a Secret the check owns: one that
// exists and belongs to something else is left alone and reported.
func (r *CheckReconciler) publishPingURL(ctx context.Context, check *v1.Check, pingURL, uuid string) error {
	ref := check.Spec.PingURLSecret
	if ref == nil || r.SecretReader == nil {
		return nil
	}
	data := map[string][]byte{PingURLKey: []byte(pingURL), CheckUUIDKey: []byte(uuid)}
	secret := &corev1.Secret{}
	err := r.SecretReader.Get(ctx, client.ObjectKey{Namespace: check.Namespace, Name: ref.Name}, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: check.Namespace, Name: ref.Name}, Data: data}
		if err := controllerutil.SetControllerReference(check, secret, r.Scheme()); err != nil {
			return err
		}
		return r.Create(ctx, secret)
	case err != nil:
		return err
	case !metav1.IsControlledBy(secret, check):
		return &secretTakenError{name: ref.Name}
	case string(secret.Data[PingURLKey]) == string(data[PingURLKey]) && string(secret.Data[CheckUUIDKey]) == string(data[CheckUUIDKey]):
		return nil
	}
	secret.Data = data
	return r.Update(ctx, secret)
}

// pingURLSecretProblem says what a failed publishPingURL means for the
// check: a Secret that belongs to something else, or a namespace that has not
// let the manager write Secrets (internal/rbac/pingurlsecrets), are
// problems the user fixes; nil means an error to retry.
func pingURLSecretProblem(check *v1.Check, err error) *specProblem {
	var taken *secretTakenError
	switch {
	case errors.As(err, &taken):
		return &specProblem{reason: v1.ReasonPingURLSecretTaken, message: err.Error(), recheck: duplicateRecheck}
	case apierrors.IsForbidden(err):
		return &specProblem{reason: v1.ReasonPingURLSecretForbidden, recheck: bindingRecheck, message: fmt.Sprintf(
			"the ping URL is not published in Secret %q: %v; to allow it, bind the ClusterRole vigil-ping-url-secrets "+
				"to the manager's ServiceAccount with a RoleBinding in this namespace (docs/install.md)",
			check.Spec.PingURLSecret.Name, err)}
	}
	return nil
}

// secretTakenError: the Secret to publish the ping URL in belongs to
// something else.
type secretTakenError struct{ name string }

func (e *secretTakenError) Error() string {
	return fmt.Sprintf("secret %q exists and does not belong to this check: the ping URL is not published in it", e.name)
}
