package turns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// enterAsync enters in a goroutine and reports, on order, tenant/name when
// it got in; it leaves when release is closed.
func enterAsync(t *testing.T, g *Gate, ctx context.Context, tenant, name string, order chan<- string, release <-chan struct{}) <-chan error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		leave, err := g.Enter(ctx, tenant)
		if err != nil {
			errc <- err
			return
		}
		order <- tenant + "/" + name
		<-release
		leave()
		errc <- nil
	}()
	return errc
}

// waitFor waits until tenant has n waiting.
func waitFor(t *testing.T, g *Gate, tenant string, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); g.Waiting(tenant) != n; {
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d waiting, want %d", tenant, g.Waiting(tenant), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// A tenant with many waiting and one with one: the one comes next.
func TestGateTurns(t *testing.T) {
	g := &Gate{Slots: 1}
	ctx := context.Background()
	leave, err := g.Enter(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 10)
	releases := map[string]chan struct{}{}
	var errs []<-chan error
	for i := range 3 {
		name := fmt.Sprint(i)
		releases["a/"+name] = make(chan struct{})
		errs = append(errs, enterAsync(t, g, ctx, "a", name, order, releases["a/"+name]))
		waitFor(t, g, "a", i+1) // queued in this order
	}
	releases["b/0"] = make(chan struct{})
	errs = append(errs, enterAsync(t, g, ctx, "b", "0", order, releases["b/0"]))
	waitFor(t, g, "b", 1)

	leave()
	var got []string
	for range 4 {
		in := <-order
		got = append(got, in)
		close(releases[in])
	}
	if want := []string{"a/0", "b/0", "a/1", "a/2"}; !slices.Equal(got, want) {
		t.Errorf("slots went to %v, want %v", got, want)
	}
	for _, e := range errs {
		if err := <-e; err != nil {
			t.Error(err)
		}
	}
	// Every slot is back: as many as Slots enter at once again.
	if leave, err = g.Enter(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	leave()
}

// Past MaxWaiting, a tenant is refused at once; another is not.
func TestGateRefusesPastMaxWaiting(t *testing.T) {
	g := &Gate{Slots: 1, MaxWaiting: 2}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leave, err := g.Enter(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	order, release := make(chan string, 10), make(chan struct{})
	a1 := enterAsync(t, g, ctx, "a", "1", order, release)
	a2 := enterAsync(t, g, ctx, "a", "2", order, release)
	waitFor(t, g, "a", 2)
	if _, err := g.Enter(ctx, "a"); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("a's third waiting: %v, want ErrQueueFull", err)
	}
	b := enterAsync(t, g, ctx, "b", "1", order, release)
	waitFor(t, g, "b", 1)
	close(release)
	leave()
	for _, e := range []<-chan error{a1, a2, b} {
		if err := <-e; err != nil {
			t.Error(err)
		}
	}
}

// A waiter whose context ends stops waiting and is skipped; its tenant's
// count goes down; the slot goes to the next.
func TestGateGivingUp(t *testing.T) {
	g := &Gate{Slots: 1, MaxWaiting: 1}
	leave, err := g.Enter(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	order, release := make(chan string, 10), make(chan struct{})
	gaveUp := enterAsync(t, g, ctx, "a", "gives-up", order, release)
	waitFor(t, g, "a", 1)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("gave up with %v", err)
	}
	waitFor(t, g, "a", 0)
	next := enterAsync(t, g, context.Background(), "a", "next", order, release)
	waitFor(t, g, "a", 1)
	leave()
	if in := <-order; in != "a/next" {
		t.Fatalf("the slot went to %s", in)
	}
	close(release)
	if err := <-next; err != nil {
		t.Fatal(err)
	}
}

// Many tenants entering, leaving and giving up at once: no slot is lost
// or doubled (run with -race).
func TestGateUnderLoad(t *testing.T) {
	g := &Gate{Slots: 3, MaxWaiting: 5}
	var mu sync.Mutex
	in, most := 0, 0
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Millisecond)
			defer cancel()
			leave, err := g.Enter(ctx, fmt.Sprint("t", i%4))
			if err != nil {
				return
			}
			mu.Lock()
			in++
			most = max(most, in)
			mu.Unlock()
			time.Sleep(100 * time.Microsecond)
			mu.Lock()
			in--
			mu.Unlock()
			leave()
		})
	}
	wg.Wait()
	if most > 3 {
		t.Errorf("%d in at once with 3 slots", most)
	}
	for range 3 { // all three slots are free again
		if _, err := g.Enter(context.Background(), "x"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := g.Enter(ctx, "y"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a fourth with 3 slots held: %v", err)
	}
}
