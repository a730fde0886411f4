// Package projecttest exercises project Secrets as the tenant input they
// are, end to end: a whole manager against a real kube-apiserver and etcd,
// pinged over HTTP while one tenant fills its Secrets with key lines. The
// manager runs on a fake clock, so that a day's hold can pass without the
// test waiting for it.
package projecttest

import (
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	testingclock "k8s.io/utils/clock/testing"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

var (
	harness *managertest.Harness
	// clk is the manager's clock: the deadline loop's housekeeping, which
	// prunes passed holds, ticks when it moves.
	clk = testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	// httpClient keeps enough idle connections for the pings in flight.
	httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: time.Minute}
)

// TestMain runs the package's tests on each ping store, one pass after the
// other on one control plane.
func TestMain(m *testing.M) { testenv.MainOnEachStore(m) }

func TestProjectSecrets(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Project Secrets as tenant input")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	harness = managertest.Start(manager.Options{Clock: clk})
})

var _ = AfterSuite(func() { harness.Stop() })
