package ping

import (
	"container/list"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// histCache keeps the histories this process wrote last, newest use first,
// within a byte budget. A ping to a check whose history is here is one
// write instead of a read and a write; one that is stale (another replica
// or the controller wrote since) conflicts, and the recorder reads it
// afresh. Histories are not in the informer cache (they are large and
// read on demand), so without this every ping after a quiet moment began
// with a read.
type histCache struct {
	mu     sync.Mutex
	budget int
	used   int
	order  *list.List // of *histEntry, most recently used at the front
	byUID  map[types.UID]*list.Element
}

type histEntry struct {
	uid  types.UID
	hist *v1.CheckHistory
	size int
}

func newHistCache(budget int) *histCache {
	return &histCache{budget: budget, order: list.New(), byUID: map[types.UID]*list.Element{}}
}

// get returns the cached history of the check with this UID, or nil. The
// caller must not change it.
func (c *histCache) get(uid types.UID) *v1.CheckHistory {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.byUID[uid]
	if !ok {
		return nil
	}
	c.order.MoveToFront(e)
	return e.Value.(*histEntry).hist
}

// put remembers h as the check's history (nil forgets it), evicting the
// least recently used histories beyond the budget. h must not be changed
// afterwards.
func (c *histCache) put(uid types.UID, h *v1.CheckHistory) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byUID[uid]; ok {
		c.used -= e.Value.(*histEntry).size
		c.order.Remove(e)
		delete(c.byUID, uid)
	}
	if h == nil {
		return
	}
	size := historySize(h)
	if size > c.budget {
		return
	}
	c.byUID[uid] = c.order.PushFront(&histEntry{uid: uid, hist: h, size: size})
	c.used += size
	for c.used > c.budget {
		oldest := c.order.Back()
		ent := oldest.Value.(*histEntry)
		c.order.Remove(oldest)
		delete(c.byUID, ent.uid)
		c.used -= ent.size
	}
}

// historySize estimates the memory a history takes: its bodies plus a
// fixed cost per ping and flip record.
func historySize(h *v1.CheckHistory) int {
	size := 1024 + 256*len(h.Flips)
	for i := range h.Pings {
		p := &h.Pings[i]
		size += 160 + len(p.Body) + len(p.UA) + len(p.RemoteAddr) + len(p.RID)
	}
	return size
}
