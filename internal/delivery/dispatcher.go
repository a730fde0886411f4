// Package delivery delivers the notifications flips owe, at least once,
// across manager restarts.
//
// The controller records each flip in the check's history together with one
// Pending delivery per channel assigned to the check: the outbox is part of
// the same write as the flip, so nothing owed is lost if the manager stops.
// The Dispatcher (leader only) finds histories with pending deliveries (a
// labelled list at start, then the controller's hand-over), sends through
// the channel, and records the outcome back into the history: Delivered,
// Pending with the next attempt after an exponential backoff, or Failed
// after the retry limit or an error retrying cannot fix. A delivery is
// recorded after it is sent, so a crash in between repeats it: at least
// once. Each channel has its own concurrency limit, and a busy channel makes
// its deliveries wait without holding a worker, so one slow endpoint cannot
// stall the others.
package delivery

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/history"
	"github.com/vigil-operator/vigil/internal/notify"
)

// Options tune delivery.
type Options struct {
	// MaxAttempts is the retry limit per delivery (default 10).
	MaxAttempts int
	// InitialBackoff and MaxBackoff bound the exponential backoff between
	// attempts (defaults 10 s and 1 h).
	InitialBackoff, MaxBackoff time.Duration
	// PerChannel is how many deliveries one channel may have in flight
	// (default 4).
	PerChannel int
	// Workers is how many checks are processed at once (default 8).
	Workers int
	// HTTP is the client senders use (default: 10 s timeout).
	HTTP *http.Client
}

func (o *Options) defaults() {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 10
	}
	if o.InitialBackoff <= 0 {
		o.InitialBackoff = 10 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Hour
	}
	if o.PerChannel <= 0 {
		o.PerChannel = 4
	}
	if o.Workers <= 0 {
		o.Workers = 8
	}
}

// Dispatcher delivers pending notifications. It is a leader-elected
// manager.Runnable and the controller's Notifier.
type Dispatcher struct {
	// Client reads checks and channels (cached) and writes channel status.
	Client client.Client
	// Reader reads Secrets and the pending histories, uncached.
	Reader client.Reader
	// History updates deliveries.
	History *history.Store
	// Clock tells the time.
	Clock clock.PassiveClock
	// Recorder emits DeliveryFailed Events on Channels.
	Recorder recorder.EventRecorder
	// Options tune retries and concurrency.
	Options Options

	once  sync.Once
	queue workqueue.TypedRateLimitingInterface[types.NamespacedName]
	mu    sync.Mutex
	busy  map[types.UID]chan struct{} // per-channel slots
}

func (d *Dispatcher) init() {
	d.once.Do(func() {
		d.Options.defaults()
		d.queue = workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName](),
			workqueue.TypedRateLimitingQueueConfig[types.NamespacedName]{Name: "vigil-delivery"})
		d.busy = map[types.UID]chan struct{}{}
	})
}

// NeedLeaderElection reports true: one replica delivers.
func (d *Dispatcher) NeedLeaderElection() bool { return true }

// Record is the controller's hand-over of a freshly recorded flip.
func (d *Dispatcher) Record(_ context.Context, check *v1.Check, _ v1.FlipRecord) {
	d.init()
	d.queue.Add(types.NamespacedName{Namespace: check.Namespace, Name: check.Name})
}

// Start finds what earlier runs left pending and delivers until ctx ends.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.init()
	logger := log.FromContext(ctx).WithName("delivery")
	ctx = log.IntoContext(ctx, logger)
	var pending v1.CheckHistoryList
	if err := d.Reader.List(ctx, &pending, client.HasLabels{history.PendingLabel}); err != nil {
		return fmt.Errorf("listing pending notifications: %w", err)
	}
	for _, h := range pending.Items {
		d.queue.Add(types.NamespacedName{Namespace: h.Namespace, Name: h.Name})
	}
	if len(pending.Items) > 0 {
		logger.Info("resuming pending notifications", "checks", len(pending.Items))
	}
	var wg sync.WaitGroup
	for i := 0; i < d.Options.Workers; i++ {
		wg.Go(func() {
			for d.processNext(ctx) {
			}
		})
	}
	<-ctx.Done()
	d.queue.ShutDownWithDrain()
	wg.Wait()
	return nil
}

func (d *Dispatcher) processNext(ctx context.Context) bool {
	key, shutdown := d.queue.Get()
	if shutdown {
		return false
	}
	defer d.queue.Done(key)
	next, err := d.process(ctx, key)
	switch {
	case err != nil:
		log.FromContext(ctx).Error(err, "delivering notifications", "check", key)
		d.queue.AddRateLimited(key)
	case next > 0:
		d.queue.Forget(key)
		d.queue.AddAfter(key, next)
	default:
		d.queue.Forget(key)
	}
	return true
}

// attempt is one delivery due now.
type attempt struct {
	flip    int // index in history.Flips
	channel string
	err     error
	skipped bool // the channel was busy: try again shortly, no attempt used
}

// process delivers what one check owes now and records the outcomes. It
// returns when to look again (0: nothing left pending).
func (d *Dispatcher) process(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	check := &v1.Check{}
	if err := d.Client.Get(ctx, key, check); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil // deleted: its history goes with it
		}
		return 0, err
	}
	h, err := d.History.Get(ctx, check)
	if err != nil {
		return 0, err
	}
	now := d.Clock.Now()
	due := dueAttempts(h, now)
	if len(due) == 0 {
		return nextDue(h, now), nil
	}

	var wg sync.WaitGroup
	for i := range due {
		wg.Go(func() { d.deliver(ctx, check, h, &due[i]) })
	}
	wg.Wait()

	// Starting from h saves reading the history again; if it changed
	// meanwhile (a new flip), the write conflicts and UpdateFrom reads.
	updated, err := d.History.UpdateFrom(ctx, check, h, func(fresh *v1.CheckHistory) error {
		for _, a := range due {
			d.recordOutcome(fresh, h.Flips[a.flip], a, now)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return nextDue(updated, d.Clock.Now()), nil
}

// dueAttempts lists the pending deliveries whose time has come, oldest flip
// first; a channel's newer flip waits while an older one is pending, so a
// channel hears "down" before "up".
func dueAttempts(h *v1.CheckHistory, now time.Time) []attempt {
	var due []attempt
	blocked := map[string]bool{}
	for i, f := range h.Flips {
		for _, dl := range f.Deliveries {
			if dl.State != v1.DeliveryPending || blocked[dl.Channel] {
				continue
			}
			blocked[dl.Channel] = true
			if dl.NextAttempt == nil || !dl.NextAttempt.After(now) {
				due = append(due, attempt{flip: i, channel: dl.Channel})
			}
		}
	}
	return due
}

// nextDue is how long until the earliest pending delivery is due.
func nextDue(h *v1.CheckHistory, now time.Time) time.Duration {
	var next time.Duration
	for _, f := range h.Flips {
		for _, dl := range f.Deliveries {
			if dl.State != v1.DeliveryPending {
				continue
			}
			wait := time.Second
			if dl.NextAttempt != nil && dl.NextAttempt.After(now) {
				wait = dl.NextAttempt.Sub(now)
			}
			if next == 0 || wait < next {
				next = wait
			}
		}
	}
	return next
}

// deliver sends one flip through one channel, unless the channel is busy.
func (d *Dispatcher) deliver(ctx context.Context, check *v1.Check, h *v1.CheckHistory, a *attempt) {
	ch := &v1.Channel{}
	if err := d.Client.Get(ctx, client.ObjectKey{Namespace: check.Namespace, Name: a.channel}, ch); err != nil {
		if apierrors.IsNotFound(err) {
			a.err = notify.Permanent(fmt.Errorf("channel %q no longer exists", a.channel))
		} else {
			a.err = err
		}
		return
	}
	slots := d.slots(ch.UID)
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
	default:
		a.skipped = true
		return
	}
	flip := h.Flips[a.flip]
	msg := notify.Message{Check: checkInfo(check, h), Up: flip.Up, Time: flip.Time.Time, Reason: flip.Reason}
	a.err = notify.Send(ctx, notify.Delivery{Channel: ch, Message: msg, Secret: notify.SecretsIn(d.Reader, ch.Namespace), HTTP: d.Options.HTTP})
	d.recordOnChannel(ctx, ch, check, flip.Up, a.err)
}

func (d *Dispatcher) slots(uid types.UID) chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.busy[uid]
	if !ok {
		s = make(chan struct{}, d.Options.PerChannel)
		d.busy[uid] = s
	}
	return s
}

// recordOutcome writes one attempt's outcome into a (fresh) history. The
// flip is found by its instant and direction, as others may have appended
// or trimmed flips meanwhile.
func (d *Dispatcher) recordOutcome(h *v1.CheckHistory, flip v1.FlipRecord, a attempt, now time.Time) {
	for i := range h.Flips {
		f := &h.Flips[i]
		if !f.Same(&flip.Flip) {
			continue
		}
		for j := range f.Deliveries {
			dl := &f.Deliveries[j]
			if dl.Channel != a.channel || dl.State != v1.DeliveryPending {
				continue
			}
			switch {
			case a.skipped:
				next := metav1.NewTime(now.Add(time.Second))
				dl.NextAttempt = &next
			case a.err == nil:
				dl.Attempts++
				dl.State, dl.NextAttempt, dl.LastError = v1.DeliveryDelivered, nil, ""
			default:
				dl.Attempts++
				dl.LastError = truncate(a.err.Error(), 512)
				if notify.IsPermanent(a.err) || int(dl.Attempts) >= d.Options.MaxAttempts {
					dl.State, dl.NextAttempt = v1.DeliveryFailed, nil
				} else {
					next := metav1.NewTime(now.Add(d.backoff(dl.Attempts, a.err)))
					dl.NextAttempt = &next
				}
			}
			return
		}
	}
}

// backoff is the wait before attempt n+1: exponential from the initial
// backoff, capped, and at least what a Retry-After asked for.
func (d *Dispatcher) backoff(attempts int32, err error) time.Duration {
	wait := d.Options.InitialBackoff
	for i := int32(1); i < attempts && wait < d.Options.MaxBackoff; i++ {
		wait *= 2
	}
	var se *notify.StatusError
	if errors.As(err, &se) && se.RetryAfter > wait {
		wait = se.RetryAfter
	}
	return min(wait, d.Options.MaxBackoff)
}

// recordOnChannel shows the attempt in the Channel's status (last delivery,
// last error) and records a failure as an Event on the Channel.
func (d *Dispatcher) recordOnChannel(ctx context.Context, ch *v1.Channel, check *v1.Check, up bool, sendErr error) {
	now := metav1.NewTime(d.Clock.Now())
	patched := ch.DeepCopy()
	patched.Status.LastDelivery = &v1.Delivery{Time: now, Check: check.Name, Up: up}
	if sendErr != nil {
		msg := truncate(sendErr.Error(), 512)
		patched.Status.LastDelivery.Error = msg
		patched.Status.LastError, patched.Status.LastErrorTime = msg, &now
		if d.Recorder != nil {
			d.Recorder.Eventf(ch, nil, corev1.EventTypeWarning, v1.ReasonDeliveryFailed, "Deliver",
				"Notifying about check %s failed: %s", check.Name, msg)
		}
	}
	if err := d.Client.Status().Patch(ctx, patched, client.MergeFrom(ch)); err != nil && !apierrors.IsNotFound(err) {
		log.FromContext(ctx).Error(err, "recording a delivery on the channel", "channel", client.ObjectKeyFromObject(ch))
	}
}

// checkInfo is what a notification says about the check.
func checkInfo(c *v1.Check, h *v1.CheckHistory) notify.CheckInfo {
	info := notify.CheckInfo{
		Namespace: c.Namespace, Object: c.Name, Name: c.Spec.Name, Slug: c.Spec.Slug,
		UUID: c.Status.UUID, Desc: c.Spec.Desc, Tags: strings.Fields(c.Spec.Tags),
		PingURL: c.Status.PingURL, Grace: time.Duration(c.Spec.Grace) * time.Second,
		NPings: c.Status.NPings, LastPingType: c.Status.LastPingType,
	}
	if info.Name == "" {
		info.Name = c.Name
	}
	if c.Spec.Schedule != nil {
		info.Schedule, info.TZ = *c.Spec.Schedule, string(c.Spec.TZ)
	} else if c.Spec.Timeout != nil {
		info.Timeout = time.Duration(*c.Spec.Timeout) * time.Second
	} else {
		info.Timeout = 24 * time.Hour
	}
	if c.Status.LastPing != nil {
		info.LastPing = c.Status.LastPing.Time
	}
	// The body of the last success or failure: what the job said.
	for i := len(h.Pings) - 1; i >= 0; i-- {
		p := h.Pings[i]
		if p.Type == v1.PingSuccess || p.Type == v1.PingFail {
			info.LastPingBody, info.ExitStatus = p.Body, p.ExitStatus
			break
		}
	}
	return info
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
