package checks_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

// The Door is tested inside the whole manager that builds it, as it ships:
// its cache, its ping store (SQLite, or PostgreSQL under `make test`'s
// second pass), under the manager's RBAC.
var (
	harness *managertest.Harness
	door    *checks.Door
	ctx     = context.Background()
)

// TestMain runs the package's tests on each ping store, one pass after the
// other on one control plane.
func TestMain(m *testing.M) { testenv.MainOnEachStore(m) }

func TestDoor(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(20 * time.Millisecond)
	RunSpecs(t, "Door suite")
}

var _ = BeforeSuite(func() {
	ctrl.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	// One write slot, so that namespaces' writes wait for it (share_test.go).
	harness = managertest.Start(manager.Options{CheckLimit: 7, CheckWrites: checks.WriteShare{Slots: 1, Waiting: waitingShare}})
	door = harness.Manager.Checks
})

var _ = AfterSuite(func() { harness.Stop() })
