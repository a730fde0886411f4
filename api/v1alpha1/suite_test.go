package v1alpha1_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vigil-operator/vigil/internal/testenv"
)

var (
	cluster   *testenv.Cluster
	cfg       *rest.Config
	k8sClient client.Client
	ctx       context.Context
	cancel    context.CancelFunc
)

// TestCRDs runs the schema tests against a real kube-apiserver with the
// generated CRDs installed: what `kubectl apply` accepts and rejects is
// decided by the API server, so only a real one can tell.
func TestCRDs(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "CRD schema suite")
}

var _ = BeforeSuite(func() {
	ctx, cancel = context.WithCancel(context.Background())
	var err error
	cluster, err = testenv.Start(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cluster.Stop)
	cfg = cluster.Config
	k8sClient, err = client.New(cfg, client.Options{Scheme: cluster.Scheme})
	Expect(err).NotTo(HaveOccurred())
})

var _ = AfterSuite(func() {
	cancel()
})
