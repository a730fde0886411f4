package project

import (
	"context"
	"slices"
	"sort"
	"time"
)

// KeyClaims records which project holds each key (store.SyncKeys): given
// every key a namespace's Secrets hold now, it records what changed since
// its last record and answers each key's owner.
type KeyClaims interface {
	SyncKeys(ctx context.Context, namespace string, ids []string, now time.Time) (map[string]string, error)
	// KeyHolders lists the namespaces recorded as holding keys now.
	KeyHolders(ctx context.Context) ([]string, error)
}

// RecordClaims has the registry record in claims, from now until ctx ends,
// which project holds each key, and decide owners by it.
func (r *Registry) RecordClaims(ctx context.Context, claims KeyClaims) {
	r.mu.Lock()
	r.claims = claims
	r.mu.Unlock()
	r.signalRecord()
	r.start(ctx)
}

// settle is how long the build loop lets a burst of Secret events gather
// before it builds their parts, once. Lookups meanwhile answer from the
// parts built before.
const settle = 50 * time.Millisecond

// Bounds of the wait before a failed record is tried again.
const (
	minRetry = time.Second
	maxRetry = time.Minute
)

// maxUnheld bounds the owners remembered of keys no Secret holds any
// more (they keep a copy made later from opening anything until the store
// answers): past it, they are forgotten.
const maxUnheld = 100_000

func (r *Registry) start(ctx context.Context) {
	r.started.Do(func() {
		go r.buildLoop(ctx)
		go r.recordLoop(ctx)
	})
}

// now is the time the registry records in the store.
func (r *Registry) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// buildLoop builds the parts of namespaces whose Secrets changed, a moment
// after they did, and a namespace whose Secrets keep changing no more often
// than minRebuild. Until the registry is Ready it builds every stale
// namespace at once: a replica starting up builds what the cache holds in
// one round.
func (r *Registry) buildLoop(ctx context.Context) {
	due := r.pace.NewTimer(time.Hour)
	due.Stop()
	defer due.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-due.C():
		}
		select {
		case <-ctx.Done():
			return
		case <-r.pace.After(settle):
		}
		r.mu.RLock()
		synced := r.cacheSynced == nil || r.cacheSynced()
		r.mu.RUnlock()
		ready := r.ready.Load()
		if next := r.rebuild(r.pace.Now(), !ready); next > 0 {
			due.Reset(next)
		}
		if !ready && synced {
			r.ready.Store(true)
			close(r.readyCh)
			r.signalRecord() // the store's holders can be synced now
		}
	}
}

// recordLoop records the keys of the namespaces whose keys changed, with
// the owners the store answers. Until a key's first record (a moment after
// a Secret appears), the oldest Secret decides. A failed record is tried
// again after a second, then less and less often. It runs beside the build
// loop, so that a slow store delays records, never builds: a removed key
// stops opening its project on time whatever the store does.
func (r *Registry) recordLoop(ctx context.Context) {
	retry := r.pace.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	wait := time.Duration(0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-r.wakeRecord:
		case <-retry.C():
		}
		if r.recordRound(ctx) {
			wait = 0
			continue
		}
		wait = min(max(2*wait, minRetry), maxRetry)
		retry.Reset(wait)
	}
}

// recordRound records what is to be synced, and reports whether all of it
// was.
func (r *Registry) recordRound(ctx context.Context) bool {
	r.mu.Lock()
	claims, holders := r.claims, !r.heldSynced && r.ready.Load()
	r.mu.Unlock()
	if claims == nil {
		return true
	}
	ok := !holders || r.syncHolders(ctx, claims)
	todo := map[string][]string{}
	r.mu.Lock()
	for ns := range r.toSync {
		var ids []string
		if p := r.parts[ns]; p != nil {
			ids = p.ids
		}
		todo[ns] = ids
	}
	r.toSync = map[string]bool{}
	r.mu.Unlock()
	return r.record(ctx, claims, todo) && ok
}

// syncHolders has every namespace the store records as holding keys, and
// that has no project Secret, synced with no keys, once the registry is
// Ready (before, its Secrets may not have arrived yet). The registry syncs
// only the namespaces it sees: one whose Secrets went while no manager ran
// would keep its holds unreleased, and so never pruned, forever.
func (r *Registry) syncHolders(ctx context.Context, claims KeyClaims) bool {
	holders, err := claims.KeyHolders(ctx)
	if err != nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ns := range holders {
		if r.parts[ns] == nil && r.secrets[ns] == nil {
			r.toSync[ns] = true
		}
	}
	r.heldSynced = true
	return true
}

// record records each namespace's keys, and reports whether every record
// succeeded; those that failed are to be synced again.
func (r *Registry) record(ctx context.Context, claims KeyClaims, todo map[string][]string) bool {
	namespaces := make([]string, 0, len(todo))
	for ns := range todo {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	ok := true
	for _, ns := range namespaces {
		ids := todo[ns]
		owners, err := claims.SyncKeys(ctx, ns, ids, r.now())
		r.mu.Lock()
		if err != nil {
			r.toSync[ns], ok = true, false
			r.mu.Unlock()
			continue
		}
		changed := map[string]bool{}
		for id, owner := range owners {
			if r.claimed[id] != owner {
				r.claimed[id] = owner
				changed[id] = true
			}
		}
		if ids == nil {
			delete(r.synced, ns)
		} else {
			r.synced[ns] = ids
		}
		if p := r.parts[ns]; (p == nil && ids != nil) || (p != nil && !slices.Equal(p.ids, ids)) {
			r.toSync[ns] = true // it changed while recorded
		}
		r.tellConflicts(changed)
		r.forgetUnheld()
		r.mu.Unlock()
	}
	return ok
}

// forgetUnheld forgets the owners of keys no Secret holds, when there are
// too many. Called with r.mu held.
func (r *Registry) forgetUnheld() {
	if len(r.claimed) <= len(r.offers)+maxUnheld {
		return
	}
	for id := range r.claimed {
		if _, held := r.offers[id]; !held {
			delete(r.claimed, id)
		}
	}
}
