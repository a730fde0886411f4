package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vigil-operator/vigil/internal/checkindex"
	"github.com/vigil-operator/vigil/internal/checkspec"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/deadline"
	"github.com/vigil-operator/vigil/internal/manager"
	pingrec "github.com/vigil-operator/vigil/internal/ping"
	"github.com/vigil-operator/vigil/internal/projection"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

var (
	env       *envtest.Environment
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
	// clk is the clock of the controllers, the deadline loop and the
	// projector; tests move it instead of sleeping, and the deadline loop
	// looks at due checks each time it moves.
	clk = testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	// st is the ping store.
	st *store.Store
	// managerCache is what the controllers read from.
	managerCache client.Reader
	// recorder records pings as the ping endpoint does.
	recorder *pingrec.Recorder
	// managerConfig reaches the API server as the manager's ServiceAccount,
	// under the shipped RBAC; forbidden records what it was refused.
	managerConfig *rest.Config
	forbidden     *testenv.Forbidden
)

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "Controller suite")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	env, err = testenv.New()
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())
	managerConfig, forbidden, err = testenv.AsManager(ctx, cfg)
	Expect(err).NotTo(HaveOccurred())

	mgr, err := ctrl.NewManager(managerConfig, ctrl.Options{Scheme: env.Scheme, Cache: manager.CacheOptions(nil), Metrics: metricsserver.Options{BindAddress: "0"}})
	Expect(err).NotTo(HaveOccurred())
	managerCache = mgr.GetCache()
	Expect(checkindex.Setup(ctx, mgr.GetFieldIndexer())).To(Succeed())

	// The leader's loops, wired as the manager wires them.
	projector := &projection.Projector{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Clock: clk, Budget: 1000,
		Recorder: mgr.GetEventRecorder("vigil-check"), Log: GinkgoLogr}
	dsn, err := testenv.StoreDSN(ctx, GinkgoT().TempDir())
	Expect(err).NotTo(HaveOccurred())
	st, err = store.Open(ctx, dsn,
		store.Options{OnCommit: func(store.Committed) { projector.Wake() }})
	Expect(err).NotTo(HaveOccurred())
	projector.Store = st
	Expect(mgr.Add(projector)).To(Succeed())
	Expect(mgr.Add(&deadline.Loop{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Store: st, Clock: clk,
		OnDeleted: projector.Forget, Log: GinkgoLogr})).To(Succeed())

	recorder = &pingrec.Recorder{Store: st, Channels: mgr.GetClient()}
	Expect((&controller.ChannelReconciler{
		Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("vigil-channel"), Recheck: time.Second,
	}).SetupWithManager(mgr)).To(Succeed())
	Expect((&controller.CronJobReconciler{Client: mgr.GetClient(), Clock: clk, DefaultTimeZone: "UTC", Store: st,
		Checks: &checkspec.Writer{Client: mgr.GetClient(), Reader: mgr.GetAPIReader()}}).SetupWithManager(mgr)).To(Succeed())
	Expect((&controller.JobReconciler{
		Client: mgr.GetClient(), Recorder: recorder, Store: st, Pods: mgr.GetAPIReader(),
		// envtest runs no kubelet: the test's pods "logged" this.
		Logs: func(_ context.Context, _, pod, container string) ([]byte, error) {
			return []byte("connecting to db\nERROR: " + pod + "/" + container + " could not connect\n"), nil
		},
	}).SetupWithManager(mgr)).To(Succeed())
	Expect((&controller.CheckReconciler{
		Client: mgr.GetClient(), Store: st, Projector: projector, Clock: clk,
		BaseURL: "http://vigil.test", SecretReader: mgr.GetAPIReader(),
	}).SetupWithManager(ctx, mgr, controller.CheckOptions{})).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	cancel()
	if st != nil {
		Expect(st.Close()).To(Succeed())
	}
	Expect(forbidden.Requests()).To(BeEmpty(), "the controllers made calls the shipped RBAC does not allow")
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
	Expect(testenv.StopPostgres()).To(Succeed())
})

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ctrl-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}
