// Package checks is the one door for what can be done to a check: find it
// (by UUID, slug, unique key or badge key), create, update and delete it
// (the Check object, through the API server), pause and resume it, record
// its pings and what time did to it (the ping store), and view it at an
// instant. The manager builds one Door; the Management API, the ping
// endpoints, the dashboard, the controllers and the deadline loop all go
// through it, so a rule they share (the check limit, the defaults of a new
// check, which Channels a flip notifies, what a spec means) is written once.
//
// A check's spec lives in the Kubernetes API and is read from the
// manager's informer cache; its observed state lives in the ping store.
// The Door keeps what it derives from a spec (the parsed schedule, the
// store's view of the check) once per spec generation, and the names of
// each namespace's Channels as the cache's events tell them, so the ping
// path does no parsing and no listing.
package checks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/keylock"
	"github.com/vigil-operator/vigil/internal/metrics"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/turns"
)

// Limits are a project's limits, as the administrator set them (package
// project).
type Limits interface {
	// CheckLimit bounds the checks a project may create through the API
	// and slug pings.
	CheckLimit(namespace string) int
	// PingLogLimit is how many pings each of a project's checks keeps.
	PingLogLimit(namespace string) int
	// BodyBytesLimit bounds the ping body bytes a project's checks keep
	// together.
	BodyBytesLimit(namespace string) int64
	// ObjectLimit is how many objects of the kind a namespace may hold.
	ObjectLimit(namespace string, kind project.ObjectKind) int
}

// Options are what a Door is built from.
type Options struct {
	// Cache is the manager's informer cache: the Door registers its
	// indexes and event handlers there, and reads checks from it.
	Cache cache.Cache
	// Client writes Check objects to the API server.
	Client client.Client
	// Live reads from the API server itself, when the cache may not have
	// caught up yet (after a write conflict, or another replica's create).
	Live client.Reader
	// Store holds what checks observed.
	Store *store.Store
	// Limits are per-project limits; nil means the defaults everywhere.
	Limits Limits
	// Clock tells the time; nil is the real clock.
	Clock clock.PassiveClock
	// Metrics count pings; nil counts nothing.
	Metrics *metrics.Metrics
	// CacheWait bounds how long a write waits for the cache to show it
	// (DefaultCacheWait when 0).
	CacheWait time.Duration
	// Log receives what an operator may need to know.
	Log logr.Logger
	// WriteShare is how writes share the Kubernetes client (share.go).
	WriteShare WriteShare
	// EarlyPings keeps the pings that come before the Door is ready, for
	// the checks the store knows, and records them once it is (early.go).
	EarlyPings bool
	// EarlyKind applies a check's rules (methods, keywords) to an early
	// ping, as the ping handler does; nil keeps the kind its URL said.
	EarlyKind func(c *v1.Check, p store.Ping) monitor.PingKind
}

// DefaultCacheWait bounds a write's wait for the cache: after it the answer
// goes out anyway.
const DefaultCacheWait = 5 * time.Second

// Door is the one door for what can be done to a check.
type Door struct {
	cache   client.Reader
	client  client.Client
	live    client.Reader
	store   *store.Store
	limits  Limits
	clock   clock.PassiveClock
	metrics *metrics.Metrics
	wait    time.Duration
	log     logr.Logger

	index    index
	specs    specs
	projects projects
	channels channelIndex
	windows  windowIndex
	// dependencies are each namespace's spec.dependsOn, resolved.
	dependencies dependencyIndex
	watch        *watcher
	pending      pending
	// writes gives this manager's writes to one check turns (write.go).
	writes keylock.Locks
	// writeShare gives namespaces turns for the Kubernetes client (share.go).
	writeShare turns.Gate
	early      early
	// synced report whether the handlers have seen what the cache held
	// when it synced; indexed is closed once they all have, and ready once
	// the early pings are recorded too (early.go).
	synced  []toolscache.InformerSynced
	indexed chan struct{}
	ready   chan struct{}
}

// New builds the Door: it registers the check indexes on the cache and
// listens to its Check and Channel informers. Call it before the cache
// starts.
func New(ctx context.Context, opts Options) (*Door, error) {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.CacheWait <= 0 {
		opts.CacheWait = DefaultCacheWait
	}
	d := &Door{
		cache: opts.Cache, client: opts.Client, live: opts.Live, store: opts.Store, limits: opts.Limits,
		clock: opts.Clock, metrics: opts.Metrics, wait: opts.CacheWait, log: opts.Log,
		watch: newWatcher(), indexed: make(chan struct{}), ready: make(chan struct{}),
		early: early{on: opts.EarlyPings, kind: opts.EarlyKind},
	}
	d.writeShare.Slots, d.writeShare.MaxWaiting = opts.WriteShare.Slots, opts.WriteShare.Waiting
	if d.writeShare.Slots <= 0 {
		d.writeShare.Slots = DefaultWriteSlots
	}
	if d.writeShare.MaxWaiting <= 0 {
		d.writeShare.MaxWaiting = DefaultWritesWaiting
	}
	d.channels.limit = func(namespace string) int { return d.ObjectLimit(namespace, project.Channels) }
	if err := setupIndexes(ctx, opts.Cache); err != nil {
		return nil, err
	}
	if err := d.listen(ctx, opts.Cache); err != nil {
		return nil, err
	}
	go func() {
		if d.WaitForSync(ctx) {
			close(d.indexed)
			d.recordEarly(ctx)
			close(d.ready)
		}
	}()
	return d, nil
}

// await holds a read of the Door's indexes until they hold what the cache
// held when it synced. The HTTP server waits for that before it serves
// (Ready); the controllers and the leader's loops, which start once the
// cache has synced, wait here the moment the handlers may still lag behind
// it.
func (d *Door) await() {
	if d.indexed != nil {
		<-d.indexed
	}
}

// awaitReady holds a write of observed state until the early pings are
// recorded: a check's pings are recorded in the order they came, and the
// deadline loop judges no check before the pings that came for it.
func (d *Door) awaitReady() {
	if d.ready != nil {
		<-d.ready
	}
}

// Ready is closed once the Door holds what the cache held when it synced
// and the pings that came before are recorded: the HTTP server serves
// everything but early pings after it.
func (d *Door) Ready() <-chan struct{} { return d.ready }

// listen follows the cache's Checks, Channels and MaintenanceWindows. An informer calls its
// handlers after its store has the object, so what a handler records is
// never ahead of what a read from the cache returns.
func (d *Door) listen(ctx context.Context, informers cache.Informers) error {
	for _, h := range []struct {
		obj   client.Object
		event func(obj any, present bool)
	}{{&v1.Check{}, d.checkEvent}, {&v1.Channel{}, d.channelEvent}, {&v1.MaintenanceWindow{}, d.windowEvent}} {
		inf, err := informers.GetInformer(ctx, h.obj)
		if err != nil {
			return fmt.Errorf("watching %T: %w", h.obj, err)
		}
		reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { h.event(obj, true) },
			UpdateFunc: func(_, obj any) { h.event(obj, true) },
			DeleteFunc: func(obj any) { h.event(obj, false) },
		})
		if err != nil {
			return fmt.Errorf("watching %T: %w", h.obj, err)
		}
		d.synced = append(d.synced, reg.HasSynced)
	}
	return nil
}

// WaitForSync waits until the Door has seen every check and channel the
// cache held when it synced: before, a lookup would miss them. It reports
// false when ctx ends first.
func (d *Door) WaitForSync(ctx context.Context) bool {
	return toolscache.WaitForCacheSync(ctx.Done(), d.synced...)
}

func (d *Door) checkEvent(obj any, present bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	c, ok := obj.(*v1.Check)
	if !ok {
		return
	}
	// The index first: a writer the watcher wakes finds its check there.
	if present {
		old := d.index.get(c.UID)
		d.index.set(c)
		d.dependencies.changed(c.Namespace, old, c)
	} else {
		d.dependencies.changed(c.Namespace, nil, nil)
		d.index.remove(c)
		d.specs.forget(c.UID)
		d.projects.forget(c.Namespace)
	}
	d.pending.seen(c)
	d.watch.observe(c, present)
}

func (d *Door) channelEvent(obj any, present bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if ch, ok := obj.(*v1.Channel); ok {
		d.channels.update(ch, present)
	}
}

// Now is the Door's clock's time.
func (d *Door) Now() time.Time { return d.clock.Now() }

// PingLogLimit is how many pings a project's checks keep and list:
// the project's limit, within 1..1000 (100 without limits).
func (d *Door) PingLogLimit(namespace string) int {
	limit := DefaultPingLogLimit
	if d.limits != nil {
		limit = d.limits.PingLogLimit(namespace)
	}
	return min(max(limit, 1), MaxPingLogLimit)
}

// BodyBytesLimit is the ping body bytes a project's checks keep together.
func (d *Door) BodyBytesLimit(namespace string) int64 {
	if d.limits == nil {
		return project.DefaultBodyBytesLimit
	}
	return d.limits.BodyBytesLimit(namespace)
}

// The ping log's bounds: the reference's default and its largest plan's.
const (
	DefaultPingLogLimit = 100
	MaxPingLogLimit     = 1000
)

// ObjectLimit is the namespace's limit of objects of the kind.
func (d *Door) ObjectLimit(namespace string, kind project.ObjectKind) int {
	if d.limits == nil {
		return project.DefaultObjectLimits[kind]
	}
	return d.limits.ObjectLimit(namespace, kind)
}

// checkLimit is the project's check limit (20 without limits, as the
// reference's free plan).
func (d *Door) checkLimit(namespace string) int {
	if d.limits == nil {
		return DefaultCheckLimit
	}
	return d.limits.CheckLimit(namespace)
}

// DefaultCheckLimit is a project's check limit when the administrator set
// none: the contract's free plan.
const DefaultCheckLimit = 20

// Unavailable reports whether err says the ping store's database does not
// answer: callers answer 503 with a longer Retry-After than for a busy
// server.
func (d *Door) Unavailable(err error) bool { return d.store.Unavailable(err) }

// ErrNotFound is returned when no check matches.
var ErrNotFound = errors.New("check not found")
