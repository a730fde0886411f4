// Package delivery delivers the notifications flips owe, at least once,
// across manager restarts.
//
// The ping store records each flip together with one pending delivery per
// channel assigned to the check, in the transaction that records the flip:
// the outbox. The Dispatcher (leader only) takes the deliveries that are due
// from the store, sends them through their channels, and records each
// outcome back: delivered, pending with the next attempt after an
// exponential backoff, or failed after the retry limit or an error retrying
// cannot fix. Each attempt is counted before it is sent and its outcome
// recorded after, so a crash in between sends it again, after the backoff:
// at least once, and no more often than the retry limit, even when it is
// the send that kills the process. A channel hears of a check's flips in
// order (down before the up that followed it).
//
// One namespace's Channels cannot delay another namespace's alerts. The
// workers are shared (package fairshare): a namespace has at most
// PerNamespace deliveries in flight and a channel at most PerChannel, and a
// free worker goes to the namespace with the fewest in flight, in turns.
// The store's answer takes namespaces in turns too, so that one
// namespace's backlog cannot fill it. The dispatch loop never waits for a
// worker: it starts what the free workers can take, and looks again when
// one finishes. Requests to an endpoint that keeps timing out are refused
// for a while (package breaker), so a black hole holds workers for a few
// timeouts, not for as long as its backlog lasts. Every send connects
// through the egress guard (package egress); an address it refuses is an
// ordinary failure, retried, recorded with the reason EgressDenied.
//
// The Channel's status shows the last delivery; it is written at most once
// per StatusInterval per channel, whatever the number of notifications (an
// etcd write per notification would be Vigil filling etcd during a wave of
// downs).
package delivery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/delivery/breaker"
	"github.com/vigil-operator/vigil/internal/delivery/fairshare"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/keylock"
	"github.com/vigil-operator/vigil/internal/metrics"
	"github.com/vigil-operator/vigil/internal/notify"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/words"
)

// Defaults for Options.
const (
	DefaultWorkers    = 32
	DefaultPerChannel = 4
)

// Options tune delivery.
type Options struct {
	// MaxAttempts is the retry limit per delivery (default 10).
	MaxAttempts int
	// InitialBackoff and MaxBackoff bound the exponential backoff between
	// attempts (defaults 10 s and 1 h).
	InitialBackoff, MaxBackoff time.Duration
	// RequestTimeout bounds each request of a delivery, of every kind: an
	// HTTP request, a whole SMTP session (default
	// notify.DefaultHTTPTimeout); connecting is bounded sooner, by the
	// egress guard. The dispatcher's context has no deadline, so this is
	// what a server that never answers holds a worker for, and what the
	// breaker counts.
	RequestTimeout time.Duration
	// Workers is how many deliveries are sent at once (default 32).
	Workers int
	// PerNamespace is how many deliveries of one namespace may be in
	// flight, its share of the Workers (default a quarter of them, at
	// least one): whatever one namespace's Channels do, the other workers
	// stay free for the others'.
	PerNamespace int
	// PerChannel is how many deliveries one channel may have in flight
	// (default 4, and at most half the namespace's share, at least one):
	// one slow channel leaves room for its namespace's others.
	PerChannel int
	// BreakerTimeouts is how many requests in a row to one endpoint (in
	// one namespace) must time out before the next are refused, for
	// BreakerCoolDown, after which one goes through as a probe (defaults 3
	// and 1 min).
	BreakerTimeouts int
	BreakerCoolDown time.Duration
	// Poll is how often the store is asked for due deliveries when nothing
	// wakes the dispatcher (default 1 s).
	Poll time.Duration
	// StatusInterval is how often a Channel's status may be written with
	// its last delivery (default 2 s).
	StatusInterval time.Duration
	// StormThreshold is how many checks whose downs (or ups) were queued
	// for one Channel within StormWindow make a storm, whose
	// notifications go together (storm.go; less than 2: never, the zero
	// Options' choice; the manager's --storm-threshold is
	// DefaultStormThreshold). StormWindow defaults to 1 min. StormGather
	// is how long the oldest of a storm's notifications waits for others
	// (default 10 s, at most StormWindow).
	StormThreshold           int
	StormWindow, StormGather time.Duration
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
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.PerNamespace <= 0 {
		o.PerNamespace = max(1, o.Workers/4)
	}
	if o.PerChannel <= 0 {
		o.PerChannel = max(1, min(DefaultPerChannel, o.PerNamespace/2))
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = 2 * time.Second
	}
	if o.StormWindow <= 0 {
		o.StormWindow = DefaultStormWindow
	}
	if o.StormGather <= 0 {
		o.StormGather = DefaultStormGather
	}
	o.StormGather = min(o.StormGather, o.StormWindow)
}

// Dispatcher delivers pending notifications. It is a leader-elected
// manager.Runnable.
type Dispatcher struct {
	// Client reads Checks and Channels from the informer cache and writes
	// Channel status.
	Client client.Client
	// Reader reads from the API server, uncached: a check or channel the
	// cache does not show (yet) is looked up there before its delivery is
	// given up for good. Nil trusts the cache.
	Reader client.Reader
	// Secrets reads the Secrets channels reference, uncached.
	Secrets client.Reader
	Store   *store.Store
	Clock   clock.WithTicker
	// Recorder emits DeliveryFailed and EgressDenied Events on Channels.
	Recorder recorder.EventRecorder
	// Egress is the guard every delivery connects through; nil means the
	// default policy, with no exceptions.
	Egress *egress.Guard
	// BaseURL builds the ping URL messages show.
	BaseURL string
	// Metrics count the attempts by the Channel's kind and outcome, and
	// time them; nil counts nothing.
	Metrics *metrics.Metrics
	Options Options

	once     sync.Once
	wake     chan struct{}
	breaker  *breaker.Breaker
	mu       sync.Mutex
	inflight map[deliveryKey]bool
	// finished holds deliveries whose outcome was committed while a query
	// for due deliveries may have been reading the store as it was before:
	// by the query's number (see dispatch), so a stale answer is not sent
	// again.
	finished map[deliveryKey]uint64
	queries  uint64         // queries for due deliveries started so far
	load     fairshare.Load // deliveries in flight, by namespace and channel
	// lastServed is the namespace whose delivery started last: the next
	// turn begins after it.
	lastServed string
	notes      map[store.ChannelRef]*noted // what each Channel's status is still to show
	// storms gives the storm decisions about each Channel's
	// notifications turns (storm.go).
	storms keylock.Locks
}

// noted is a channel's last delivery and error not yet written to its
// status.
type noted struct {
	delivery  *v1.Delivery
	lastError string
	errorTime *metav1.Time
}

type deliveryKey struct {
	check   types.UID
	flip    int64
	channel string
}

func (d *Dispatcher) init() {
	d.once.Do(func() {
		d.Options.defaults()
		d.wake = make(chan struct{}, 1)
		d.breaker = breaker.New(d.Clock, d.Options.BreakerTimeouts, d.Options.BreakerCoolDown)
		d.inflight = map[deliveryKey]bool{}
		d.finished = map[deliveryKey]uint64{}
		d.notes = map[store.ChannelRef]*noted{}
	})
}

// NeedLeaderElection reports true: one replica delivers.
func (d *Dispatcher) NeedLeaderElection() bool { return true }

// Wake makes the dispatcher look for due deliveries now (after a flip was
// committed).
func (d *Dispatcher) Wake() {
	d.init()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Start delivers until ctx ends; what earlier runs left pending is due at
// once.
func (d *Dispatcher) Start(ctx context.Context) error {
	d.init()
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithName("delivery"))
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { d.writeStatuses(ctx) })
	poll := d.Clock.NewTicker(d.Options.Poll)
	defer poll.Stop()
	for {
		if d.dispatch(ctx, &wg) {
			d.Wake()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.wake:
		case <-poll.C():
		}
	}
}

func (d *Dispatcher) limits() fairshare.Limits {
	return fairshare.Limits{PerNamespace: d.Options.PerNamespace, PerChannel: d.Options.PerChannel}
}

// dispatch starts the due deliveries the free workers can take, chosen
// fairly, without waiting for any. It reports whether to look again at
// once: when workers are still free and what was left waits only on
// namespaces or channels at their limit, which the next query leaves out.
func (d *Dispatcher) dispatch(ctx context.Context, wg *sync.WaitGroup) (again bool) {
	d.mu.Lock()
	d.queries++
	query := d.queries
	free, inFlight, after := d.Options.Workers-len(d.inflight), len(d.inflight), d.lastServed
	fullNamespaces, fullChannels := d.load.Full(d.limits())
	d.mu.Unlock()
	defer d.forget(query)
	if free <= 0 || d.Store.Health() != nil { // outcomes could not be recorded: send nothing
		return false
	}
	// Enough to choose from for the free workers, besides the deliveries
	// in flight (still pending in the store, so in the answer); each
	// namespace in the answer costs the store one small read.
	q := store.DueQuery{Limit: 4*free + inFlight, PerNamespace: d.Options.PerNamespace,
		BusyNamespaces: fullNamespaces, After: after}
	for _, ch := range fullChannels {
		q.BusyChannels = append(q.BusyChannels, store.ChannelRef{Namespace: ch.Namespace, Name: ch.Channel})
	}
	due, err := d.Store.DueDeliveries(ctx, d.Clock.Now(), q)
	if err != nil {
		if ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "finding due notifications")
		}
		return false
	}

	d.mu.Lock()
	defer d.mu.Unlock()
	// In flight, or finished while this query ran (its answer may predate
	// the outcome): not again.
	var candidates []store.Delivery
	var jobs []fairshare.Job
	for _, dl := range due {
		if key := keyOf(dl); !d.inflight[key] && d.finished[key] < query {
			candidates = append(candidates, dl)
			jobs = append(jobs, fairshare.Job{Namespace: dl.Namespace, Channel: dl.Channel})
		}
	}
	free = d.Options.Workers - len(d.inflight) // workers may have finished meanwhile
	picked := fairshare.Pick(jobs, free, &d.load, d.limits(), d.lastServed)
	for _, i := range picked {
		dl, job, key := candidates[i], jobs[i], keyOf(candidates[i])
		d.inflight[key] = true
		d.load.Add(job)
		d.lastServed = job.Namespace
		wg.Go(func() {
			d.deliver(ctx, dl)
			d.mu.Lock()
			delete(d.inflight, key)
			d.finished[key] = d.queries
			d.load.Done(job)
			d.mu.Unlock()
			d.Wake() // a worker is free; the next of the check's flips, or of the channel's, may go
		})
	}
	return len(picked) < free && len(picked) < len(candidates)
}

func keyOf(dl store.Delivery) deliveryKey {
	return deliveryKey{dl.CheckUID, dl.Flip.N, dl.Channel}
}

// forget drops the finished deliveries no query from this one on can have
// read as pending.
func (d *Dispatcher) forget(query uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, q := range d.finished {
		if q < query {
			delete(d.finished, k)
		}
	}
}

// Errors a delivery shows for an attempt that began and did not end: while
// it is sent (the dashboard's "retrying at"), after the process stopped or
// was killed while sending it, and once those used up the retry limit.
const (
	unfinished = "the attempt has not finished: it is being sent, or the manager stopped while sending it"
	neverEnded = "the last attempt did not finish: the manager stopped while sending it"
)

// deliver sends one notification and records the outcome.
//
// The attempt is recorded before the send: counted, and pending again
// after the backoff, should it never end. A notification whose sending
// kills the process (a template that expands past the memory limit, a
// library that crashes on a reply) is then given up after MaxAttempts
// restarts instead of being taken first by every one of them: a crash loop
// the retry limit stops.
func (d *Dispatcher) deliver(ctx context.Context, dl store.Delivery) {
	release := func() {}
	if d.stormControlled(ctx, dl) {
		unlock, err := d.storms.Lock(ctx, dl.Namespace+"/"+dl.Channel)
		if err != nil {
			return // stopping
		}
		var once sync.Once
		release = func() { once.Do(unlock) }
		defer release()
		alone, err := d.storm(ctx, dl, release)
		if err != nil && ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "deciding a notification in a storm", "check", dl.Namespace+"/"+dl.Name, "channel", dl.Channel)
		}
		if !alone {
			return
		}
	}
	now := d.Clock.Now()
	oc := store.Outcome{CheckUID: dl.CheckUID, FlipN: dl.Flip.N, Channel: dl.Channel}
	if dl.Attempts >= d.Options.MaxAttempts {
		// Every attempt began and the last one did not end.
		oc.State = store.DeliveryFailed
		oc.LastError = neverEnded
		d.record(ctx, dl, oc)
		return
	}
	attempts := dl.Attempts + 1
	begun := oc
	begun.State, begun.Attempted, begun.LastError = store.DeliveryPending, true, unfinished
	begun.NextAttempt = now.Add(d.backoff(attempts, nil, now))
	if err := d.Store.RecordOutcomes(ctx, []store.Outcome{begun}); err != nil {
		if ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "recording a delivery's attempt", "check", dl.Namespace+"/"+dl.Name, "channel", dl.Channel)
		}
		return // not sent: it is still due
	}
	release() // recorded as begun: no storm decision takes it now
	err := d.send(ctx, dl)
	now = d.Clock.Now()
	if err == nil {
		oc.State = store.DeliveryDelivered
	} else {
		// An attempt the breaker refused counts like the timeout it stands
		// for: the retries and the give-up come as they would have, only
		// without holding a worker for the timeout.
		oc.LastError = words.Clip(err.Error(), 512)
		if notify.IsPermanent(err) || attempts >= d.Options.MaxAttempts {
			oc.State = store.DeliveryFailed
		} else {
			oc.State, oc.NextAttempt = store.DeliveryPending, now.Add(d.backoff(attempts, err, now))
		}
	}
	d.record(ctx, dl, oc)
}

// record records a delivery's outcome, until the store takes it or ctx
// ends. The outcome is recorded before the delivery can be taken again: if
// the store refuses it (its database away), it is tried again, not the
// send.
// A group's outcomes (storm.go) are recorded together, dl their first.
func (d *Dispatcher) record(ctx context.Context, dl store.Delivery, oc ...store.Outcome) {
	for {
		err := d.Store.RecordOutcomes(ctx, oc)
		if err == nil || ctx.Err() != nil {
			return
		}
		log.FromContext(ctx).Error(err, "recording a delivery", "check", dl.Namespace+"/"+dl.Name, "channel", dl.Channel)
		select {
		case <-ctx.Done():
			return
		case <-d.Clock.After(time.Second):
		}
	}
}

func (d *Dispatcher) send(ctx context.Context, dl store.Delivery) error {
	check := &v1.Check{}
	key := types.NamespacedName{Namespace: dl.Namespace, Name: dl.Name}
	err := d.get(ctx, key, check, func() bool { return check.UID == dl.CheckUID })
	if apierrors.IsNotFound(err) || (err == nil && check.UID != dl.CheckUID) {
		return notify.Permanent(errors.New("the check no longer exists"))
	}
	if err != nil {
		return err
	}
	ch := &v1.Channel{}
	if err := d.get(ctx, types.NamespacedName{Namespace: dl.Namespace, Name: dl.Channel}, ch, nil); err != nil {
		if apierrors.IsNotFound(err) {
			return notify.Permanent(fmt.Errorf("channel %q no longer exists", dl.Channel))
		}
		return err
	}
	info, err := d.checkInfo(ctx, check)
	if err != nil {
		return err
	}
	msg := notify.Message{Check: info, Up: dl.Flip.Up, Time: dl.Flip.At, Reason: string(dl.Flip.Reason), Detail: dl.Flip.Detail,
		Notice: dl.Flip.Notice, Since: dl.Flip.Since, Held: dl.Flip.HeldBy(), Until: dl.Flip.HeldUntil,
		Flapped: dl.Flip.Held == store.HeldFlapping, HeldByParent: dl.Flip.HeldByParent()}
	sendErr := d.sendThrough(ctx, ch, msg)
	if ctx.Err() == nil { // a send cut short by the stop is no news for the Channel
		d.recordOnChannel(ch, check, dl.Flip.Up, sendErr)
	}
	return sendErr
}

// sendThrough sends a notification through the Channel, within its
// namespace's breaker, and counts the attempt by the Channel's kind.
func (d *Dispatcher) sendThrough(ctx context.Context, ch *v1.Channel, msg notify.Message) error {
	attempt := d.breaker.Attempt(ch.Namespace)
	began := time.Now()
	err := notify.Send(ctx, notify.Delivery{Channel: ch, Message: msg, Secret: notify.SecretsIn(d.Secrets, ch.Namespace),
		Egress: d.Egress, Gate: attempt.Gate, Timeout: d.Options.RequestTimeout})
	attempt.Done(err)
	if ctx.Err() == nil { // a send cut short by the stop says nothing of the service
		outcome := metrics.Delivered
		switch {
		case notify.IsPermanent(err):
			outcome = metrics.DeliveryRejected
		case err != nil:
			outcome = metrics.DeliveryError
		}
		d.Metrics.Delivery(string(ch.Spec.Kind), outcome, time.Since(began))
	}
	return err
}

// Test sends a test notification through the namespace's Channel name (each
// member of a group), as deliveries go: with the dispatcher's Secret
// reader, egress guard and request bound. check, when set, is the check the
// message names and links to. Unlike a delivery it is neither queued nor
// retried, and it leaves the Channel's status alone: the answer is the
// caller's.
func (d *Dispatcher) Test(ctx context.Context, namespace, name string, check *v1.Check) error {
	ch := &v1.Channel{}
	if err := d.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, ch); err != nil {
		return err
	}
	var info *notify.CheckInfo
	if check != nil {
		i, err := d.checkInfo(ctx, check)
		if err != nil {
			return err
		}
		info = &i
	}
	return notify.SendTest(ctx, d.Client, ch, info, notify.Delivery{Secret: notify.SecretsIn(d.Secrets, namespace),
		Egress: d.Egress, Timeout: d.Options.RequestTimeout})
}

// Report sends a project's report through an email Channel as deliveries
// go: with the dispatcher's Secret reader, egress guard and request bound.
// Its retries are the report scheduler's.
func (d *Dispatcher) Report(ctx context.Context, ch *v1.Channel, r notify.Report) error {
	return notify.Send(ctx, notify.Delivery{Channel: ch, Message: notify.Message{Report: &r},
		Secret: notify.SecretsIn(d.Secrets, ch.Namespace), Egress: d.Egress, Timeout: d.Options.RequestTimeout})
}

// get reads obj from the cache and, when the cache does not have it or
// has another one than wanted (want reports whether obj is the one), from
// the API server: a flip can be recorded before the cache has seen the
// check that flipped, or a Channel created with it, and a delivery given up
// as "no longer exists" is never tried again.
func (d *Dispatcher) get(ctx context.Context, key types.NamespacedName, obj client.Object, want func() bool) error {
	err := d.Client.Get(ctx, key, obj)
	if d.Reader == nil || (err == nil && (want == nil || want())) || (err != nil && !apierrors.IsNotFound(err)) {
		return err
	}
	return d.Reader.Get(ctx, key, obj)
}

// backoff is the wait before attempt n+1: exponential from the initial
// backoff, capped, and at least what a Retry-After asked for or until the
// breaker lets the endpoint be tried again.
func (d *Dispatcher) backoff(attempts int, err error, now time.Time) time.Duration {
	wait := d.Options.InitialBackoff
	for i := 1; i < attempts && wait < d.Options.MaxBackoff; i++ {
		wait *= 2
	}
	var se *notify.StatusError
	if errors.As(err, &se) && se.RetryAfter > wait {
		wait = se.RetryAfter
	}
	var open *breaker.OpenError
	if errors.As(err, &open) && open.Until.Sub(now) > wait {
		wait = open.Until.Sub(now)
	}
	return min(wait, d.Options.MaxBackoff)
}

// recordOnChannel notes the attempt for the Channel's status (last
// delivery, last error), which writeStatuses writes, and records a failure
// as an Event on the Channel (the event recorder bounds those): reason
// EgressDenied when the guard refused the address, DeliveryFailed
// otherwise.
func (d *Dispatcher) recordOnChannel(ch *v1.Channel, check *v1.Check, up bool, sendErr error) {
	now := metav1.NewTime(d.Clock.Now())
	last := &v1.Delivery{Time: now, Check: check.Name, Up: up}
	if sendErr != nil {
		last.Error = words.Clip(sendErr.Error(), 512)
		reason := v1.ReasonDeliveryFailed
		if egress.IsDenied(sendErr) {
			reason = v1.ReasonEgressDenied
		}
		if d.Recorder != nil {
			d.Recorder.Eventf(ch, nil, corev1.EventTypeWarning, reason, "Deliver",
				"Notifying about check %s failed: %s", check.Name, last.Error)
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ref := store.ChannelRef{Namespace: ch.Namespace, Name: ch.Name}
	n := d.notes[ref]
	if n == nil {
		n = &noted{}
		d.notes[ref] = n
	}
	n.delivery = last
	if sendErr != nil {
		n.lastError, n.errorTime = last.Error, &now
	}
}

// writeStatuses writes, every StatusInterval and once more when the
// dispatcher stops, the noted deliveries to their Channels' status: one
// write per channel, however many notifications it sent meanwhile.
func (d *Dispatcher) writeStatuses(ctx context.Context) {
	tick := d.Clock.NewTicker(d.Options.StatusInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			d.flushStatuses(flushCtx)
			cancel()
			return
		case <-tick.C():
			d.flushStatuses(ctx)
		}
	}
}

func (d *Dispatcher) flushStatuses(ctx context.Context) {
	d.mu.Lock()
	notes := d.notes
	d.notes = map[store.ChannelRef]*noted{}
	d.mu.Unlock()
	for ref, n := range notes {
		ch := &v1.Channel{}
		if err := d.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, ch); err != nil {
			continue // gone: nothing to show
		}
		patched := ch.DeepCopy()
		patched.Status.LastDelivery = n.delivery
		if n.errorTime != nil {
			patched.Status.LastError, patched.Status.LastErrorTime = n.lastError, n.errorTime
		}
		if err := d.Client.Status().Patch(ctx, patched, client.MergeFrom(ch)); err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "recording deliveries on the channel", "channel", ref.Namespace+"/"+ref.Name)
			d.mu.Lock()
			if _, newer := d.notes[ref]; !newer {
				d.notes[ref] = n // the next tick tries again
			}
			d.mu.Unlock()
		}
	}
}

// checkInfo is what a notification says about the check: its spec, and
// what the store observed.
func (d *Dispatcher) checkInfo(ctx context.Context, c *v1.Check) (notify.CheckInfo, error) {
	obs, _, err := d.Store.Check(ctx, c.UID)
	if err != nil {
		return notify.CheckInfo{}, err
	}
	body, exit, err := d.Store.LastResult(ctx, c.UID)
	if err != nil {
		return notify.CheckInfo{}, err
	}
	info := notify.CheckInfo{
		Namespace: c.Namespace, Object: c.Name, Name: c.Spec.Name, Slug: c.Spec.Slug,
		UUID: checks.UUIDOf(c), Desc: c.Spec.Desc, Tags: strings.Fields(c.Spec.Tags),
		PingURL: checks.PingURL(d.BaseURL, checks.UUIDOf(c)), Grace: time.Duration(c.Spec.Grace) * time.Second,
		NPings: obs.NPings, LastPing: obs.Facts.DisplayedLastPing(),
		LastPingBody: body, ExitStatus: exit,
	}
	if d.BaseURL != "" {
		// The check's dashboard page, which every kind links to.
		info.DetailsURL = d.BaseURL + "/checks/" + checks.UUIDOf(c)
	}
	if !info.LastPing.IsZero() {
		info.LastPingType = v1.PingSuccess
		if obs.Facts.LastPingFailed {
			info.LastPingType = v1.PingFail
		}
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
	return info, nil
}
