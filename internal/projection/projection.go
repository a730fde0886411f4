// Package projection writes each Check's status: the one door through which
// Vigil writes Check status. A status shows two things: the check
// controller's verdict on the spec (Ready, Stalled, Reconciling,
// observedGeneration, the ping URL), which the controller hands over, and a
// projection of the check's observed state, which lives in the ping store.
//
// etcd is the cluster's shared heart, so status writes are rationed, in two
// lanes with a budget each, cluster-wide. Changes that tools act on go
// first, within ChangeBudget a second: a new verdict (Ready, which kstatus
// and `kubectl wait` read), or a change of state into or out of down or
// paused, which Argo CD's health check and alerts on the Up condition act
// on. Everything else (a check's first ping, going into its grace period
// and out of it, which every run of a CronJob does, and the ping
// statistics: lastPing, nPings, nextPing) follows within
// Budget a second, so under load it lags the store; status.lastSyncTime
// says when it was taken from it. The Management API reads the store and
// is always exact. A wave of downs is an incident, rare and the moment a
// person looks: its lane is ten times the other's, so 10,000 checks going
// down show in `kubectl get checks` within a minute, while the steady
// lane keeps etcd's load from pings small.
//
// Namespaces take turns in each lane (package turns): a namespace with a
// thousand flapping checks delays another's state change by one write of
// its own, not a thousand.
//
// The writes go through a client of their own (Writer), whose rate limit
// is the two budgets: a wave of status writes neither waits for the
// manager's other requests to the API server nor holds them up.
//
// The projector runs in the leader only. It learns of store changes from
// the store's changes feed (written by any replica) and of verdicts from the
// controller.
package projection

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"golang.org/x/time/rate"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/metrics"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/turns"
)

// DefaultBudget is how many status writes a second the projector makes at
// most, by default, for what tools do not act on (ping statistics, grace).
const DefaultBudget = 20

// DefaultChangeBudget is how many status writes a second the projector
// makes at most, by default, for verdicts and changes of state.
const DefaultChangeBudget = 200

// Budgets returns the two lanes' budgets, the defaults for those not above
// zero: the projector's, and its client's rate limit (their sum).
func Budgets(stats, changes float64) (float64, float64) {
	if stats <= 0 {
		stats = DefaultBudget
	}
	if changes <= 0 {
		changes = DefaultChangeBudget
	}
	return stats, changes
}

// Verdict is the check controller's judgement of a check's spec.
type Verdict struct {
	// Generation is the spec's generation the verdict is about.
	Generation int64
	// UUID is what the check answers to (its ping URL is made from it:
	// every check holds a verdict, and the URL would be a second copy).
	UUID string
	// Reason and Message, when Reason is set, make Ready False: a problem
	// with the spec. Otherwise the check is Ready.
	Reason, Message string
	// Stalled means the check cannot be monitored until its spec changes.
	Stalled bool
	// Retrying, when set, is a transient error the controller retries:
	// Reconciling is True with it, and the generation is not yet observed.
	Retrying string
	// Coverage is what made the check for a CronJob, if anything did.
	Coverage *v1.Coverage
}

// Projector writes Check status.
type Projector struct {
	// Client reads Checks from the informer cache.
	Client client.Client
	// Writer patches Checks' status, and reads a Check from the API server
	// when the cache's copy was stale (a patch against it conflicted): a
	// client of its own, rate limited by the budgets (Client when nil).
	Writer client.Client
	Store  *store.Store
	// Checks parses the checks' specs (their next ping).
	Checks *checks.Door
	// BaseURL makes a check's ping URL from its UUID.
	BaseURL string
	Clock   clock.WithTicker
	// Budget bounds the writes per second of what tools do not act on
	// (DefaultBudget when 0), ChangeBudget those of verdicts and changes
	// of state (DefaultChangeBudget when 0).
	Budget, ChangeBudget float64
	// Interval is how often the store's changes are read (default 250 ms).
	Interval time.Duration
	// Recorder emits CheckDown and CheckUp Events, and a Warning when Ready
	// turns False.
	Recorder recorder.EventRecorder
	Metrics  *metrics.Metrics
	Log      logr.Logger

	mu       sync.Mutex
	verdicts map[types.UID]Verdict
	// slas are the SLAMet conditions the SLA watcher handed over (nil:
	// remove it).
	slas map[types.UID]*metav1.Condition
	// byName is the object each name had when its verdict was set.
	byName map[types.NamespacedName]types.UID
	dirty  map[types.UID]*entry
	// dirtyPeak is the most checks dirty has held since it was made: Go's
	// maps never shrink, so one that held a wave (every check's first
	// ping, a restart) is made anew once the wave is written.
	dirtyPeak int
	urgent    turns.Queue[types.UID] // in turns by namespace, each one's oldest first
	stats     turns.Queue[types.UID]
	// inflight are the checks a writer is writing: no other takes them
	// meanwhile (their next write waits, parked, until this one ends).
	inflight map[types.UID]bool
	// queued is closed when a check is queued, for the writers that found
	// none (then replaced).
	queued chan struct{}
	wake   chan struct{}
	once   sync.Once
	cursor store.Cursor // the last store change read
}

// emptiedMapPeak is the size past which an emptied map is made anew.
const emptiedMapPeak = 1024

// entry is a check whose status may be behind.
type entry struct {
	key    types.NamespacedName
	since  time.Time // when it first fell behind
	urgent bool
	// parked: taken from its lane while a writer was writing the check;
	// queued again when that write ends (done).
	parked bool
}

func (p *Projector) init() {
	p.once.Do(func() {
		p.verdicts = map[types.UID]Verdict{}
		p.slas = map[types.UID]*metav1.Condition{}
		p.byName = map[types.NamespacedName]types.UID{}
		p.dirty = map[types.UID]*entry{}
		p.inflight = map[types.UID]bool{}
		p.queued = make(chan struct{})
		p.wake = make(chan struct{}, 1)
		p.Budget, p.ChangeBudget = Budgets(p.Budget, p.ChangeBudget)
		if p.Writer == nil {
			p.Writer = p.Client
		}
		if p.Interval <= 0 {
			p.Interval = 250 * time.Millisecond
		}
	})
}

// NeedLeaderElection: the leader alone writes status.
func (p *Projector) NeedLeaderElection() bool { return true }

// SetVerdict hands over the controller's verdict on a check; its status
// shows it soon, ahead of ping statistics. A verdict the status already
// shows (every check's, when a manager starts or a new leader takes over)
// queues nothing: a restart compares before it marks anything urgent.
func (p *Projector) SetVerdict(c *v1.Check, v Verdict) {
	p.init()
	shown := c.Status.DeepCopy()
	p.applyVerdict(shown, v, p.Clock.Now())
	p.mu.Lock()
	key := client.ObjectKeyFromObject(c)
	if prev, ok := p.byName[key]; ok && prev != c.UID {
		delete(p.verdicts, prev) // a re-created object replaced it
	}
	p.byName[key] = c.UID
	old, had := p.verdicts[c.UID]
	p.verdicts[c.UID] = v
	changed := had && !equality.Semantic.DeepEqual(old, v)
	if changed || !equality.Semantic.DeepEqual(*shown, c.Status) {
		p.markLocked(c.UID, key, true)
	}
	p.mu.Unlock()
	p.Wake()
}

// SetSLA hands over a check's SLAMet condition from the SLA watcher (nil:
// the check has no SLA, the condition goes). While its status and reason
// stay, the condition shown stays as it is: the figures in its message
// move at every look, and etcd need not hear of each.
func (p *Projector) SetSLA(c *v1.Check, cond *metav1.Condition) {
	p.init()
	shown := meta.FindStatusCondition(c.Status.Conditions, v1.ConditionSLAMet)
	if cond != nil && shown != nil && shown.Status == cond.Status && shown.Reason == cond.Reason &&
		shown.ObservedGeneration == cond.ObservedGeneration {
		kept := *shown
		cond = &kept
	}
	p.mu.Lock()
	old, had := p.slas[c.UID]
	if had && equality.Semantic.DeepEqual(old, cond) {
		p.mu.Unlock()
		return
	}
	p.slas[c.UID] = cond
	p.markLocked(c.UID, client.ObjectKeyFromObject(c), false)
	p.mu.Unlock()
	p.Wake()
}

// Forget drops what the projector holds of a deleted check.
func (p *Projector) Forget(uid types.UID) {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.verdicts, uid)
	delete(p.slas, uid)
	delete(p.dirty, uid)
}

// ForgetName drops what the projector holds of the checks that had this
// name, except the object keep (when set).
func (p *Projector) ForgetName(key types.NamespacedName, keep types.UID) {
	p.init()
	p.mu.Lock()
	defer p.mu.Unlock()
	if uid, ok := p.byName[key]; ok && uid != keep {
		delete(p.verdicts, uid)
		delete(p.slas, uid)
		delete(p.dirty, uid)
		delete(p.byName, key)
	}
}

// Wake makes the projector read the store's changes now (after a commit).
func (p *Projector) Wake() {
	p.init()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// markLocked records that a check's status may be behind.
func (p *Projector) markLocked(uid types.UID, key types.NamespacedName, urgent bool) {
	e, ok := p.dirty[uid]
	if !ok {
		e = &entry{key: key, since: p.Clock.Now()}
		p.dirty[uid] = e
		p.dirtyPeak = max(p.dirtyPeak, len(p.dirty))
		e.urgent = urgent
		p.pushLocked(uid, e)
		return
	}
	e.key = key
	if urgent && !e.urgent {
		e.urgent = true
		p.pushLocked(uid, e) // its place in stats is skipped
	}
}

// pushLocked queues a check in its lane and wakes a writer.
func (p *Projector) pushLocked(uid types.UID, e *entry) {
	if e.urgent {
		p.urgent.Push(e.key.Namespace, uid)
	} else {
		p.stats.Push(e.key.Namespace, uid)
	}
	close(p.queued)
	p.queued = make(chan struct{})
}

// next takes the check to project next: urgent ones first, then, if
// stats, the others; in each lane, namespaces in turns and each one's
// oldest first. A check another writer is writing is parked until that
// write is done. With none to take, it returns a channel closed when one
// is queued.
func (p *Projector) next(stats bool) (types.UID, *entry, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	take := func(q *turns.Queue[types.UID], urgent bool) (types.UID, *entry) {
		for _, uid, ok := q.Pop(); ok; _, uid, ok = q.Pop() {
			e, ok := p.dirty[uid]
			switch {
			case !ok || e.urgent != urgent:
			case p.inflight[uid]:
				e.parked = true
			default:
				delete(p.dirty, uid)
				if len(p.dirty) == 0 && p.dirtyPeak > emptiedMapPeak {
					p.dirty, p.dirtyPeak = map[types.UID]*entry{}, 0
				}
				p.inflight[uid] = true
				return uid, e
			}
		}
		return "", nil
	}
	if uid, e := take(&p.urgent, true); e != nil {
		return uid, e, nil
	}
	if !stats {
		return "", nil, p.queued
	}
	if uid, e := take(&p.stats, false); e != nil {
		return uid, e, nil
	}
	return "", nil, p.queued
}

// done ends a writer's write of a check, and queues its next write if one
// was parked meanwhile.
func (p *Projector) done(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.inflight, uid)
	if e, ok := p.dirty[uid]; ok && e.parked {
		e.parked = false
		p.pushLocked(uid, e)
	}
}

// lag is how long the oldest check waiting has waited.
func (p *Projector) lag(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var oldest time.Time
	for _, e := range p.dirty {
		if oldest.IsZero() || e.since.Before(oldest) {
			oldest = e.since
		}
	}
	if oldest.IsZero() {
		return 0
	}
	return now.Sub(oldest)
}

// writers is how many status writes are in flight at most: a write is a
// round trip to the API server, which 10,000 downs in a minute cannot
// wait for one at a time (a write took 20 to 35 ms on a busy 2-core
// machine). The budgets, not the writers, bound the rate. One writer
// alone takes the other lane, after the urgent one: a writer waiting for
// that lane's budget (a write every 50 ms by default) holds no other
// writer's place, and its checks are written oldest first.
const writers = 8

// Start projects until ctx ends. The first read of the changes feed lists
// every check the store holds: a new leader compares every status with the
// store, and writes those that differ.
func (p *Projector) Start(ctx context.Context) error {
	p.init()
	limiters := budgets{
		changes: rate.NewLimiter(rate.Limit(p.ChangeBudget), max(1, int(p.ChangeBudget))),
		stats:   rate.NewLimiter(rate.Limit(p.Budget), max(1, int(p.Budget))),
	}
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() { p.write(ctx, limiters, i == 0) })
	}
	defer wg.Wait()
	ticker := p.Clock.NewTicker(p.Interval)
	defer ticker.Stop()
	var measured time.Time
	for {
		// Pings wake the projector at every commit: under their load it
		// reads the feed at most once every pullGap (real time, whatever
		// the clock: a test's fake one stands still), not once a commit.
		pulled := time.Now()
		p.pull(ctx)
		// The lag walks every check waiting: once an interval, however
		// many commits wake the projector.
		if now := p.Clock.Now(); now.Sub(measured) >= p.Interval {
			p.Metrics.SetStatusLag(p.lag(now))
			measured = now
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-ticker.C():
		}
		if wait := pullGap - time.Since(pulled); wait > 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(wait):
			}
		}
	}
}

// pullGap is the least time between two reads of the changes feed: a read
// per commit took a quarter of the ping path's time when pings came one
// after another (hack/bench/lateness's setup: 10,000 pings in 32 s, 9 s
// with reads at most every 250 ms).
const pullGap = 50 * time.Millisecond

// write is one writer: it projects the checks queued, urgent ones and, if
// stats, the others, one at a time, until ctx ends.
func (p *Projector) write(ctx context.Context, limiters budgets, stats bool) {
	for {
		uid, e, queued := p.next(stats)
		if e == nil {
			select {
			case <-ctx.Done():
				return
			case <-queued:
			}
			continue
		}
		err := p.project(ctx, uid, e, limiters.of(e))
		if err != nil && ctx.Err() == nil {
			p.failed(uid, e, err)
		}
		p.done(uid)
		if ctx.Err() != nil {
			return
		}
	}
}

// budgets are the two lanes' rate limits.
type budgets struct{ changes, stats *rate.Limiter }

func (b budgets) of(e *entry) *rate.Limiter {
	if e.urgent {
		return b.changes
	}
	return b.stats
}

// failed queues a check whose status write failed again. A conflict is
// another writer (a spec edit) getting there first, twice: the next pass
// writes against its version, and there is nothing for an operator to do,
// so only other errors are logged as errors.
func (p *Projector) failed(uid types.UID, e *entry, err error) {
	if apierrors.IsConflict(err) {
		p.Log.V(1).Info("a check changed while its status was written; trying again", "check", e.key)
	} else {
		p.Log.Error(err, "writing a check's status", "check", e.key)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.markLocked(uid, e.key, e.urgent)
}

// pull reads the store's changes since the last read.
func (p *Projector) pull(ctx context.Context) {
	for {
		changes, err := p.Store.Changes(ctx, p.cursor, 1000)
		if err != nil {
			p.Log.Error(err, "reading the ping store's changes")
			return
		}
		p.mu.Lock()
		for _, ch := range changes {
			key := types.NamespacedName{Namespace: ch.Namespace, Name: ch.Name}
			p.markLocked(ch.UID, key, p.healthDiffers(ctx, key, ch))
			p.cursor = ch.Cursor()
		}
		p.mu.Unlock()
		if len(changes) < 1000 {
			return
		}
	}
}

// healthDiffers reports whether the change's state, as tools act on it,
// is not what the check's status shows: such a change goes first. Argo
// CD's health check (internal/argocd) and alerts on the Up condition tell
// three apart: down (Degraded, Up False), paused (Suspended), and the
// rest (Healthy): a check's first ping, and going into its grace period
// and out of it, wait in the other lane.
func (p *Projector) healthDiffers(ctx context.Context, key types.NamespacedName, ch store.Change) bool {
	c := &v1.Check{}
	if err := p.Client.Get(ctx, key, c); err != nil || c.UID != ch.UID {
		return false
	}
	return health(stateOf(ch.State)) != health(c.Status.State)
}

// health is a state as tools act on it: new, up and grace are all up.
func health(s v1.CheckState) v1.CheckState {
	switch s {
	case v1.CheckStateDown, v1.CheckStatePaused:
		return s
	}
	return v1.CheckStateUp
}

func stateOf(s monitor.Status) v1.CheckState {
	if s == "" {
		return v1.CheckStateNew
	}
	return v1.CheckState(s)
}

// project writes one check's status, if it differs from what the store and
// the verdict say; only a write waits for the budget, so a new leader's
// first look at every check costs nothing where status is right.
//
// The check is read from the informer cache, which may not yet hold this
// projector's previous write. A merge patch computed against such a stale
// copy would omit every field the stale copy already agrees on (a
// lastDuration to clear, say) and leave the previous write's value in
// place, so the patch carries the resourceVersion it was computed from: a
// stale base is refused with a conflict, and the check is read once more
// from the API server itself and patched against that.
func (p *Projector) project(ctx context.Context, uid types.UID, e *entry, budget *rate.Limiter) error {
	err := p.projectFrom(ctx, p.Client, uid, e, budget)
	if apierrors.IsConflict(err) {
		err = p.projectFrom(ctx, p.Writer, uid, e, budget)
	}
	return err
}

func (p *Projector) projectFrom(ctx context.Context, r client.Reader, uid types.UID, e *entry, budget *rate.Limiter) error {
	c := &v1.Check{}
	if err := r.Get(ctx, e.key, c); err != nil {
		return client.IgnoreNotFound(err)
	}
	if c.UID != uid {
		return nil // re-created: the new object has an entry of its own
	}
	obs, _, err := p.Store.Check(ctx, uid)
	if err != nil {
		return err
	}
	p.mu.Lock()
	verdict, hasVerdict := p.verdicts[uid]
	sla, hasSLA := p.slas[uid]
	p.mu.Unlock()
	now := p.Clock.Now()
	updated := c.DeepCopy()
	st := &updated.Status
	gen := st.ObservedGeneration
	if hasVerdict {
		gen = p.applyVerdict(st, verdict, now)
	}
	if !hasVerdict || !verdict.Stalled {
		cfg, cfgErr := p.Checks.Config(c)
		applyObserved(st, obs, cfg, cfgErr == nil, gen, now)
	}
	switch {
	case hasSLA && sla == nil:
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionSLAMet)
	case hasSLA:
		setCondition(st, *sla, now)
	}
	st.LastSyncTime = c.Status.LastSyncTime
	if equality.Semantic.DeepEqual(c.Status, updated.Status) {
		return nil
	}
	if err := budget.Wait(ctx); err != nil {
		return err
	}
	t := metav1.NewTime(p.Clock.Now())
	st.LastSyncTime = &t
	patch := client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{})
	if err := p.Writer.Status().Patch(ctx, updated, patch); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	p.Metrics.StatusWrite(e.urgent)
	p.announce(c, updated)
	return nil
}

// applyVerdict writes the controller's verdict into st and returns the
// generation the conditions are about.
func (p *Projector) applyVerdict(st *v1.CheckStatus, v Verdict, now time.Time) int64 {
	st.UUID, st.PingURL, st.Coverage = v.UUID, "", v.Coverage
	if v.UUID != "" {
		st.PingURL = checks.PingURL(p.BaseURL, v.UUID)
	}
	gen := v.Generation
	if v.Retrying != "" {
		setCondition(st, metav1.Condition{Type: v1.ConditionReconciling, Status: metav1.ConditionTrue,
			Reason: v1.ReasonProgressing, Message: "retrying: " + v.Retrying, ObservedGeneration: gen}, now)
		return st.ObservedGeneration
	}
	meta.RemoveStatusCondition(&st.Conditions, v1.ConditionReconciling)
	ready := metav1.Condition{Type: v1.ConditionReady, Status: metav1.ConditionTrue, Reason: v1.ReasonMonitoring,
		Message: "Vigil is monitoring this check", ObservedGeneration: gen}
	if v.Reason != "" {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, v.Reason, v.Message
	}
	setCondition(st, ready, now)
	if v.Stalled {
		setCondition(st, metav1.Condition{Type: v1.ConditionStalled, Status: metav1.ConditionTrue,
			Reason: v.Reason, Message: v.Message, ObservedGeneration: gen}, now)
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionUp)
		st.NextPing = nil
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionStalled)
	}
	st.ObservedGeneration = gen
	return gen
}

// applyObserved writes what the store observed into st; the next ping is
// known only from a valid configuration.
func applyObserved(st *v1.CheckStatus, obs store.Check, cfg monitor.Config, valid bool, gen int64, now time.Time) {
	f := obs.Facts
	st.State = stateOf(f.State)
	st.StateSince = microPtr(f.StateSince)
	st.NPings = obs.NPings
	st.LastPing, st.LastPingType = nil, ""
	if last := f.DisplayedLastPing(); !last.IsZero() {
		st.LastPing = microPtr(last)
		st.LastPingType = v1.PingSuccess
		if f.LastPingFailed {
			st.LastPingType = v1.PingFail
		}
	}
	st.LastDuration = nil
	if f.LastDuration > 0 {
		st.LastDuration = &metav1.Duration{Duration: f.LastDuration}
	}
	st.Started = f.Started()
	st.NextPing = nil
	if valid {
		if next, ok := cfg.NextPing(f); ok {
			t := metav1.NewTime(next.Truncate(time.Second))
			st.NextPing = &t
		}
	}
	st.LastFlip = nil
	if fl := obs.LastFlip; fl != nil {
		st.LastFlip = &v1.Flip{Time: metav1.NewMicroTime(fl.At), Up: fl.Up, Reason: string(fl.Reason)}
	}
	var pc policyCounts
	if valid {
		pc.failures, pc.threshold = cfg.Failures(f, now)
		pc.streak, pc.need = cfg.Recovery(f)
		if cfg.Reprieved(f, now) {
			pc.back = f.Reprieve
		}
	}
	st.Failures, st.Successes = int32(pc.failures), int32(pc.streak)
	setCondition(st, upCondition(st, gen, obs.LastFlip, pc), now)
	if obs.Maintenance == "" {
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionMaintenance)
	} else {
		setCondition(st, metav1.Condition{Type: v1.ConditionMaintenance, Status: metav1.ConditionTrue,
			Reason: v1.ReasonWindowActive, ObservedGeneration: gen,
			Message: fmt.Sprintf("MaintenanceWindow %s holds the check's notifications until %s; pings and flips are still recorded",
				obs.Maintenance, obs.MaintenanceUntil.UTC().Format(time.RFC3339))}, now)
	}
	if d := obs.Dependency; d.Parent == "" {
		meta.RemoveStatusCondition(&st.Conditions, v1.ConditionHeld)
	} else {
		setCondition(st, metav1.Condition{Type: v1.ConditionHeld, Status: metav1.ConditionTrue,
			Reason: v1.ReasonDependencyDown, ObservedGeneration: gen,
			Message: fmt.Sprintf("depends on %s, which is down since %s: the check's notifications wait until it is back; pings and flips are still recorded",
				d.Parent, d.Since.UTC().Format(time.RFC3339))}, now)
	}
}

// policyCounts are where a check stands against its alert policy.
type policyCounts struct {
	failures, threshold int // failed runs in a row, and how many make it down
	streak, need        int // a down check's successes in a row, and how many bring it up
	// back is when Vigil came back from an absence, while the check has
	// the fresh grace that gave it (monitor.Config.Absent).
	back time.Time
}

// upCondition is the monitoring result as a condition: for a down check,
// its reason is why (the last flip's, or the recovery under way), and an
// up check's message counts the failures it has tolerated.
func upCondition(st *v1.CheckStatus, gen int64, flip *store.Flip, pc policyCounts) metav1.Condition {
	c := metav1.Condition{Type: v1.ConditionUp, ObservedGeneration: gen}
	tolerated := ""
	if pc.failures > 0 {
		tolerated = fmt.Sprintf("; %d of %d failures in a row (it goes down at %d)", pc.failures, pc.threshold, pc.threshold)
	}
	switch st.State {
	case v1.CheckStateUp:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1.ReasonCheckUp, "The check is up"+tolerated
	case v1.CheckStateGrace:
		c.Status, c.Reason, c.Message = metav1.ConditionTrue, v1.ReasonCheckGrace,
			"The next ping is due; the check is in its grace period"+tolerated
		if !pc.back.IsZero() {
			c.Message = "The next ping fell due while Vigil was away; the check has a fresh grace period from Vigil's return at " +
				pc.back.UTC().Format(time.RFC3339) + tolerated
		}
	case v1.CheckStateDown:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, v1.ReasonCheckDown, "The check is down"
		if pc.streak > 0 {
			c.Reason = v1.ReasonRecovering
			c.Message = fmt.Sprintf("The check is down: %d of %d successes in a row it needs to come back up", pc.streak, pc.need)
		} else if f := flip; f != nil && !f.Up {
			at := f.At.UTC().Format(time.RFC3339)
			switch f.Reason {
			case monitor.ReasonFail:
				c.Reason, c.Message = v1.ReasonPingFailed, "The check is down: a failure ping arrived at "+at
			case monitor.ReasonTimeout:
				c.Reason, c.Message = v1.ReasonDeadlineMissed, "The check is down: no ping arrived by its deadline at "+at
				if f.Detail != "" {
					c.Message += " (" + f.Detail + ")"
				}
			case monitor.ReasonRuntime:
				c.Reason, c.Message = v1.ReasonRanTooLong, "The check is down: a run "+f.Detail+", at "+at
			case monitor.ReasonShort:
				c.Reason, c.Message = v1.ReasonRanTooShort, "The check is down: a run "+f.Detail+", at "+at
			case monitor.ReasonAnomaly:
				c.Reason, c.Message = v1.ReasonRunAnomalous, "The check is down: a run "+f.Detail+", at "+at
			}
		}
	case v1.CheckStatePaused:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1.ReasonCheckPaused, "Monitoring is paused"
	default:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1.ReasonCheckNew, "Waiting for the first ping"
	}
	return c
}

// setCondition sets a condition; its transition time moves only when its
// status changes.
func setCondition(st *v1.CheckStatus, c metav1.Condition, now time.Time) {
	c.LastTransitionTime = metav1.NewTime(now)
	meta.SetStatusCondition(&st.Conditions, c)
}

// announce tells users about what the write shows for the first time: a
// flip (an Event, CheckDown or CheckUp), or Ready turning False (a Warning
// Event with the reason). Events are best effort: flips that follow each
// other faster than status is written may be announced once.
func (p *Projector) announce(before, after *v1.Check) {
	if p.Recorder == nil {
		return
	}
	if f := after.Status.LastFlip; f != nil && (before.Status.LastFlip == nil || !before.Status.LastFlip.Same(f)) {
		at := f.Time.UTC().Format(time.RFC3339)
		switch {
		case f.Up:
			p.Recorder.Eventf(after, nil, corev1.EventTypeNormal, v1.ReasonCheckUp, "Monitor", "Check is up again: a ping arrived at %s", at)
		default:
			// The Up condition says why, in the policy's words.
			msg := "Check is down since " + at
			if up := meta.FindStatusCondition(after.Status.Conditions, v1.ConditionUp); up != nil && up.Status == metav1.ConditionFalse {
				msg = strings.Replace(up.Message, "The check", "Check", 1)
			}
			p.Recorder.Eventf(after, nil, corev1.EventTypeWarning, v1.ReasonCheckDown, "Monitor", "%s", msg)
		}
	}
	sla := meta.FindStatusCondition(after.Status.Conditions, v1.ConditionSLAMet)
	wasSLA := meta.FindStatusCondition(before.Status.Conditions, v1.ConditionSLAMet)
	switch {
	case sla == nil || (wasSLA != nil && wasSLA.Status == sla.Status && wasSLA.Reason == sla.Reason):
	case sla.Status == metav1.ConditionFalse:
		p.Recorder.Eventf(after, nil, corev1.EventTypeWarning, sla.Reason, "JudgeSLA", "%s", sla.Message)
	case sla.Status == metav1.ConditionTrue && wasSLA != nil && wasSLA.Status == metav1.ConditionFalse:
		p.Recorder.Eventf(after, nil, corev1.EventTypeNormal, sla.Reason, "JudgeSLA", "%s", sla.Message)
	}
	ready := meta.FindStatusCondition(after.Status.Conditions, v1.ConditionReady)
	old := meta.FindStatusCondition(before.Status.Conditions, v1.ConditionReady)
	if ready != nil && ready.Status == metav1.ConditionFalse && (old == nil || old.Status != ready.Status || old.Reason != ready.Reason) {
		p.Recorder.Eventf(after, nil, corev1.EventTypeWarning, ready.Reason, "Validate", "%s", ready.Message)
	}
}

func microPtr(t time.Time) *metav1.MicroTime {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewMicroTime(t.UTC().Truncate(time.Microsecond))
	return &m
}
