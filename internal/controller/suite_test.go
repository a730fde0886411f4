package controller_test

import (
	"context"
	"sync/atomic"
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

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checkindex"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/history"
	"github.com/vigil-operator/vigil/internal/manager"
	pingrec "github.com/vigil-operator/vigil/internal/ping"
	"github.com/vigil-operator/vigil/internal/testenv"
)

var (
	env       *envtest.Environment
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
	// clk is the controllers' clock; tests move it instead of sleeping.
	clk = testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	// histories is the history store the controllers share.
	histories *history.Store
	// restConfig reaches the test API server.
	restConfig *rest.Config
	// managerCache is what the controllers read from.
	managerCache client.Reader
	// recorder records pings as the ping endpoint does.
	recorder *pingrec.Recorder
	// beforeStatusPatch, when set, is called with the check whose status the
	// check controller is about to patch.
	beforeStatusPatch atomic.Pointer[func(*v1.Check)]
	// forbidden records what the API server refused the controllers, which
	// run as the manager's ServiceAccount under the shipped RBAC.
	forbidden *testenv.Forbidden
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
	restConfig = cfg
	k8sClient, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())

	managerCfg, forbiddenReqs, err := testenv.AsManager(ctx, cfg)
	Expect(err).NotTo(HaveOccurred())
	forbidden = forbiddenReqs
	mgr, err := ctrl.NewManager(managerCfg, ctrl.Options{Scheme: env.Scheme, Cache: manager.CacheOptions(nil), Metrics: metricsserver.Options{BindAddress: "0"}})
	Expect(err).NotTo(HaveOccurred())
	managerCache = mgr.GetCache()
	Expect((&controller.ChannelReconciler{
		Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(),
		Recorder: mgr.GetEventRecorder("vigil-channel"), Recheck: time.Second,
	}).SetupWithManager(mgr)).To(Succeed())
	Expect(checkindex.Setup(ctx, mgr.GetFieldIndexer())).To(Succeed())
	histories = &history.Store{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Now: clk.Now}
	recorder = &pingrec.Recorder{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), History: histories}
	Expect((&controller.CronJobReconciler{Client: mgr.GetClient(), Clock: clk, DefaultTimeZone: "UTC"}).SetupWithManager(mgr)).To(Succeed())
	Expect((&controller.JobReconciler{
		Client: mgr.GetClient(), Recorder: recorder, History: histories, Pods: mgr.GetAPIReader(),
		// envtest runs no kubelet: the test's pods "logged" this.
		Logs: func(_ context.Context, _, pod, container string) ([]byte, error) {
			return []byte("connecting to db\nERROR: " + pod + "/" + container + " could not connect\n"), nil
		},
	}).SetupWithManager(mgr)).To(Succeed())
	// The check controller's status writes pass a hook first, so that a
	// test can land a competing write just before one.
	Expect((&controller.CheckReconciler{
		Client: testenv.BeforeStatusPatch(mgr.GetClient(), func(o client.Object) {
			if hook := beforeStatusPatch.Load(); hook != nil {
				if check, ok := o.(*v1.Check); ok {
					(*hook)(check)
				}
			}
		}),
		History:      histories,
		Clock:        clk,
		Recorder:     mgr.GetEventRecorder("vigil-check"),
		BaseURL:      "http://vigil.test",
		SecretReader: mgr.GetAPIReader(),
	}).SetupWithManager(ctx, mgr, controller.CheckOptions{})).To(Succeed())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
})

var _ = AfterSuite(func() {
	cancel()
	Expect(forbidden.Requests()).To(BeEmpty(), "the controllers made calls the shipped RBAC does not allow")
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ctrl-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}
