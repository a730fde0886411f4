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
	byUUID   map[string][]*v1.Check
	byBadge  map[string][]*v1.Check
	projects map[string]*projectIndex
}

// projectIndex is one namespace's checks.
type projectIndex struct {
	byUID    map[types.UID]*v1.Check
	bySlug   map[string][]*v1.Check
	byUnique map[string][]*v1.Check
	// sorted is every check, oldest first; nil after a check came or went,
	// until the next reader sorts them again. A sorted slice is never
	// changed once handed out: a changed check's slot is swapped in a copy.
	sorted []*v1.Check
}

// keys are the index keys of a check, worked out once per version.
type keys struct {
	uuid, badge, unique string
}

func keysOf(c *v1.Check) keys {
	uuid := UUIDOf(c)
	return keys{uuid: uuid, badge: BadgeKey(uuid), unique: UniqueKey(uuid)}
}

// set puts c in the index, in place of the earlier version of its object.
func (x *index) set(c *v1.Check) {
	k := keysOf(c)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.byUID == nil {
		x.byUID, x.byUUID, x.byBadge = map[types.UID]*v1.Check{}, map[string][]*v1.Check{}, map[string][]*v1.Check{}
		x.projects = map[string]*projectIndex{}
	}
	old := x.byUID[c.UID]
	var sorted []*v1.Check // the project's order before, when it had one
	if old != nil {
		if p := x.projects[old.Namespace]; p != nil {
			sorted = p.sorted
		}
		x.unlink(old, keysOf(old))
	}
	x.byUID[c.UID] = c
	x.byUUID[k.uuid] = append(x.byUUID[k.uuid], c)
	x.byBadge[k.badge] = append(x.byBadge[k.badge], c)
	p := x.projects[c.Namespace]
	if p == nil {
		p = &projectIndex{byUID: map[types.UID]*v1.Check{}, bySlug: map[string][]*v1.Check{}, byUnique: map[string][]*v1.Check{}}
		x.projects[c.Namespace] = p
	}
	p.byUID[c.UID] = c
	if c.Spec.Slug != "" {
		p.bySlug[c.Spec.Slug] = append(p.bySlug[c.Spec.Slug], c)
	}
	p.byUnique[k.unique] = append(p.byUnique[k.unique], c)
	p.sorted = nil
	// A new version of the same object: what orders it (its creation,
	// name and namespace) cannot have changed, so it takes its
	// predecessor's slot, in a copy (readers may hold the old order).
	if sorted != nil {
		if i, found := slices.BinarySearchFunc(sorted, old, compareOldest); found && sorted[i] == old {
			sorted = slices.Clone(sorted)
			sorted[i] = c
			p.sorted = sorted
		}
	}
}

// remove takes c's object out of the index.
func (x *index) remove(c *v1.Check) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if old := x.byUID[c.UID]; old != nil {
		x.unlink(old, keysOf(old))
		delete(x.byUID, c.UID)
	}
}

// unlink takes old out of every map but byUID; under the lock.
func (x *index) unlink(old *v1.Check, k keys) {
	drop(x.byUUID, k.uuid, old)
	drop(x.byBadge, k.badge, old)
	p := x.projects[old.Namespace]
	if p == nil {
		return
	}
	delete(p.byUID, old.UID)
	drop(p.bySlug, old.Spec.Slug, old)
	drop(p.byUnique, k.unique, old)
	p.sorted = nil
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
