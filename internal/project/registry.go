package project

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
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
// synced.
//
// Project Secrets are tenant input, so what one namespace's Secrets cost is
// bounded: at most Limits.SecretLimit of them count (the oldest), and in
// them at most Limits.KeyLimit API keys (the first lines); OnLimit hears of
// the rest, which open nothing. An event marks its namespace's part of the
// indexes stale, and only that part is built again, once for a burst of
// events: by the next lookup, or by the background loop (Watch) a moment
// after the burst.
type Registry struct {
	// Limits bound what the registry reads of each namespace's Secrets;
	// nil gives the defaults. Set it before events arrive.
	Limits *Limits

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
	stale   atomic.Bool                          // dirty is not empty
	parts   map[string]*part                     // namespace -> what its Secrets hold
	built   int                                  // parts built, for tests

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
	claims  KeyClaims
	claimed map[string]string   // key id -> owner, as claims last answered
	synced  map[string][]string // namespace -> the ids last recorded in claims
	toSync  map[string]bool     // namespaces whose ids differ from synced
	wake    chan struct{}       // wakes the background loop
	started sync.Once
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
		wake: make(chan struct{}, 1),
	}
}

// Watch feeds the registry from the cache's Secret informer (which the
// manager restricts to Secrets labelled as project Secrets), and runs its
// background loop until ctx ends.
func (r *Registry) Watch(ctx context.Context, c cache.Cache) error {
	inf, err := c.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("project registry: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.Upsert(asSecret(obj)) },
		UpdateFunc: func(_, obj any) { r.Upsert(asSecret(obj)) },
		DeleteFunc: func(obj any) { r.Remove(asSecret(obj)) },
	})
	if err != nil {
		return fmt.Errorf("project registry: %w", err)
	}
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
	r.stale.Store(true)
	r.signal()
}

// signal wakes the background loop, if it runs.
func (r *Registry) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// flush builds the parts of the namespaces whose Secrets changed. Called
// with r.mu held.
func (r *Registry) flush() {
	if len(r.dirty) == 0 {
		return
	}
	for ns := range r.dirty {
		r.apply(ns, r.build(ns))
	}
	r.dirty = map[string]bool{}
	r.stale.Store(false)
	if len(r.toSync) > 0 {
		r.signal()
	}
}

// read brings the indexes up to date and read-locks them; call the
// function it returns to unlock.
func (r *Registry) read() (unlock func()) {
	if r.stale.Load() {
		r.mu.Lock()
		r.flush()
		r.mu.Unlock()
	}
	r.mu.RLock()
	return r.mu.RUnlock
}

// ReasonKeyConflict is the reason of the Event on a project Secret that
// holds a key another project's older Secret holds too.
const ReasonKeyConflict = "KeyConflict"

// ReasonLimitExceeded is the reason of the Event on a project Secret that
// the limits cut (some or all of its keys open nothing).
const ReasonLimitExceeded = "LimitExceeded"

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
	defer r.read()()
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
	defer r.read()()
	p, ok := r.parts[namespace]
	if !ok {
		return Info{}, false
	}
	return r.owned(namespace, p), true
}

// ByPingKey returns the project whose ping key this is (case-sensitive, as
// the reference).
func (r *Registry) ByPingKey(pingKey string) (Info, bool) {
	defer r.read()()
	for _, ns := range r.byPingKey[pingKey] {
		if p := r.parts[ns]; r.owner(p.pingID) == ns {
			return r.owned(ns, p), true
		}
	}
	return Info{}, false
}

// ByBadgeKey returns the project whose badge key this is.
func (r *Registry) ByBadgeKey(badgeKey string) (Info, bool) {
	defer r.read()()
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
