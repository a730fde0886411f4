// Package intern keeps one shared copy of the values that many cached
// objects repeat. Each object decoded from a watch holds its own copy of
// every string in it, and each check's spec was parsed into a schedule of
// its own; at 100,000 Checks the copies of the same few dozen strings were
// a sixth of what a cached Check costs, and a fleet's CronJobs share a few
// schedules (docs/performance.md, "What a check costs in the manager").
//
// A Pool is bounded, because its keys come from objects that tenants
// write: once full it keeps nothing more and hands out values as they are
// made, so a tenant who fills it costs the others some sharing, never
// memory or correctness.
package intern

import (
	"strings"
	"sync"
)

// Pool keeps one value per key, for values that never change once made
// (so that any number of holders may share one).
type Pool[K comparable, V any] struct {
	max  int
	mu   sync.RWMutex
	kept map[K]V
}

// NewPool returns a Pool that keeps at most max values.
func NewPool[K comparable, V any](max int) *Pool[K, V] {
	return &Pool[K, V]{max: max, kept: make(map[K]V)}
}

// Get returns the value kept for k, or else the one make makes, kept when
// the Pool has room. An error from make is returned, and nothing kept.
func (p *Pool[K, V]) Get(k K, make func() (V, error)) (V, error) {
	if v, ok, _ := p.lookup(k); ok {
		return v, nil
	}
	v, err := make()
	if err != nil {
		return v, err
	}
	return p.keep(k, v), nil
}

// lookup is the value kept for k, and whether the Pool is full.
func (p *Pool[K, V]) lookup(k K) (v V, ok, full bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok = p.kept[k]
	return v, ok, len(p.kept) >= p.max
}

// keep keeps v for k when the Pool has room and no value for k yet, and
// returns the value kept (v, or the one kept meanwhile).
func (p *Pool[K, V]) keep(k K, v V) V {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cur, ok := p.kept[k]; ok {
		return cur
	}
	if len(p.kept) < p.max {
		p.kept[k] = v
	}
	return v
}

// Len is how many values the Pool keeps.
func (p *Pool[K, V]) Len() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.kept)
}

// MaxLen is the longest string Strings keeps: longer strings are rarely
// repeated (a description, a message naming a check).
const MaxLen = 64

// Strings keeps one copy of short strings.
type Strings struct{ pool *Pool[string, string] }

// NewStrings returns a Strings that keeps at most max strings.
func NewStrings(max int) *Strings { return &Strings{pool: NewPool[string, string](max)} }

// String returns the kept copy of s, keeping s when there is none and
// room for it. Strings longer than MaxLen are returned as they are.
func (s *Strings) String(v string) string {
	if v == "" || len(v) > MaxLen {
		return v
	}
	kept, ok, full := s.pool.lookup(v)
	switch {
	case ok:
		return kept
	case full:
		return v
	}
	// A copy, so that what is kept never holds alive a larger string v
	// was cut from.
	return s.pool.keep(v, strings.Clone(v))
}

// Map returns m with its keys and values the kept copies: a new map when m
// has any, since a map's keys cannot be replaced in place.
func (s *Strings) Map(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[s.String(k)] = s.String(v)
	}
	return out
}

// Len is how many strings are kept.
func (s *Strings) Len() int { return s.pool.Len() }
