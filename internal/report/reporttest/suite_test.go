// Package reporttest runs a whole manager on a fake clock against a real
// kube-apiserver and etcd, with an SMTP server on loopback: an email
// Channel that asks for weekly reports is sent one after each week, once,
// across a restart of the manager, and again after a failed attempt.
package reporttest

import (
	"context"
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
	ctx     = context.Background()
	// clk is the manager's clock: pings, deadlines and report periods
	// follow it.
	clk = testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
)

// TestMain runs the package's tests on each ping store, one pass after the
// other on one control plane.
func TestMain(m *testing.M) { testenv.MainOnEachStore(m) }

func TestReports(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Reports")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	harness = managertest.Start(manager.Options{Clock: clk})
})

var _ = AfterSuite(func() { harness.Stop() })
