package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checkindex"
	"github.com/vigil-operator/vigil/internal/checkstate"
	"github.com/vigil-operator/vigil/internal/history"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/schedule"
)

// Notifier is told about every flip the controller records. Delivery is its
// business; Record must return quickly.
type Notifier interface {
	Record(ctx context.Context, check *v1.Check, flip v1.FlipRecord)
}

// NopNotifier drops flips: for a manager without notifications.
type NopNotifier struct{}

// Record does nothing.
func (NopNotifier) Record(context.Context, *v1.Check, v1.FlipRecord) {}

// CheckReconciler keeps every Check's status true: it validates what the
// schema cannot, derives the monitoring state from the facts in status with
// the monitoring core, records flips in the check's history, and requeues
// itself for the next instant the state can change by time alone.
type CheckReconciler struct {
	client.Client
	// History records flips.
	History *history.Store
	// Clock tells the time; a fake clock in tests.
	Clock clock.PassiveClock
	// Recorder emits CheckDown and CheckUp Events.
	Recorder recorder.EventRecorder
	// Notifier is handed every recorded flip.
	Notifier Notifier
	// BaseURL builds status.pingURL, such as "https://vigil.example.com".
	BaseURL string
	// Metrics, when set, count states, flips and lateness.
	Metrics *Metrics
	// SecretReader reads the Secrets checks publish their ping URL in,
	// uncached: the manager caches only project Secrets.
	SecretReader client.Reader
}

// duplicateRecheck is how often a check whose UUID another check owns looks
// again: deleting the other check does not trigger this one.
const duplicateRecheck = time.Minute

// conflictRetry is how soon a reconcile whose status patch lost a race runs
// again: long enough for the cache to see the write that won.
const conflictRetry = 100 * time.Millisecond

// Reconcile brings one Check's status up to date.
func (r *CheckReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	check := &v1.Check{}
	if err := r.Get(ctx, req.NamespacedName, check); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := check.DeepCopy()
	now := r.Clock.Now()

	// One status patch at the end, whatever happened, touching only the
	// fields this reconciler changed. The optimistic lock makes every
	// decision rest on the facts it was computed from: if the ping path
	// wrote in between, the patch conflicts and the check is reconciled
	// again with the new facts.
	// A flip is announced (Event, metrics, notifier) only once the status
	// that shows it is stored: a reconcile working from a stale cache finds
	// the same flip again, but its patch conflicts and it stays silent. A
	// flip this reconcile added to history but could not show in status is
	// taken out of history again: the facts that won may not call for it.
	var flipped *v1.FlipRecord
	var appendedTo *v1.CheckHistory // the history written, when flipped is new there
	defer func() {
		if equality.Semantic.DeepEqual(before.Status, check.Status) {
			return
		}
		patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
		if err := r.Status().Patch(ctx, check, patch); err != nil {
			if apierrors.IsConflict(err) {
				result, retErr = ctrl.Result{RequeueAfter: conflictRetry}, nil
				if appendedTo != nil {
					if err := r.withdrawFlip(ctx, check, appendedTo, *flipped); err != nil {
						retErr = fmt.Errorf("withdrawing a flip whose status write lost: %w", err)
					}
				}
				return
			}
			retErr = errors.Join(retErr, fmt.Errorf("patching status: %w", err))
			return
		}
		if flipped != nil {
			r.announceFlip(ctx, check, *flipped, now)
		}
	}()

	r.setIdentity(check)
	cfg, problem, err := r.validate(ctx, check)
	if err != nil {
		r.markReconciling(check, err)
		return ctrl.Result{}, err
	}
	if problem != nil && problem.stalled {
		r.markStalled(check, problem)
		if problem.recheck > 0 {
			return ctrl.Result{RequeueAfter: problem.recheck}, nil
		}
		// Only a new spec can fix it, and a new spec triggers a reconcile.
		return ctrl.Result{}, reconcile.TerminalError(errors.New(problem.message))
	}

	if flipped, appendedTo, err = r.observe(ctx, check, cfg, now); err != nil {
		r.markReconciling(check, err)
		return ctrl.Result{}, err
	}
	if err := r.publishPingURL(ctx, check); err != nil {
		publishProblem := pingURLSecretProblem(check, err)
		if publishProblem == nil {
			r.markReconciling(check, err)
			return ctrl.Result{}, err
		}
		if problem == nil {
			problem = publishProblem
		}
	}
	r.markReady(check, problem)
	r.Metrics.observe(check)

	result = ctrl.Result{}
	if next, ok := cfg.NextChange(checkstate.Facts(&check.Status), now); ok {
		result.RequeueAfter = next.Sub(now)
	}
	// Problems that another object's change fixes (a Channel or a Secret
	// appearing) are looked at again.
	if problem != nil && problem.recheck > 0 && (result.RequeueAfter == 0 || problem.recheck < result.RequeueAfter) {
		result.RequeueAfter = problem.recheck
	}
	return result, nil
}

// setIdentity records the UUID and ping URL the check answers to.
func (r *CheckReconciler) setIdentity(check *v1.Check) {
	check.Status.UUID = checkindex.UUIDOf(check)
	check.Status.PingURL = r.BaseURL + "/ping/" + check.Status.UUID
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
func (r *CheckReconciler) validate(ctx context.Context, check *v1.Check) (monitor.Config, *specProblem, error) {
	cfg, err := checkstate.Config(&check.Spec)
	if err != nil {
		reason := v1.ReasonInvalidSchedule
		if errors.Is(err, schedule.ErrInvalidTimezone) {
			reason = v1.ReasonInvalidTimeZone
		}
		return cfg, &specProblem{reason: reason, message: err.Error(), stalled: true}, nil
	}
	owner, err := checkindex.DuplicateOf(ctx, r.Client, check)
	if err != nil {
		return cfg, nil, err
	}
	if owner != nil {
		return cfg, &specProblem{reason: v1.ReasonDuplicateUUID, stalled: true, recheck: duplicateRecheck,
			message: fmt.Sprintf("UUID %s is already used by check %s/%s; give this check another spec.uuid",
				checkindex.UUIDOf(check), owner.Namespace, owner.Name)}, nil
	}
	missing, err := r.missingChannels(ctx, check)
	if err != nil {
		return cfg, nil, err
	}
	if len(missing) > 0 {
		return cfg, &specProblem{reason: v1.ReasonUnknownChannel,
			message: fmt.Sprintf("spec.channels names Channels that do not exist in namespace %s: %v; the check is monitored but they cannot be notified",
				check.Namespace, missing)}, nil
	}
	return cfg, nil, nil
}

func (r *CheckReconciler) missingChannels(ctx context.Context, check *v1.Check) ([]string, error) {
	var missing []string
	for _, name := range check.Spec.Channels {
		if name == "*" {
			continue
		}
		err := r.Get(ctx, client.ObjectKey{Namespace: check.Namespace, Name: name}, &v1.Channel{})
		if apierrors.IsNotFound(err) {
			missing = append(missing, name)
		} else if err != nil {
			return nil, err
		}
	}
	return missing, nil
}

// observe derives the state at now and, on a flip, records it in history
// before the state reaches status: a crash in between repeats the same flip,
// which history recognises and keeps once. It returns the flip and, when
// this call appended it, the history it wrote.
//
// History is where a flip and the pings meet in one order. A ping is written
// there before its status, so a flip derived from a status that has not
// counted every ping in history would contradict them: the status catches
// up first, as the ping path's own catch-up does, and the state is derived
// again.
func (r *CheckReconciler) observe(ctx context.Context, check *v1.Check, cfg monitor.Config, now time.Time) (*v1.FlipRecord, *v1.CheckHistory, error) {
	var channels []string
	var listed bool
	var base *v1.CheckHistory // the history as last read, once caught up with
	for range maxCatchUps {
		facts, flip := cfg.Observe(checkstate.Facts(&check.Status), now)
		if flip == nil {
			r.setObserved(check, cfg, facts)
			return nil, nil, nil
		}
		record := v1.FlipRecord{
			Flip: checkstate.FlipOf(flip),
			From: v1.CheckState(flip.From),
			To:   v1.CheckState(flip.To),
		}
		// The notifications the flip owes go into the same write as the
		// flip: the outbox survives any restart.
		if !listed {
			var err error
			if channels, err = r.assignedChannels(ctx, check); err != nil {
				return nil, nil, err
			}
			listed = true
		}
		for _, name := range channels {
			record.Deliveries = append(record.Deliveries, v1.FlipDelivery{Channel: name, State: v1.DeliveryPending})
		}
		var appended bool
		var ahead *v1.CheckHistory
		written, err := r.History.UpdateFrom(ctx, check, base, func(h *v1.CheckHistory) error {
			appended, ahead = false, nil
			if h.LastN > check.Status.NPings {
				ahead = h
				return errPingsAhead
			}
			if n := len(h.Flips); n > 0 && h.Flips[n-1].Same(&record.Flip) {
				return nil // already recorded by an earlier attempt
			}
			h.Flips = append(h.Flips, record)
			appended = true
			return nil
		})
		if errors.Is(err, errPingsAhead) {
			checkstate.CatchUpStatus(cfg, &check.Status, ahead)
			base = ahead
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		check.Status.LastFlip = record.Flip.DeepCopy()
		r.setObserved(check, cfg, facts)
		if !appended {
			written = nil
		}
		return &record, written, nil
	}
	return nil, nil, fmt.Errorf("the ping log of %s/%s keeps running ahead of its status", check.Namespace, check.Name)
}

// maxCatchUps bounds how often one reconcile catches up with pings that
// arrive while it derives the state.
const maxCatchUps = 5

// errPingsAhead stops a flip's history write: the history holds pings the
// status it was derived from has not counted.
var errPingsAhead = errors.New("the history holds pings the status has not counted")

// setObserved stores the derived state and the next expected ping.
func (r *CheckReconciler) setObserved(check *v1.Check, cfg monitor.Config, facts monitor.Facts) {
	checkstate.SetObserved(&check.Status, facts)
	next, ok := cfg.NextPing(facts)
	checkstate.SetNextPing(&check.Status, next, ok)
}

// withdrawFlip removes from history a flip this reconcile appended and whose
// status write then lost to another writer's (a ping's): the next reconcile
// derives the state from the facts that won, and records the flip again if
// they still call for it. Left in place, it would be a flip the status never
// showed, and the dispatcher would still deliver its notifications. A flip
// any of whose notifications has been attempted stays.
func (r *CheckReconciler) withdrawFlip(ctx context.Context, check *v1.Check, written *v1.CheckHistory, f v1.FlipRecord) error {
	_, err := r.History.UpdateFrom(ctx, check, written, func(h *v1.CheckHistory) error {
		n := len(h.Flips)
		if n == 0 || !h.Flips[n-1].Same(&f.Flip) {
			return errKeepFlip
		}
		for _, d := range h.Flips[n-1].Deliveries {
			if d.State != v1.DeliveryPending || d.Attempts > 0 {
				return errKeepFlip
			}
		}
		h.Flips = h.Flips[:n-1]
		return nil
	})
	if errors.Is(err, errKeepFlip) {
		return nil
	}
	return err
}

// errKeepFlip ends a withdrawal that finds nothing to take back, before it
// writes.
var errKeepFlip = errors.New("the flip stays")

// assignedChannels are the existing Channels the check's spec assigns, by
// object name; "*" is every Channel in the namespace.
func (r *CheckReconciler) assignedChannels(ctx context.Context, check *v1.Check) ([]string, error) {
	if len(check.Spec.Channels) == 0 {
		return nil, nil
	}
	var list v1.ChannelList
	if err := r.List(ctx, &list, client.InNamespace(check.Namespace)); err != nil {
		return nil, err
	}
	var names []string
	for _, ch := range list.Items {
		if check.Spec.Assigns(ch.Name) {
			names = append(names, ch.Name)
		}
	}
	return sorted(names), nil
}

// announceFlip tells users about a stored flip: an Event, the flip metrics
// and the notifier, which delivers what the flip's history entry owes.
func (r *CheckReconciler) announceFlip(ctx context.Context, check *v1.Check, f v1.FlipRecord, now time.Time) {
	r.Notifier.Record(ctx, check, f)
	at := f.Time.UTC().Format(time.RFC3339)
	if f.Up {
		r.Metrics.flip(check.Namespace, true, 0)
		r.Recorder.Eventf(check, nil, corev1.EventTypeNormal, v1.ReasonCheckUp, "Monitor",
			"Check is up again: a ping arrived at %s", at)
		return
	}
	if f.Reason == string(monitor.ReasonFail) {
		r.Metrics.flip(check.Namespace, false, -1) // not a deadline: no lateness
		r.Recorder.Eventf(check, nil, corev1.EventTypeWarning, v1.ReasonCheckDown, "Monitor",
			"Check is down: a failure ping arrived at %s", at)
		return
	}
	r.Metrics.flip(check.Namespace, false, now.Sub(f.Time.Time))
	r.Recorder.Eventf(check, nil, corev1.EventTypeWarning, v1.ReasonCheckDown, "Monitor",
		"Check is down: no ping arrived by its deadline at %s", at)
}

// markReady records a successful reconcile: Ready (False only for an
// unknown channel), the Up condition, and the observed generation.
func (r *CheckReconciler) markReady(check *v1.Check, problem *specProblem) {
	gen := check.Generation
	ready := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonMonitoring,
		Message: "Vigil is monitoring this check", ObservedGeneration: gen}
	if problem != nil {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, problem.reason, problem.message
	}
	r.setCondition(check, ready)
	r.setCondition(check, upCondition(check, gen))
	meta.RemoveStatusCondition(&check.Status.Conditions, v1.ConditionReconciling)
	meta.RemoveStatusCondition(&check.Status.Conditions, v1.ConditionStalled)
	check.Status.ObservedGeneration = gen
}

// markStalled records a spec error retrying cannot fix. The generation is
// observed: Vigil looked at it and found it unusable, which is what kstatus
// and `kubectl wait` need to know to stop waiting.
func (r *CheckReconciler) markStalled(check *v1.Check, p *specProblem) {
	gen := check.Generation
	r.setCondition(check, metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: p.reason, Message: p.message, ObservedGeneration: gen})
	r.setCondition(check, metav1.Condition{Type: v1.ConditionStalled, Status: metav1.ConditionTrue,
		Reason: p.reason, Message: p.message, ObservedGeneration: gen})
	meta.RemoveStatusCondition(&check.Status.Conditions, v1.ConditionReconciling)
	meta.RemoveStatusCondition(&check.Status.Conditions, v1.ConditionUp)
	check.Status.NextPing = nil
	check.Status.ObservedGeneration = gen
}

// markReconciling records a transient failure; it will be retried.
func (r *CheckReconciler) markReconciling(check *v1.Check, err error) {
	r.setCondition(check, metav1.Condition{Type: v1.ConditionReconciling, Status: metav1.ConditionTrue,
		Reason: v1.ReasonProgressing, Message: "retrying: " + err.Error(), ObservedGeneration: check.Generation})
}

// setCondition sets a condition, emitting a Warning Event when Ready turns
// False: Events only on transitions.
func (r *CheckReconciler) setCondition(check *v1.Check, c metav1.Condition) {
	old := meta.FindStatusCondition(check.Status.Conditions, c.Type)
	c.LastTransitionTime = metav1.NewTime(r.Clock.Now())
	meta.SetStatusCondition(&check.Status.Conditions, c)
	if c.Type == v1.ConditionReady && c.Status == metav1.ConditionFalse &&
		(old == nil || old.Status != c.Status || old.Reason != c.Reason) {
		r.Recorder.Eventf(check, nil, corev1.EventTypeWarning, c.Reason, "Validate", "%s", c.Message)
	}
}

// upCondition is the monitoring result as a condition.
func upCondition(check *v1.Check, gen int64) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionUp, ObservedGeneration: gen}
	switch check.Status.State {
	case v1.CheckStateUp:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1.ReasonCheckUp, "The check is up"
	case v1.CheckStateGrace:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1.ReasonCheckGrace,
			"The next ping is due; the check is in its grace period"
	case v1.CheckStateDown:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1.ReasonCheckDown, "The check is down"
		if f := check.Status.LastFlip; f != nil && !f.Up {
			if f.Reason == string(monitor.ReasonFail) {
				c.Message = "The check is down: a failure ping arrived at " + f.Time.UTC().Format(time.RFC3339)
			} else {
				c.Message = "The check is down: no ping arrived by its deadline at " + f.Time.UTC().Format(time.RFC3339)
			}
		}
	case v1.CheckStatePaused:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1.ReasonCheckPaused, "Monitoring is paused"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1.ReasonCheckNew, "Waiting for the first ping"
	}
	return c
}

// Keys of a published ping-URL Secret.
const (
	PingURLKey   = "PING_URL"
	CheckUUIDKey = "CHECK_UUID"
)

// publishPingURL keeps the Secret spec.pingURLSecret names in step with the
// check's ping URL. It only ever writes a Secret the check owns: one that
// exists and belongs to something else is left alone and reported.
func (r *CheckReconciler) publishPingURL(ctx context.Context, check *v1.Check) error {
	ref := check.Spec.PingURLSecret
	if ref == nil || r.SecretReader == nil {
		return nil
	}
	data := map[string][]byte{PingURLKey: []byte(check.Status.PingURL), CheckUUIDKey: []byte(check.Status.UUID)}
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
		return &specProblem{reason: v1.ReasonPingURLSecretForbidden, recheck: duplicateRecheck, message: fmt.Sprintf(
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
