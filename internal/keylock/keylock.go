// Package keylock lets one holder at a time work on a key, and any number
// of keys be held at once: the manager's writes to one check take turns,
// instead of racing each other's optimistic lock on the API server and
// losing. It keeps memory only for the keys held or waited for.
package keylock

import (
	"context"
	"sync"
)

// Locks is a set of locks, one per key. The zero value is ready to use.
type Locks struct {
	mu   sync.Mutex
	keys map[string]*lock
}

type lock struct {
	turn chan struct{} // holds a token while the key is held
	refs int           // the holder and the waiters
}

// Lock waits until no one holds key, or ctx ends, and takes it; unlock
// lets it go, once.
func (l *Locks) Lock(ctx context.Context, key string) (unlock func(), err error) {
	l.mu.Lock()
	if l.keys == nil {
		l.keys = map[string]*lock{}
	}
	k := l.keys[key]
	if k == nil {
		k = &lock{turn: make(chan struct{}, 1)}
		l.keys[key] = k
	}
	k.refs++
	l.mu.Unlock()

	select {
	case k.turn <- struct{}{}:
	case <-ctx.Done():
		l.release(key, k)
		return nil, ctx.Err()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-k.turn
			l.release(key, k)
		})
	}, nil
}

// release drops one reference to key's lock, and the lock with the last.
func (l *Locks) release(key string, k *lock) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if k.refs--; k.refs == 0 {
		delete(l.keys, key)
	}
}

// Len is how many keys are held or waited for.
func (l *Locks) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}
