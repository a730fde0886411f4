package projection

import (
	"context"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// TestStaleCache: the informer cache may not yet hold the projector's own
// previous status write. Projecting from that stale copy must still leave
// the API server with the status the store implies: here, a lastDuration
// that the store no longer has is cleared, although the stale copy never
// had it. (A plain merge patch computed against the stale copy omits the
// field and leaves the old value in place: the flake this guards against.)
func TestStaleCache(t *testing.T) {
	ctx := context.Background()
	cl, st := backends(t)

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "stale-"}}
	if err := cl.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	timeout := int64(60)
	c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "nightly"},
		Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60}}
	if err := cl.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	stale := c.DeepCopy() // what a lagging cache still holds
	// The projector's previous write, which the cache has not seen.
	c.Status.LastDuration = &metav1.Duration{Duration: 16 * time.Millisecond}
	if err := cl.Status().Update(ctx, c); err != nil {
		t.Fatal(err)
	}

	cache := interceptor.NewClient(cl, interceptor.Funcs{
		Get: func(ctx context.Context, _ client.WithWatch, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
			stale.DeepCopyInto(obj.(*v1.Check))
			return nil
		},
	})
	// The projector reads specs through the door only to parse them.
	p := &Projector{Client: cache, Writer: cl, Store: st, Checks: &checks.Door{}, Clock: testingclock.NewFakeClock(time.Now())}
	p.init()
	key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}
	if err := p.project(ctx, c.UID, &entry{key: key}, rate.NewLimiter(rate.Inf, 1)); err != nil {
		t.Fatalf("project: %v", err)
	}

	got := &v1.Check{}
	if err := cl.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.LastDuration != nil {
		t.Errorf("lastDuration = %v on the API server; the store has no completed run, so want none", got.Status.LastDuration.Duration)
	}
	if got.Status.LastSyncTime == nil {
		t.Error("status was not written at all")
	}
}

// backends starts a control plane and opens a ping store for t, both
// stopped when it ends.
func backends(t *testing.T) (client.WithWatch, *store.Store) {
	t.Helper()
	ctx := context.Background()
	cluster, err := testenv.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Error(err)
		}
	})
	cl, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: cluster.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	dsn, err := testenv.StoreDSN(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, dsn, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return cl, st
}
