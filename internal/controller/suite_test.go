package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/delivery"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

var (
	// harness is a whole manager, as it ships, under its RBAC.
	harness   *managertest.Harness
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
	// clk is the manager's clock: the controllers', the deadline loop's
	// and the projector's; tests move it instead of sleeping. The deadline
	// loop looks at due checks each time it passes a beat of the loop's
	// ticker: every 250 ms from the clock's time when the loop started (a
	// whole second; the harness waits for it after a restart). Steps on
	// that grid, or past a beat, make it look; a step of a microsecond
	// (to a deadline, from just before it) does only from a time on it.
	clk = testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
)

// TestMain runs the package's tests on each ping store, one pass after the
// other on one control plane.
func TestMain(m *testing.M) { testenv.MainOnEachStore(m) }

func TestControllers(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	RunSpecs(t, "Controller suite")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	ctx, cancel = context.WithCancel(context.Background())
	harness = managertest.Start(manager.Options{
		Clock: clk, StatusBudget: 1000, BaseURL: "http://vigil.test", CronJobTimeZone: "UTC", ChannelRecheck: time.Second,
		PastLimitRecheck: time.Second,
		SLAInterval:      time.Minute,
		// Storm control on, past the downs any other spec sends one
		// Channel at once (storm_test.go).
		Delivery: delivery.Options{StormThreshold: 25},
		// envtest runs no kubelet: the test's pods "logged" this.
		PodLogs: func(_ context.Context, _, pod, container string) ([]byte, error) {
			return []byte("connecting to db\nERROR: " + pod + "/" + container + " could not connect\n"), nil
		},
	})
	k8sClient = harness.Client
})

var _ = AfterSuite(func() {
	cancel()
	harness.Stop()
})

// catchUp moves the suite's clock to real time, on a whole second (the
// deadline loop's grid), when it is behind (a check's creation is real
// time, and a Job that started before its check says nothing of it), and
// returns it.
func catchUp() time.Time {
	if now := time.Now().Truncate(time.Second).Add(time.Second); clk.Now().Before(now) {
		clk.SetTime(now)
	}
	return clk.Now()
}

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ctrl-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}
