package project

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
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
}

// NewRegistry returns an empty registry; call Watch to fill it.
func NewRegistry() *Registry {
	r := &Registry{secrets: map[string]*corev1.Secret{}}
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

// rebuild recomputes the indexes; when a namespace has several project
// Secrets, the first by name that sets a value wins for ping, badge and
// signing keys, and every Secret's API keys count.
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
	for _, id := range ids {
		s := r.secrets[id]
		info := r.projects[s.Namespace]
		info.Namespace = s.Namespace
		// Hand-written Secrets often end values with a newline; keys never do.
		info.PingKey = firstNonEmpty(info.PingKey, strings.TrimSpace(string(s.Data[DataPingKey])))
		info.BadgeKey = firstNonEmpty(info.BadgeKey, strings.TrimSpace(string(s.Data[DataBadgeKey])))
		info.SigningSecret = firstNonEmpty(info.SigningSecret, strings.TrimSpace(string(s.Data[DataSigningSecret])))
		r.projects[s.Namespace] = info
		keys := KeysFromSecretData(s.Data)
		for _, k := range keys.ReadWrite {
			r.byLabel[k.Label] = append(r.byLabel[k.Label], keyEntry{namespace: s.Namespace, access: ReadWrite, key: k})
		}
		for _, k := range keys.ReadOnly {
			r.byLabel[k.Label] = append(r.byLabel[k.Label], keyEntry{namespace: s.Namespace, access: ReadOnly, key: k})
		}
	}
	for ns, info := range r.projects {
		if info.PingKey != "" {
			r.byPingKey[info.PingKey] = ns
		}
		if info.BadgeKey != "" {
			r.byBadgeKey[info.BadgeKey] = ns
		}
	}
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
