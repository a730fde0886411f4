package project

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// Info is what the HTTP server needs to know about a project.
type Info struct {
	// Namespace is the project.
	Namespace string
	// PingKey opens slug ping URLs (/ping/<ping-key>/<slug>); may be empty.
	PingKey string
	// BadgeKey and SigningSecret build and verify badge URLs.
	BadgeKey      string
	SigningSecret string
}

// Registry indexes every project Secret the manager's cache holds, so that
// authenticating a request costs one hash and a map lookup however many
// projects exist. It follows Secret events and is current once the cache has
// synced and the registry has built what it holds (Ready).
//
// Project Secrets are tenant input, so what one namespace's Secrets cost is
// bounded: at most Limits.SecretLimit of them count (the oldest), and in
// them at most Limits.KeyLimit API keys (the first lines) and as many other
// lines plus a few; OnLimit hears of the rest, which open nothing. An event
// marks its namespace's part of the indexes stale, and only that part is
// built again, by the background loop (Watch): once for a burst of events,
// a moment after it, and no more often than once per minRebuild for a
// namespace whose Secrets keep changing. The loop builds a part without
// the registry's lock and only swaps it in under the lock, and lookups
// never build: they answer from the parts last built, so a tenant who
// edits a Secret in a loop costs other projects' lookups nothing but the
// swaps.
type Registry struct {
	// Limits bound what the registry reads of each namespace's Secrets;
	// nil gives the defaults. Set it before events arrive.
	Limits *Limits
	// Clock stamps what the registry records in the ping store (when a
	// key's hold starts): the manager's clock, which the pruning of passed
	// holds reads. nil is the real clock. The loop's own pace (settle,
	// minRebuild, retries) is wall time whatever Clock is: it bounds CPU
	// and store work, which a fake clock does not make cheaper.
	Clock clock.PassiveClock

	// OnConflict, when set, hears once of each key that a project Secret
	// holds and another project owns (see owner). It is called with the
	// registry locked: it must not call the registry.
	OnConflict func(secret *corev1.Secret, what string)
	// OnLimit, when set, hears once of each project Secret that the limits
	// cut, with a message that says what of it is ignored, the limit, and
	// who can raise it. It is called with the registry locked: it must not
	// call the registry.
	OnLimit func(secret *corev1.Secret, message string)

	mu      sync.RWMutex
	secrets map[string]map[string]*corev1.Secret // namespace -> name -> project Secret
	dirty   map[string]bool                      // namespaces whose part is out of date
	parts   map[string]*part                     // namespace -> what its Secrets hold

	// The indexes across namespaces, changed part by part. They hold what
	// every namespace's Secrets offer, owned or not: lookups keep what the
	// offering namespace owns.
	byLabel    map[string][]keyEntry // an API key's first 12 characters -> stored keys
	byPingKey  map[string][]string   // ping key -> the namespaces whose part names it
	byBadgeKey map[string][]string   // badge key -> the namespaces whose part names it
	offers     map[string][]claim    // key id -> the Secrets that hold it
	conflicts  map[string][]Conflict // key id -> its conflicts OnConflict has heard of

	// claims records in the ping store which project holds each key
	// (RecordClaims), so that ownership outlasts the Secrets: a project
	// that re-creates its Secret keeps its keys, and one that copied them
	// does not take them meanwhile. Without it, the oldest Secret decides.
	claims     KeyClaims
	claimed    map[string]string   // key id -> owner, as claims last answered
	synced     map[string][]string // namespace -> the ids last recorded in claims
	toSync     map[string]bool     // namespaces whose ids differ from synced
	heldSynced bool                // the store's holders without Secrets were synced (syncHolders)

	// building serializes builds (the loop's; tests'), and guards what
	// follows it.
	building  sync.Mutex
	lastBuilt map[string]time.Time // namespace -> when its part was last built (pace time)
	built     int                  // parts built, for tests
	// beforeBuild, when set (by tests), is called as each part's build
	// starts, without the registry's lock.
	beforeBuild func(namespace string)

	// cacheSynced tells whether the informer has delivered every Secret
	// it held at start (nil: no informer, every Secret is Upserted).
	cacheSynced func() bool
	ready       atomic.Bool
	readyCh     chan struct{}    // closed when ready is set
	pace        clock.WithTicker // times the loops: the real clock but in tests
	wake        chan struct{}    // wakes the build loop
	wakeRecord  chan struct{}    // wakes the record loop
	started     sync.Once
}

type keyEntry struct {
	namespace string
	access    Access
	key       StoredKey
	id        string // key.identity()
}

// NewRegistry returns an empty registry; call Watch to fill it.
func NewRegistry() *Registry {
	return &Registry{
		secrets: map[string]map[string]*corev1.Secret{}, dirty: map[string]bool{}, parts: map[string]*part{},
		byLabel: map[string][]keyEntry{}, byPingKey: map[string][]string{}, byBadgeKey: map[string][]string{},
		offers: map[string][]claim{}, conflicts: map[string][]Conflict{},
		claimed: map[string]string{}, synced: map[string][]string{}, toSync: map[string]bool{},
		lastBuilt: map[string]time.Time{}, pace: clock.RealClock{},
		wake: make(chan struct{}, 1), wakeRecord: make(chan struct{}, 1), readyCh: make(chan struct{}),
	}
}

// Watch feeds the registry from the cache's Secret informer (which the
// manager restricts to Secrets labelled as project Secrets), and runs its
// background loops until ctx ends.
func (r *Registry) Watch(ctx context.Context, c cache.Cache) error {
	inf, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("project registry: %w", err)
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.Upsert(asSecret(obj)) },
		UpdateFunc: func(_, obj any) { r.Upsert(asSecret(obj)) },
		DeleteFunc: func(obj any) { r.Remove(asSecret(obj)) },
	})
	if err != nil {
		return fmt.Errorf("project registry: %w", err)
	}
	r.mu.Lock()
	r.cacheSynced = reg.HasSynced
	r.mu.Unlock()
	go func() {
		// The loop builds what the informer delivered; once it has
		// delivered everything, one more round makes the registry Ready.
		if toolscache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
			r.signal()
		}
	}()
	r.start(ctx)
	return nil
}

func asSecret(obj any) *corev1.Secret {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	s, _ := obj.(*corev1.Secret)
	return s
}

// Ready reports whether the registry has built every project Secret the
// cache held when it synced: until then, lookups miss keys that exist. The
// manager's readiness waits for it.
func (r *Registry) Ready() bool { return r.ready.Load() }

// Built is closed once the registry is Ready.
func (r *Registry) Built() <-chan struct{} { return r.readyCh }

// Upsert indexes a project Secret (or forgets it, if it lost its label).
func (r *Registry) Upsert(s *corev1.Secret) {
	if s == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.Labels[SecretLabel] != "true" {
		r.forget(s)
		return
	}
	if r.secrets[s.Namespace] == nil {
		r.secrets[s.Namespace] = map[string]*corev1.Secret{}
	}
	r.secrets[s.Namespace][s.Name] = s
	r.markDirty(s.Namespace)
}

// Remove forgets a Secret.
func (r *Registry) Remove(s *corev1.Secret) {
	if s == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forget(s)
}

func (r *Registry) forget(s *corev1.Secret) {
	if _, ok := r.secrets[s.Namespace][s.Name]; !ok {
		return
	}
	delete(r.secrets[s.Namespace], s.Name)
	if len(r.secrets[s.Namespace]) == 0 {
		delete(r.secrets, s.Namespace)
	}
	r.markDirty(s.Namespace)
}

// Refresh reads the Secrets of namespaces again: their limits changed
// (Limits.OnChange).
func (r *Registry) Refresh(namespaces []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ns := range namespaces {
		if r.secrets[ns] != nil || r.parts[ns] != nil {
			r.markDirty(ns)
		}
	}
}

// markDirty marks a namespace's part out of date. Called with r.mu held.
func (r *Registry) markDirty(ns string) {
	r.dirty[ns] = true
	r.signal()
}

// signal wakes the build loop, if it runs.
func (r *Registry) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// signalRecord wakes the record loop, if it runs.
func (r *Registry) signalRecord() {
	select {
	case r.wakeRecord <- struct{}{}:
	default:
	}
}

// minRebuild is how often at most a namespace's part is built: a tenant
// who edits a Secret in a loop has it built four times a second, each
// build bounded by the namespace's limits. A new or removed key takes
// effect within it (after settle, for the first edit in a while).
const minRebuild = 250 * time.Millisecond

// rebuild builds the parts of the namespaces whose Secrets changed: all of
// them, or only those whose last build is minRebuild before now. It
// returns how long until the next of those it left is due (0: none left).
//
// A namespace's Secrets are copied (as pointers: the informer's objects
// are not changed in place) under the lock, its part is built without it,
// and swapped in under it: a lookup meanwhile answers from the part before.
// Builds take turns (building), so a part swapped in is always built from
// a later snapshot than the one it replaces; a namespace whose Secrets
// changed during its build is still dirty, and is built again.
func (r *Registry) rebuild(now time.Time, all bool) (next time.Duration) {
	r.building.Lock()
	defer r.building.Unlock()
	type job struct {
		ns      string
		secrets []*corev1.Secret
	}
	var jobs []job
	r.mu.Lock()
	limits := r.Limits
	for ns := range r.dirty {
		if last, ok := r.lastBuilt[ns]; ok && !all {
			if wait := last.Add(minRebuild).Sub(now); wait > 0 {
				if next == 0 || wait < next {
					next = wait
				}
				continue
			}
		}
		j := job{ns: ns, secrets: make([]*corev1.Secret, 0, len(r.secrets[ns]))}
		for _, s := range r.secrets[ns] {
			j.secrets = append(j.secrets, s)
		}
		jobs = append(jobs, j)
		delete(r.dirty, ns)
	}
	r.mu.Unlock()
	if len(jobs) == 0 {
		return next
	}
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].ns < jobs[j].ns })
	for _, j := range jobs {
		if r.beforeBuild != nil {
			r.beforeBuild(j.ns)
		}
		p := buildPart(j.ns, j.secrets, limits)
		r.built++
		r.lastBuilt[j.ns] = now
		r.mu.Lock()
		r.apply(j.ns, p)
		record := r.claims != nil && len(r.toSync) > 0
		r.mu.Unlock()
		if record {
			r.signalRecord()
		}
	}
	// A namespace built longer than minRebuild ago is due at once, as one
	// never built: forget it, so that the map holds the busy ones only.
	for ns, at := range r.lastBuilt {
		if now.Sub(at) >= minRebuild {
			delete(r.lastBuilt, ns)
		}
	}
	return next
}

// ReasonKeyConflict is the reason of the Event on a project Secret that
// holds a key another project's older Secret holds too.
const ReasonKeyConflict = "KeyConflict"

// Conflict is a key a project Secret holds that another project owns: it
// opens nothing here.
type Conflict struct {
	// Secret is the later Secret, as namespace/name.
	Secret types.NamespacedName
	// What names the key: "ping key", "badge key", or "API key hcw_1234abcd".
	What string
}

// Authenticate returns the project a presented API key opens and what it
// may do there. Candidate keys are compared in constant time.
func (r *Registry) Authenticate(presented string) (namespace string, access Access) {
	if len(presented) != KeyLength {
		return "", NoAccess
	}
	digest := sha256.Sum256([]byte(presented))
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, e := range r.byLabel[label(presented)] {
		var match int
		if e.key.Hashed {
			match = subtle.ConstantTimeCompare(e.key.value, digest[:])
		} else {
			match = subtle.ConstantTimeCompare(e.key.value, []byte(presented))
		}
		if match == 1 && e.access > access && r.owner(e.id) == e.namespace {
			namespace, access = e.namespace, e.access
		}
	}
	return namespace, access
}

// Project returns what the project Secrets of a namespace hold.
func (r *Registry) Project(namespace string) (Info, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.parts[namespace]
	if !ok {
		return Info{}, false
	}
	return r.owned(namespace, p), true
}

// ByPingKey returns the project whose ping key this is (case-sensitive, as
// the reference).
func (r *Registry) ByPingKey(pingKey string) (Info, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, ns := range r.byPingKey[pingKey] {
		if p := r.parts[ns]; r.owner(p.pingID) == ns {
			return r.owned(ns, p), true
		}
	}
	return Info{}, false
}

// ByBadgeKey returns the project whose badge key this is.
func (r *Registry) ByBadgeKey(badgeKey string) (Info, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, ns := range r.byBadgeKey[badgeKey] {
		if p := r.parts[ns]; r.owner(p.badgeID) == ns {
			return r.owned(ns, p), true
		}
	}
	return Info{}, false
}

// owned is a namespace's Info without the keys another project owns: no
// URL shows them.
func (r *Registry) owned(ns string, p *part) Info {
	info := p.info
	if info.PingKey != "" && r.owner(p.pingID) != ns {
		info.PingKey = ""
	}
	if info.BadgeKey != "" && r.owner(p.badgeID) != ns {
		info.BadgeKey = ""
	}
	return info
}

// keyID is a ping or badge key's identity: its SHA-256, so that the ping
// store, which records who holds it, does not hold the key itself.
func keyID(kind, key string) string {
	sum := sha256.Sum256([]byte(key))
	return kind + ":" + hex.EncodeToString(sum[:])
}
