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
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

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

var _ = BeforeSuite(func() {
	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	vigilBin = filepath.Join(GinkgoT().TempDir(), "vigil")
	build := exec.CommandContext(context.Background(), "go", "build", "-o", vigilBin, "./cmd/vigil")
	build.Dir = root
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "building vigil: %s", out)
})
