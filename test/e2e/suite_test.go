// Package e2e runs Vigil as it is installed: the install is rendered (the
// kustomize config/default and the Helm chart with its default values),
// applied to a real kube-apiserver and etcd (envtest) except for the
// workload, and the real `vigil manager` binary runs with the arguments and
// environment of the workload's container, as its own ServiceAccount with a
// token from the TokenRequest API. Every feature is then driven the way
// users drive it: kubectl, the Management API, pings over HTTP, a webhook, a
// CronJob's Jobs, badges and metrics. Any "forbidden" in the manager's log,
// or any exit, fails the suite.
package e2e

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/testenv"
)

// vigilBin is the vigil binary under test, built once for the suite.
var vigilBin string

func TestInstall(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(100 * time.Millisecond)
	RunSpecs(t, "Install end to end")
}

// The binary (testenv.Vigil) is found, or built, by the first process and
// shared: `make test` runs the installs side by side (ginkgo -procs), each
// Ordered container on one process, and plain `go test` runs them one
// after the other.
var _ = SynchronizedBeforeSuite(func() []byte {
	bin, err := testenv.Vigil(context.Background())
	Expect(err).NotTo(HaveOccurred())
	return []byte(bin)
}, func(bin []byte) {
	vigilBin = string(bin)
	// The test's own clients log through controller-runtime: shown with a
	// failing spec, and not warned about on every process.
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter)))
})
