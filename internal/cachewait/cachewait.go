// Package cachewait lets a writer wait until the manager's informer cache
// has caught up with its write, so that a client's next read, which the
// cache serves, sees it. Used by the Management API after its writes and by
// the ping endpoint before it answers.
package cachewait

import (
	"context"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// DefaultTimeout bounds a wait: after it the answer goes out anyway.
const DefaultTimeout = 5 * time.Second

// poll is how often the cache is looked at; a look is a map lookup.
const poll = 5 * time.Millisecond

// Version waits until the cache holds the check key names at resourceVersion
// version or later, or holds another object (a different uid) under that
// name, or timeout passes (0 means DefaultTimeout).
func Version(ctx context.Context, c client.Reader, key client.ObjectKey, uid types.UID, version string, timeout time.Duration) {
	want, err := strconv.ParseUint(version, 10, 64)
	if err != nil {
		return
	}
	wait(ctx, timeout, func() bool {
		cur := &v1.Check{}
		err := c.Get(ctx, key, cur)
		if err != nil {
			return !apierrors.IsNotFound(err) // not there yet, or give up on errors
		}
		have, _ := strconv.ParseUint(cur.ResourceVersion, 10, 64)
		return have >= want || (uid != "" && cur.UID != uid)
	})
}

// Gone waits until the cache no longer holds the check key names.
func Gone(ctx context.Context, c client.Reader, key client.ObjectKey, timeout time.Duration) {
	wait(ctx, timeout, func() bool {
		err := c.Get(ctx, key, &v1.Check{})
		return err != nil
	})
}

func wait(ctx context.Context, timeout time.Duration, done func() bool) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for !done() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(poll):
		}
	}
}

// Waiter waits until the manager's cache has caught up with a write. The
// manager uses a Watcher; Poller serves where no informer is at hand.
type Waiter interface {
	// Version waits as the package's Version does.
	Version(ctx context.Context, key client.ObjectKey, uid types.UID, version string, timeout time.Duration)
	// Gone waits as the package's Gone does.
	Gone(ctx context.Context, key client.ObjectKey, timeout time.Duration)
}

// Poller is a Waiter that looks at a cache reader every few milliseconds.
type Poller struct {
	Reader client.Reader
}

// Version waits as the package's Version does.
func (p Poller) Version(ctx context.Context, key client.ObjectKey, uid types.UID, version string, timeout time.Duration) {
	Version(ctx, p.Reader, key, uid, version, timeout)
}

// Gone waits as the package's Gone does.
func (p Poller) Gone(ctx context.Context, key client.ObjectKey, timeout time.Duration) {
	Gone(ctx, p.Reader, key, timeout)
}

var (
	_ Waiter = Poller{}
	_ Waiter = (*Watcher)(nil)
)
