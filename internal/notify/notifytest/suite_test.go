// Package notifytest runs a whole manager with
// --channel-secrets-require-label and the default egress policy against a
// real kube-apiserver and etcd. It notifies a webhook receiver through
// Channels whose Secrets are labelled and not (without the flag, in every
// other suite, Channels use any Secret of their namespace), and loopback
// receivers (webhook and SMTP) that the egress guard refuses until the
// administrator allows them for the Channels' namespace.
package notifytest

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/delivery"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

var (
	harness *managertest.Harness
	ctx     = context.Background()
)

// TestMain runs the package's tests on each ping store, one pass after the
// other on one control plane.
func TestMain(m *testing.M) { testenv.MainOnEachStore(m) }

func TestNotify(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Channel Secrets and egress")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	harness = managertest.Start(manager.Options{
		ChannelSecretsRequireLabel: true,
		// Retries come quickly, so a Secret labelled later is seen.
		Delivery: delivery.Options{MaxAttempts: 100, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 500 * time.Millisecond},
	})
})

var _ = AfterSuite(func() { harness.Stop() })

// backup creates the Check "backup" in ns (a period of an hour, grace a
// minute) notifying channels, and returns it once it has its ping URL's
// UUID.
func backup(ns string, channels ...string) *v1.Check {
	GinkgoHelper()
	timeout := int64(3600)
	check := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup"},
		Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60, Channels: channels}}
	Expect(harness.Client.Create(ctx, check)).To(Succeed())
	Eventually(func(g Gomega) string {
		g.Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(check), check)).To(Succeed())
		return check.Status.UUID
	}).ShouldNot(BeEmpty())
	return check
}
