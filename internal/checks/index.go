package checks

import (
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// index holds the cache's checks by what requests name them by: their UUID
// and badge key in any namespace, and within a project their slug and
// unique key, and the project's checks oldest first. The Door's informer
// handler keeps it. A lookup is a map access under a read lock on the
// cache's own objects, never a list copied out of the cache (which, with
// reflection and a struct copy per check, was most of a ping's lookup and
// of a large project's list).
//
// The checks it hands out are the cache's: read them, never change them.
type index struct {
	mu       sync.RWMutex
	byUID    map[types.UID]*v1.Check
	keys     map[types.UID]Keys // of the check byUID holds
	byUUID   map[string][]*v1.Check
	byBadge  map[string][]*v1.Check
	projects map[string]*projectIndex
}

// projectIndex is one namespace's checks.
type projectIndex struct {
	byUID    map[types.UID]*v1.Check
	byName   map[string]*v1.Check
	bySlug   map[string][]*v1.Check
	byUnique map[string][]*v1.Check
	// sorted is every check, oldest first, kept as checks come and go
	// once a reader asked for it (nil until then, or when it was lost
	// track of: the next reader sorts it). A slice handed out (shared) is
	// never changed: the next change copies it first. One not handed out
	// since it was copied is changed in place, so a wave of status
	// updates, each a new version of a check in its old slot, or a
	// project's checks arriving one by one, copies nothing: copying a
	// 10,000-check project's order at each of its checks' events was
	// quadratic (BenchmarkIndexProject).
	sorted []*v1.Check
	shared atomic.Bool
}

// writable is the project's order to change in place: a copy when a
// reader holds it. Under the index's write lock.
func (p *projectIndex) writable() []*v1.Check {
	if p.shared.Load() {
		p.sorted = slices.Clone(p.sorted)
		p.shared.Store(false)
	}
	return p.sorted
}

// Keys are what a check is known by besides its name: its UUID (its ping
// URL), its public badge key and its read-only unique key.
type Keys struct {
	UUID, BadgeKey, UniqueKey string
}

func keysOf(c *v1.Check) Keys {
	uuid := UUIDOf(c)
	return Keys{UUID: uuid, BadgeKey: BadgeKey(uuid), UniqueKey: UniqueKey(uuid)}
}

// keysFor are c's keys as the index worked them out, when it holds this
// version of c.
func (x *index) keysFor(c *v1.Check) (Keys, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.byUID[c.UID] != c {
		return Keys{}, false
	}
	return x.keys[c.UID], true
}

// set puts c in the index, in place of the earlier version of its object.
func (x *index) set(c *v1.Check) {
	k := keysOf(c)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byUID == nil {
		x.byUID, x.byUUID, x.byBadge = map[types.UID]*v1.Check{}, map[string][]*v1.Check{}, map[string][]*v1.Check{}
		x.keys = map[types.UID]Keys{}
		x.projects = map[string]*projectIndex{}
	}
	old := x.byUID[c.UID]
	if old != nil {
		x.unlink(old, x.keys[old.UID], c)
	}
	x.byUID[c.UID], x.keys[c.UID] = c, k
	x.byUUID[k.UUID] = append(x.byUUID[k.UUID], c)
	x.byBadge[k.BadgeKey] = append(x.byBadge[k.BadgeKey], c)
	p := x.projects[c.Namespace]
	if p == nil {
		p = &projectIndex{byUID: map[types.UID]*v1.Check{}, byName: map[string]*v1.Check{}, bySlug: map[string][]*v1.Check{},
			byUnique: map[string][]*v1.Check{}}
		x.projects[c.Namespace] = p
	}
	p.byUID[c.UID] = c
	p.byName[c.Name] = c
	if c.Spec.Slug != "" {
		p.bySlug[c.Spec.Slug] = append(p.bySlug[c.Spec.Slug], c)
	}
	p.byUnique[k.UniqueKey] = append(p.byUnique[k.UniqueKey], c)
	// A new check takes its place in the project's order (the newest, the
	// usual case, at the end); a new version of a check took its old
	// version's slot in unlink, since what orders a check (its creation,
	// name and namespace) never changes.
	if p.sorted != nil && old == nil {
		i, _ := slices.BinarySearchFunc(p.sorted, c, compareOldest)
		p.sorted = slices.Insert(p.writable(), i, c)
	}
}

// get is the index's version of the check with that UID (nil: none).
func (x *index) get(uid types.UID) *v1.Check {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byUID[uid]
}

// remove takes c's object out of the index.
func (x *index) remove(c *v1.Check) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old := x.byUID[c.UID]; old != nil {
		x.unlink(old, x.keys[c.UID], nil)
		delete(x.byUID, c.UID)
		delete(x.keys, c.UID)
	}
}

// unlink takes old out of every map but byUID, and out of its project's
// order, or puts its new version there in its slot; under the lock.
func (x *index) unlink(old *v1.Check, k Keys, next *v1.Check) {
	drop(x.byUUID, k.UUID, old)
	drop(x.byBadge, k.BadgeKey, old)
	p := x.projects[old.Namespace]
	if p == nil {
		return
	}
	delete(p.byUID, old.UID)
	if p.byName[old.Name] == old {
		delete(p.byName, old.Name)
	}
	drop(p.bySlug, old.Spec.Slug, old)
	drop(p.byUnique, k.UniqueKey, old)
	switch i, found := slices.BinarySearchFunc(p.sorted, old, compareOldest); {
	case !found || p.sorted[i] != old:
		p.sorted = nil
	case next != nil:
		p.writable()[i] = next
	default:
		p.sorted = slices.Delete(p.writable(), i, i+1)
	}
	if len(p.byUID) == 0 {
		delete(x.projects, old.Namespace)
	}
}

// drop removes c from m[key], and the key when nothing is left. The slice
// is built anew: readers may hold the old one.
func drop(m map[string][]*v1.Check, key string, c *v1.Check) {
	list := m[key]
	i := slices.Index(list, c)
	if i < 0 {
		return
	}
	if len(list) == 1 {
		delete(m, key)
		return
	}
	m[key] = slices.Concat(list[:i], list[i+1:])
}

// The lookups hand out slices no one changes: appends to a key's list make
// the list grow into a new array or past the length a reader holds, and
// removals build a new one.

func (x *index) withUUID(uuid string) []*v1.Check {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byUUID[uuid]
}

func (x *index) withBadgeKey(key string) []*v1.Check {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.byBadge[key]
}

func (x *index) withSlug(namespace, slug string) []*v1.Check {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if p := x.projects[namespace]; p != nil {
		return p.bySlug[slug]
	}
	return nil
}

func (x *index) withUniqueKey(namespace, key string) []*v1.Check {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if p := x.projects[namespace]; p != nil {
		return p.byUnique[key]
	}
	return nil
}

// named is the project's check of that name (nil: none).
func (x *index) named(namespace, name string) *v1.Check {
	x.mu.RLock()
	defer x.mu.RUnlock()
	p := x.projects[namespace]
	if p == nil {
		return nil
	}
	return p.byName[name]
}

// inProject is the project's checks, oldest first.
// namespaces lists the namespaces that have checks, sorted.
func (x *index) namespaces() []string {
	x.mu.RLock()
	out := make([]string, 0, len(x.projects))
	for ns, p := range x.projects {
		if len(p.byUID) > 0 {
			out = append(out, ns)
		}
	}
	x.mu.RUnlock()
	slices.Sort(out)
	return out
}

func (x *index) inProject(namespace string) []*v1.Check {
	x.mu.RLock()
	p := x.projects[namespace]
	if p == nil {
		x.mu.RUnlock()
		return nil
	}
	if sorted := p.sorted; sorted != nil {
		p.shared.Store(true)
		x.mu.RUnlock()
		return sorted
	}
	x.mu.RUnlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if p = x.projects[namespace]; p == nil {
		return nil
	}
	if p.sorted == nil {
		sorted := make([]*v1.Check, 0, len(p.byUID))
		for _, c := range p.byUID {
			sorted = append(sorted, c)
		}
		slices.SortFunc(sorted, compareOldest)
		p.sorted = sorted
	}
	p.shared.Store(true)
	return p.sorted
}
