package checks

import (
	"context"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func check(uid types.UID, version string) *v1.Check {
	return &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: uid, ResourceVersion: version}}
}

var key = client.ObjectKey{Namespace: "ns", Name: "c"}

// waitAsync starts wait and returns a channel closed when it returns.
func waitAsync(wait func()) <-chan struct{} {
	done := make(chan struct{})
	go func() { wait(); close(done) }()
	return done
}

// registered waits until a waiter for key is registered, so the event the
// test sends next arrives during the wait.
func registered(t *testing.T, w *watcher) {
	t.Helper()
	waiting(t, w, func() int { return len(w.waiters[key]) })
}

// waiting waits until waiters, read under w's lock, counts one or more.
func waiting(t *testing.T, w *watcher, waiters func() int) {
	t.Helper()
	gomega.NewWithT(t).Eventually(func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return waiters()
	}).WithTimeout(5*time.Second).WithPolling(time.Millisecond).Should(gomega.BeNumerically(">", 0), "the waiter never registered")
}

// returned waits for done, as long as a loaded machine may need: a wait
// that is to end has ended.
func returned(done <-chan struct{}) bool {
	select {
	case <-done:
		return true
	case <-time.After(30 * time.Second):
		return false
	}
}

// stillWaiting says whether done is still open after a short while: a
// wait that is not to end yet has not, so far. (A loaded machine only
// makes this likelier to hold.)
func stillWaiting(done <-chan struct{}) bool {
	select {
	case <-done:
		return false
	case <-time.After(150 * time.Millisecond):
		return true
	}
}

func TestWatcherVersion(t *testing.T) {
	tests := []struct {
		name string
		// seen before the wait starts, then the event that arrives during it
		before, during *v1.Check
		deleted        bool
		uid            types.UID
		want           string
		wakes          bool
	}{
		{name: "already in the cache", before: check("a", "10"), want: "10", wakes: true},
		{name: "newer already in the cache", before: check("a", "12"), want: "10", wakes: true},
		{name: "arrives while waiting", before: check("a", "9"), during: check("a", "10"), want: "10", wakes: true},
		{name: "older version arrives", before: check("a", "8"), during: check("a", "9"), want: "10", wakes: false},
		{name: "not in the cache yet, then arrives", during: check("a", "10"), want: "10", wakes: true},
		{name: "replaced by another check of the name", before: check("a", "9"), during: check("b", "3"), uid: "a", want: "10", wakes: true},
		{name: "another uid does not count when any uid is fine", before: check("a", "9"), during: check("b", "3"), want: "10", wakes: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWatcher()
			if tt.before != nil {
				w.observe(tt.before, true)
			}
			// A wait that is to wake has a timeout far beyond returned's
			// bound, so that waking is not mistaken for timing out.
			timeout := 300 * time.Millisecond
			if tt.wakes {
				timeout = time.Hour
			}
			done := waitAsync(func() { w.version(context.Background(), key, tt.uid, tt.want, timeout) })
			if tt.during != nil {
				if tt.before == nil || !tt.wakes || tt.before.ResourceVersion < tt.want {
					registered(t, w)
				}
				w.observe(tt.during, true)
			}
			switch {
			case tt.wakes && !returned(done):
				t.Fatal("did not return when its version arrived")
			case !tt.wakes && !stillWaiting(done):
				t.Fatal("returned before its version arrived")
			case !tt.wakes && !returned(done):
				t.Fatal("did not return at its timeout")
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.waiters) != 0 {
				t.Errorf("waiters left behind: %v", w.waiters)
			}
		})
	}
}

func TestWatcherGone(t *testing.T) {
	w := newWatcher()
	w.observe(check("a", "5"), true)
	done := waitAsync(func() { w.gone(context.Background(), key, time.Minute) })
	registered(t, w)
	w.observe(check("a", "6"), true)
	if !stillWaiting(done) {
		t.Fatal("Gone returned while the check is still cached")
	}
	w.observe(check("a", "6"), false)
	if !returned(done) {
		t.Fatal("Gone did not return when the check was deleted")
	}
	// Deleting an older check of the name keeps the newer one.
	w.observe(check("b", "9"), true)
	w.observe(check("a", "6"), false)
	if _, ok := w.seen[key]; !ok {
		t.Error("deleting a replaced check forgot its successor")
	}
}

func TestWatcherGivesUpWithTheContext(t *testing.T) {
	w := newWatcher()
	ctx, cancel := context.WithCancel(context.Background())
	done := waitAsync(func() { w.version(ctx, key, "", "10", time.Minute) })
	cancel()
	if !returned(done) {
		t.Fatal("Version did not return when its context ended")
	}
}

func TestWatcherCaught(t *testing.T) {
	w := newWatcher()
	w.observe(check("a", "10"), true)
	if !w.caught(context.Background(), "10", time.Second) {
		t.Error("not caught up with a version the cache applied")
	}
	var caught bool
	done := waitAsync(func() { caught = w.caught(context.Background(), "12", 5*time.Second) })
	waiting(t, w, func() int { return len(w.waiters0) })
	// An event of any check, in any namespace, at a later version.
	other := check("b", "11")
	other.Namespace = "elsewhere"
	w.observe(other, true)
	if !stillWaiting(done) {
		t.Fatal("caught up before the cache reached the version")
	}
	deleted := check("c", "12")
	w.observe(deleted, false)
	if !returned(done) || !caught {
		t.Fatal("not caught up after an event at the version")
	}
	if w.caught(context.Background(), "13", 50*time.Millisecond) {
		t.Error("caught up with a version no event reached")
	}
	if w.caught(context.Background(), "not-a-version", time.Second) {
		t.Error("caught up with a version that is not one")
	}
}
