package checks

import (
	"context"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// watcher lets a writer wait until the cache has caught up with its write,
// so that a client's next read, which the cache serves, sees it.
//
// It waits for writes to reach the cache. The cache's informer tells
// it when a Check arrives, so a waiter wakes the moment the cache has its
// write, and waiting costs nothing while it lasts. (An earlier version
// polled the cache every 5 ms, copying the check out each time; the
// answers that went out up to a poll late also spread a hot check's
// clients over several group commits.)
type watcher struct {
	mu      sync.Mutex
	seen    map[client.ObjectKey]seenCheck
	waiters map[client.ObjectKey]map[*waiter]struct{}
	// latest is the highest resourceVersion of any Check event the cache
	// has applied; caught up with it, the cache holds every earlier write
	// to Checks (one watch delivers them in order).
	latest   uint64
	waiters0 map[*waiter]struct{} // Caught's waiters
}

type seenCheck struct {
	uid     types.UID
	version uint64
}

// waiter is satisfied by a check seen at version want or later, or by a
// check with another uid (uid "" matches any), or, with gone, only once the
// check is no longer in the cache.
type waiter struct {
	want uint64
	uid  types.UID
	gone bool
	done chan struct{}
}

func (w *waiter) satisfiedBy(s seenCheck, present bool) bool {
	if w.gone {
		return !present
	}
	if !present {
		return false // not in the cache yet
	}
	return s.version >= w.want || (w.uid != "" && s.uid != w.uid)
}

// newWatcher returns a watcher that learns about checks once attached.
func newWatcher() *watcher {
	return &watcher{seen: map[client.ObjectKey]seenCheck{}, waiters: map[client.ObjectKey]map[*waiter]struct{}{}}
}

// observe is told of every Check event the cache applies.
func (w *watcher) observe(check *v1.Check, present bool) {
	key := client.ObjectKeyFromObject(check)
	version, _ := strconv.ParseUint(check.ResourceVersion, 10, 64)
	s := seenCheck{uid: check.UID, version: version}
	w.mu.Lock()
	defer w.mu.Unlock()
	if version > w.latest {
		w.latest = version
		for wt := range w.waiters0 {
			if wt.want <= version {
				close(wt.done)
				delete(w.waiters0, wt)
			}
		}
	}
	if present {
		w.seen[key] = s
	} else if cur, ok := w.seen[key]; ok && cur.uid == check.UID {
		delete(w.seen, key)
	}
	s, present = w.seen[key]
	for wt := range w.waiters[key] {
		if wt.satisfiedBy(s, present) {
			close(wt.done)
			delete(w.waiters[key], wt)
		}
	}
	if len(w.waiters[key]) == 0 {
		delete(w.waiters, key)
	}
}

// version waits until the cache holds the check key names at
// resourceVersion version or later, or holds another object (a different
// uid; "" accepts any) under that name, or timeout passes (0 means
// DefaultCacheWait) or ctx ends.
func (w *watcher) version(ctx context.Context, key client.ObjectKey, uid types.UID, version string, timeout time.Duration) {
	want, err := strconv.ParseUint(version, 10, 64)
	if err != nil {
		return
	}
	w.wait(ctx, key, &waiter{want: want, uid: uid}, timeout)
}

// caught waits until the cache has applied every Check event up to
// resourceVersion version (of a Check written by anyone, in any namespace),
// or timeout passes (0 means DefaultCacheWait) or ctx ends; it reports
// whether the cache caught up.
func (w *watcher) caught(ctx context.Context, version string, timeout time.Duration) bool {
	want, err := strconv.ParseUint(version, 10, 64)
	if err != nil {
		return false
	}
	wt := &waiter{want: want, done: make(chan struct{})}
	w.mu.Lock()
	if w.latest >= want {
		w.mu.Unlock()
		return true
	}
	if w.waiters0 == nil {
		w.waiters0 = map[*waiter]struct{}{}
	}
	w.waiters0[wt] = struct{}{}
	w.mu.Unlock()
	if closedWithin(ctx, wt.done, timeout) {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	_, waiting := w.waiters0[wt]
	delete(w.waiters0, wt)
	return !waiting // it may have caught up just now
}

// gone waits until the cache no longer holds the check key names, or
// timeout passes or ctx ends.
func (w *watcher) gone(ctx context.Context, key client.ObjectKey, timeout time.Duration) {
	w.wait(ctx, key, &waiter{gone: true}, timeout)
}

func (w *watcher) wait(ctx context.Context, key client.ObjectKey, wt *waiter, timeout time.Duration) {
	w.mu.Lock()
	s, present := w.seen[key]
	if wt.satisfiedBy(s, present) {
		w.mu.Unlock()
		return
	}
	wt.done = make(chan struct{})
	if w.waiters[key] == nil {
		w.waiters[key] = map[*waiter]struct{}{}
	}
	w.waiters[key][wt] = struct{}{}
	w.mu.Unlock()
	if closedWithin(ctx, wt.done, timeout) {
		return
	}
	w.mu.Lock()
	delete(w.waiters[key], wt)
	if len(w.waiters[key]) == 0 {
		delete(w.waiters, key)
	}
	w.mu.Unlock()
}

// closedWithin waits until done is closed, or timeout passes (0 means
// DefaultCacheWait) or ctx ends; it reports whether done was closed.
func closedWithin(ctx context.Context, done <-chan struct{}, timeout time.Duration) bool {
	if timeout <= 0 {
		timeout = DefaultCacheWait
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	case <-timer.C:
		return false
	}
}
