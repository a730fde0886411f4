package notify

import (
	"context"
	"time"

	"golang.org/x/sync/singleflight"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reading a Channel's Secret for each notification costs one request to
// the API server, within the manager's shared client budget (50 a second):
// a wave of 10,000 downs routed to one Slack Channel read its Secret 10,000
// times, and the notifications and every Check status write queued behind
// those reads. The manager does not watch Secrets (it would hold every
// Secret of the cluster), so it keeps the Secrets it has just read for a
// few seconds instead.
const (
	// SecretTTL is how long a Secret read for a Channel is used again: an
	// edited or deleted Secret is seen within it.
	SecretTTL = 10 * time.Second
	// secretsKept bounds the Secrets kept at once, the least recently
	// used going first.
	secretsKept = 512
	// maxSecretKept is the largest Secret kept, its data's bytes: a
	// Channel's Secret holds a token or a URL, and larger ones are read
	// each time rather than held (512 of them at most 8 MiB).
	maxSecretKept = 16 << 10
)

// MaxSecretKept is the largest Secret RecentSecrets keeps, for the tests.
const MaxSecretKept = maxSecretKept

// RecentSecrets reads Secrets through r, keeping each one read for ttl
// (SecretTTL in the manager), and reads a Secret once however many deliveries ask for it at
// the same moment. Errors are not kept: a Secret that is missing or not
// allowed is asked for again next time. Lists pass through.
func RecentSecrets(r client.Reader, ttl time.Duration) client.Reader {
	return &recentSecrets{r: r, ttl: ttl, kept: cache.NewLRUExpireCache(secretsKept)}
}

type recentSecrets struct {
	r      client.Reader
	ttl    time.Duration
	kept   *cache.LRUExpireCache
	flight singleflight.Group
}

func (c *recentSecrets) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s, ok := obj.(*corev1.Secret)
	if !ok || len(opts) > 0 {
		return c.r.Get(ctx, key, obj, opts...)
	}
	if v, ok := c.kept.Get(key); ok {
		v.(*corev1.Secret).DeepCopyInto(s)
		return nil
	}
	// One read for every delivery waiting on it, not tied to the first
	// one's context: its cancellation must not fail the others.
	v, err, _ := c.flight.Do(key.String(), func() (any, error) {
		// A read that ended between Get above and Do left its Secret:
		// without this look, a delivery that missed the cache just before
		// that read was kept would read the Secret a second time.
		if v, ok := c.kept.Get(key); ok {
			return v, nil
		}
		read := &corev1.Secret{}
		readCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := c.r.Get(readCtx, key, read); err != nil {
			return nil, err
		}
		if size(read) <= maxSecretKept {
			c.kept.Add(key, read, c.ttl)
		}
		return read, nil
	})
	if err != nil {
		return err
	}
	v.(*corev1.Secret).DeepCopyInto(s)
	return nil
}

func (c *recentSecrets) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.r.List(ctx, list, opts...)
}

// size is the bytes of a Secret's data.
func size(s *corev1.Secret) int {
	n := 0
	for k, v := range s.Data {
		n += len(k) + len(v)
	}
	return n
}
