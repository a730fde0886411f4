package project

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

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

type keyEntry struct {
	namespace string
	access    Access
	key       StoredKey
}

// Registry indexes every project Secret the manager's cache holds, so that
// authenticating a request costs one hash and a map lookup however many
// projects exist. It follows Secret events and is current once the cache has
// synced. Events are rare, so each one rebuilds the derived indexes.
type Registry struct {
	mu      sync.RWMutex
	secrets map[string]*corev1.Secret // namespace/name -> project Secret

	// Derived from secrets by rebuild.
	byLabel    map[string][]keyEntry // a key's first 12 characters -> stored keys
	projects   map[string]Info       // namespace -> project
	byPingKey  map[string]string     // ping key -> namespace
	byBadgeKey map[string]string     // badge key -> namespace
	reported   map[Conflict]bool     // conflicts OnConflict has heard of

	// claims records in the ping store which project holds each key
	// (RecordClaims), so that ownership outlasts the Secrets: a project
	// that re-creates its Secret keeps its keys, and one that copied them
	// does not take them meanwhile. Without it, the oldest Secret decides.
	claims KeyClaims

	offers  map[string][]string // namespace -> the key ids its Secrets hold
	synced  map[string][]string // namespace -> the ids last recorded in claims
	claimed map[string]string   // key id -> owner, as claims last answered
	sync    chan struct{}       // wakes the syncer

	// OnConflict, when set, hears once of each key that a project Secret
	// holds and another project's older Secret holds too. It is called
	// with the registry locked: it must not call the registry.
	OnConflict func(secret *corev1.Secret, what string)
}

// NewRegistry returns an empty registry; call Watch to fill it.
func NewRegistry() *Registry {
	r := &Registry{secrets: map[string]*corev1.Secret{}, synced: map[string][]string{}, claimed: map[string]string{},
		sync: make(chan struct{}, 1)}
	r.rebuild()
	return r
}

// Watch feeds the registry from the cache's Secret informer (which the
// manager restricts to Secrets labelled as project Secrets).
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
	return err
}

// RecordClaims has the registry record in claims, from now until ctx ends,
// which project holds each key, and decide owners by it.
func (r *Registry) RecordClaims(ctx context.Context, claims KeyClaims) {
	r.mu.Lock()
	r.claims = claims
	r.mu.Unlock()
	go r.syncClaims(ctx)
}

// KeyClaims records which project holds each key (store.SyncKeys).
type KeyClaims interface {
	SyncKeys(ctx context.Context, namespace string, ids []string, now time.Time) (map[string]string, error)
}

// wakeSync tells the syncer that the keys the Secrets hold may have
// changed. Called with r.mu held.
func (r *Registry) wakeSync() {
	select {
	case r.sync <- struct{}{}:
	default:
	}
}

// syncClaims records, in the background, the keys each namespace's
// Secrets hold whenever they change, and rebuilds the indexes with the
// owners the store answers. Until a key's first record (a moment after a
// Secret appears), the oldest Secret decides. A failed record is tried
// again a second later.
func (r *Registry) syncClaims(ctx context.Context) {
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.sync:
		case <-retry.C:
		}
		r.mu.RLock()
		todo := map[string][]string{}
		for ns, ids := range r.offers {
			if !slices.Equal(ids, r.synced[ns]) {
				todo[ns] = ids
			}
		}
		for ns := range r.synced {
			if _, ok := r.offers[ns]; !ok {
				todo[ns] = nil // its last Secret went
			}
		}
		r.mu.RUnlock()
		if len(todo) == 0 {
			continue
		}
		for ns, ids := range todo {
			owners, err := r.claims.SyncKeys(ctx, ns, ids, time.Now())
			if err != nil {
				continue // the ticker tries again
			}
			r.mu.Lock()
			for id, owner := range owners {
				r.claimed[id] = owner
			}
			if ids == nil {
				delete(r.synced, ns)
			} else {
				r.synced[ns] = ids
			}
			r.rebuild()
			r.mu.Unlock()
		}
	}
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
	id := s.Namespace + "/" + s.Name
	if s.Labels[SecretLabel] == "true" {
		r.secrets[id] = s
	} else {
		delete(r.secrets, id)
	}
	r.rebuild()
}

// Remove forgets a Secret.
func (r *Registry) Remove(s *corev1.Secret) {
	if s == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.secrets, s.Namespace+"/"+s.Name)
	r.rebuild()
}

// rebuild recomputes the indexes. When a namespace has several project
// Secrets, the first by name that sets a value wins for ping, badge and
// signing keys, and every Secret's API keys count.
//
// Across namespaces every key is unique: a project Secret is the tenant's
// to write, so a tenant could copy another project's ping key (and receive
// its pings), its badge key, or a stored API key line (and have the other
// project's client write into theirs). A key two projects hold belongs to
// the one the ping store records as its holder (RecordClaims: the first,
// across re-creates of its Secret), else to the one whose Secret is older;
// the other project's copy opens nothing, and OnConflict hears of it.
func (r *Registry) rebuild() {
	ids := make([]string, 0, len(r.secrets))
	for id := range r.secrets {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	r.byLabel = map[string][]keyEntry{}
	r.projects = map[string]Info{}
	r.byPingKey = map[string]string{}
	r.byBadgeKey = map[string]string{}
	claims := claimSet{ids: map[string][]claim{}, held: r.claimed}
	pingFrom, badgeFrom := map[string]*corev1.Secret{}, map[string]*corev1.Secret{}
	type held struct {
		entry  keyEntry
		secret *corev1.Secret
	}
	var apiKeys []held
	for _, id := range ids {
		s := r.secrets[id]
		info := r.projects[s.Namespace]
		info.Namespace = s.Namespace
		// Hand-written Secrets often end values with a newline; keys never do.
		if info.PingKey == "" {
			info.PingKey = strings.TrimSpace(string(s.Data[DataPingKey]))
			pingFrom[s.Namespace] = s
		}
		if info.BadgeKey == "" {
			info.BadgeKey = strings.TrimSpace(string(s.Data[DataBadgeKey]))
			badgeFrom[s.Namespace] = s
		}
		info.SigningSecret = firstNonEmpty(info.SigningSecret, strings.TrimSpace(string(s.Data[DataSigningSecret])))
		r.projects[s.Namespace] = info
		keys := KeysFromSecretData(s.Data)
		for _, k := range keys.ReadWrite {
			e := keyEntry{namespace: s.Namespace, access: ReadWrite, key: k}
			apiKeys = append(apiKeys, held{e, s})
			claims.offer("API key "+k.Label, k.identity(), s)
		}
		for _, k := range keys.ReadOnly {
			e := keyEntry{namespace: s.Namespace, access: ReadOnly, key: k}
			apiKeys = append(apiKeys, held{e, s})
			claims.offer("API key "+k.Label, k.identity(), s)
		}
	}
	for ns, info := range r.projects {
		if info.PingKey != "" {
			claims.offer("ping key", keyID("ping", info.PingKey), pingFrom[ns])
		}
		if info.BadgeKey != "" {
			claims.offer("badge key", keyID("badge", info.BadgeKey), badgeFrom[ns])
		}
	}
	// A project whose key another project owns has none: no URL shows it.
	for ns, info := range r.projects {
		if info.PingKey != "" && claims.owner(keyID("ping", info.PingKey)) == ns {
			r.byPingKey[info.PingKey] = ns
		} else {
			info.PingKey = ""
		}
		if info.BadgeKey != "" && claims.owner(keyID("badge", info.BadgeKey)) == ns {
			r.byBadgeKey[info.BadgeKey] = ns
		} else {
			info.BadgeKey = ""
		}
		r.projects[ns] = info
	}
	for _, h := range apiKeys {
		if claims.owner(h.entry.key.identity()) == h.entry.namespace {
			r.byLabel[h.entry.key.Label] = append(r.byLabel[h.entry.key.Label], h.entry)
		}
	}
	r.offers = map[string][]string{}
	for id, cls := range claims.ids {
		for _, cl := range cls {
			ns := cl.secret.Namespace
			if !slices.Contains(r.offers[ns], id) {
				r.offers[ns] = append(r.offers[ns], id)
			}
		}
	}
	for _, ids := range r.offers {
		sort.Strings(ids)
	}
	r.wakeSync()
	conflicts := claims.conflicts()
	if r.OnConflict != nil {
		for _, c := range conflicts {
			if !r.reported[c] {
				r.OnConflict(r.secrets[c.Secret.String()], c.What)
			}
		}
	}
	r.reported = map[Conflict]bool{}
	for _, c := range conflicts {
		r.reported[c] = true
	}
}

// ReasonKeyConflict is the reason of the Event on a project Secret that
// holds a key another project's older Secret holds too.
const ReasonKeyConflict = "KeyConflict"

// Conflict is a key a project Secret holds that another project's older
// Secret holds too: it opens nothing here.
type Conflict struct {
	// Secret is the later Secret, as namespace/name.
	Secret types.NamespacedName
	// What names the key: "ping key", "badge key", or "API key hcw_1234abcd".
	What string
}

// claimSet finds, for each key, its owner: the project the ping store
// records (RecordClaims), else the one whose Secret holding it is oldest.
type claimSet struct {
	ids  map[string][]claim
	held map[string]string // key -> the namespace the store says owns it
}

type claim struct {
	what   string
	secret *corev1.Secret
}

func (c claimSet) offer(what, id string, s *corev1.Secret) {
	c.ids[id] = append(c.ids[id], claim{what: what, secret: s})
}

// owner is the namespace that owns id: the store's word, else the
// namespace of the oldest Secret holding it ("" when none).
func (c claimSet) owner(id string) string {
	if ns, ok := c.held[id]; ok {
		return ns
	}
	var best *corev1.Secret
	for _, cl := range c.ids[id] {
		if best == nil || olderSecret(cl.secret, best) {
			best = cl.secret
		}
	}
	if best == nil {
		return ""
	}
	return best.Namespace
}

func (c claimSet) conflicts() []Conflict {
	var out []Conflict
	for id, claims := range c.ids {
		owner := c.owner(id)
		for _, cl := range claims {
			if cl.secret.Namespace != owner {
				out = append(out, Conflict{Secret: types.NamespacedName{Namespace: cl.secret.Namespace, Name: cl.secret.Name}, What: cl.what})
			}
		}
	}
	return out
}

// olderSecret orders Secrets by creation, then namespace and name, so that
// every replica picks the same owner.
func olderSecret(a, b *corev1.Secret) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
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
		if match == 1 && e.access > access {
			namespace, access = e.namespace, e.access
		}
	}
	return namespace, access
}

// Project returns what the project Secrets of a namespace hold.
func (r *Registry) Project(namespace string) (Info, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	info, ok := r.projects[namespace]
	return info, ok
}

// ByPingKey returns the project whose ping key this is (case-sensitive, as
// the reference).
func (r *Registry) ByPingKey(pingKey string) (Info, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ns, ok := r.byPingKey[pingKey]
	if !ok {
		return Info{}, false
	}
	return r.projects[ns], true
}

// ByBadgeKey returns the project whose badge key this is.
func (r *Registry) ByBadgeKey(badgeKey string) (Info, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ns, ok := r.byBadgeKey[badgeKey]
	if !ok {
		return Info{}, false
	}
	return r.projects[ns], true
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// keyID is a ping or badge key's identity: its SHA-256, so that the ping
// store, which records who holds it, does not hold the key itself.
func keyID(kind, key string) string {
	sum := sha256.Sum256([]byte(key))
	return kind + ":" + hex.EncodeToString(sum[:])
}
