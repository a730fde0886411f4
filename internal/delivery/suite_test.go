package delivery_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/testenv"
)

var (
	cluster   *testenv.Cluster
	cfg       *rest.Config
	k8sClient client.WithWatch
	// managerClient and managerReader are the manager's, cached and not:
	// its ServiceAccount under the shipped RBAC, with what the API server
	// forbade it recorded in forbidden.
	managerClient client.Client
	managerReader client.Reader
	// behindClient is a manager client whose cache never catches up with
	// Checks and Channels.
	behindClient client.Client
	forbidden    *testenv.Forbidden
	// stopInformers stops the manager's cache, before the API server.
	stopInformers context.CancelFunc
)

// TestMain runs the package's tests on each ping store, one pass after the
// other on one control plane.
func TestMain(m *testing.M) { testenv.MainOnEachStore(m) }

func TestDelivery(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Delivery")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	var err error
	cluster, err = testenv.Start(context.Background())
	Expect(err).NotTo(HaveOccurred())
	// After AfterSuite, which stops the informers first.
	DeferCleanup(cluster.Stop)
	cfg = cluster.Config
	k8sClient, err = client.NewWithWatch(cfg, client.Options{Scheme: cluster.Scheme})
	Expect(err).NotTo(HaveOccurred())
	managerCfg, f, err := testenv.AsManager(context.Background(), cfg)
	Expect(err).NotTo(HaveOccurred())
	forbidden = f
	// The manager reads Checks and Channels from its informer cache: so
	// does the dispatcher here, and the shipped RBAC allows just that.
	informers, err := cache.New(managerCfg, cache.Options{Scheme: cluster.Scheme})
	Expect(err).NotTo(HaveOccurred())
	var ctx context.Context
	ctx, stopInformers = context.WithCancel(context.Background())
	go func() {
		defer GinkgoRecover()
		Expect(informers.Start(ctx)).To(Succeed())
	}()
	managerClient, err = client.New(managerCfg, client.Options{Scheme: cluster.Scheme, Cache: &client.CacheOptions{Reader: informers}})
	Expect(err).NotTo(HaveOccurred())
	managerReader, err = client.New(managerCfg, client.Options{Scheme: cluster.Scheme})
	Expect(err).NotTo(HaveOccurred())
	// A cache that never holds a Check or a Channel (none carries the
	// label it selects): a cache that has not caught up, for as long as a
	// spec needs.
	never := labels.SelectorFromSet(labels.Set{"vigil.test/never": "true"})
	behind, err := cache.New(managerCfg, cache.Options{Scheme: cluster.Scheme, ByObject: map[client.Object]cache.ByObject{
		&v1.Check{}: {Label: never}, &v1.Channel{}: {Label: never}}})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		Expect(behind.Start(ctx)).To(Succeed())
	}()
	behindClient, err = client.New(managerCfg, client.Options{Scheme: cluster.Scheme, Cache: &client.CacheOptions{Reader: behind}})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	if stopInformers != nil {
		stopInformers()
	}
	if forbidden != nil {
		Expect(forbidden.Requests()).To(BeEmpty(), "the dispatcher made calls the shipped RBAC does not allow")
	}
	Expect(testenv.StopPostgres()).To(Succeed())
})

// ctxT is a context for one spec.
func ctxT() context.Context { return context.Background() }
