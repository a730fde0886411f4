package keylock

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// One holder at a time per key: a counter that only a holder changes
// never sees two at once, and every waiter gets its turn.
func TestOneHolderPerKey(t *testing.T) {
	var l Locks
	var inside, most, turns int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			unlock, err := l.Lock(context.Background(), "check")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			inside++
			most = max(most, inside)
			turns++
			mu.Unlock()
			time.Sleep(time.Millisecond) // stay inside, so that overlaps would show
			mu.Lock()
			inside--
			mu.Unlock()
			unlock()
		})
	}
	wg.Wait()
	if most != 1 || turns != 64 {
		t.Errorf("at most %d holders at once, %d turns; want 1 and 64", most, turns)
	}
	if n := l.Len(); n != 0 {
		t.Errorf("%d keys kept after every holder let go", n)
	}
}

// Other keys do not wait for a held one.
func TestKeysAreIndependent(t *testing.T) {
	var l Locks
	unlockA, err := l.Lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	defer unlockA()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	unlockB, err := l.Lock(ctx, "b")
	if err != nil {
		t.Fatalf("b waited for a: %v", err)
	}
	unlockB()
	if n := l.Len(); n != 1 {
		t.Errorf("%d keys kept, want 1 (a, held)", n)
	}
}

// A waiter whose context ends gives up, leaves nothing behind, and the
// key is free for the next once its holder lets go; unlocking twice is
// unlocking once.
func TestWaiterGivesUpWithItsContext(t *testing.T) {
	var l Locks
	unlock, err := l.Lock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Lock(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock with an ended context while held = %v, want context.Canceled", err)
	}
	unlock()
	unlock()
	if n := l.Len(); n != 0 {
		t.Errorf("%d keys kept", n)
	}
	again, err := l.Lock(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	again()
}
