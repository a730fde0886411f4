package checks

import (
	"slices"
	"sync"

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
	// sorted is every check, oldest first, kept as checks come and go, in
	// copies: a sorted slice is never changed once handed out. (nil only
	// when it was lost track of; the next reader sorts it again.)
	sorted []*v1.Check
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
		x.unlink(old, x.keys[old.UID])
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
	// The project's order takes it in a copy (readers may hold the old
	// one): the newest check, the usual case, at the end. A new version
	// of a check takes the slot its old version left, since what orders a
	// check (its creation, name and namespace) never changes.
	if p.sorted != nil || len(p.byUID) == 1 {
		i, _ := slices.BinarySearchFunc(p.sorted, c, compareOldest)
		p.sorted = slices.Insert(slices.Clip(p.sorted), i, c)
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
		x.unlink(old, x.keys[c.UID])
		delete(x.byUID, c.UID)
		delete(x.keys, c.UID)
	}
}

// unlink takes old out of every map but byUID; under the lock.
func (x *index) unlink(old *v1.Check, k Keys) {
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
	if i, found := slices.BinarySearchFunc(p.sorted, old, compareOldest); found && p.sorted[i] == old {
		p.sorted = slices.Concat(p.sorted[:i], p.sorted[i+1:])
	} else {
		p.sorted = nil
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
func (x *index) inProject(namespace string) []*v1.Check {
	x.mu.RLock()
	p := x.projects[namespace]
	if p == nil {
		x.mu.RUnlock()
		return nil
	}
	if sorted := p.sorted; sorted != nil {
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
	return p.sorted
}
