// Package namespaced runs a whole manager under the RBAC that charts/vigil
// renders with watchNamespaces: a Role and a RoleBinding in each listed
// namespace, leader election in the release's namespace, and nothing
// cluster-wide but metrics authentication. The manager runs with
// --namespaces as the chart passes it, and any call the API server refuses
// it (a cluster-wide list, a read in another namespace) fails the suite.
package namespaced

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/delivery"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

// The namespaces the chart lists, and one it does not.
const (
	teamA   = "team-a"
	teamB   = "team-b"
	outside = "outsider"
)

var (
	harness *managertest.Harness
	ctx     = context.Background()
)

func TestNamespaced(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "The manager under the chart's namespaced RBAC")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	harness = managertest.StartUnder(
		// PostgreSQL mode renders the leader-election Role: the manager
		// elects a leader, as its replicas do there.
		managertest.Chart("--set", "watchNamespaces={"+teamA+","+teamB+"}", "--set", "store.postgres.existingSecret=vigil-postgres"),
		manager.Options{
			Namespaces:     []string{teamA, teamB},
			LeaderElection: true, LeaderElectionNamespace: testenv.ManagerNamespace,
			Delivery: delivery.Options{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 500 * time.Millisecond},
			// The webhook receiver listens on loopback, which the egress
			// guard refuses unless the administrator allows it.
			EgressAllow: egress.Loopback,
		})
})

var _ = AfterSuite(func() { harness.Stop() })
