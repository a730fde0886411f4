// Package apitest exercises the HTTP surface of a whole manager (the
// Management API, pings and badges, with the controllers running) against
// a real kube-apiserver and etcd, the way clients use it.
package apitest

import (
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

var (
	harness   *managertest.Harness
	k8sClient client.Client
	baseURL   string
)

// TestMain runs the package's tests on each ping store, one pass after the
// other on one control plane.
func TestMain(m *testing.M) { testenv.MainOnEachStore(m) }

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Management API and pings")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	harness = managertest.Start(manager.Options{CheckLimit: 20})
	k8sClient, baseURL = harness.Client, harness.BaseURL
})

var _ = AfterSuite(func() {
	harness.Stop()
})

// proj is a namespace with a project: read-write and read-only keys and a
// ping key.
type proj struct {
	ns, rw, ro, pingKey string
}

func newProject() proj {
	p := harness.NewProject("proj-")
	return proj{ns: p.Namespace, rw: p.ReadWrite, ro: p.ReadOnly, pingKey: p.PingKey}
}

// call makes a request to the manager with an optional key and body, and
// asserts what every answer carries, JSON with <, > and & unescaped
// included: X-Content-Type-Options: nosniff.
func call(method, path, key, body string) managertest.Response {
	GinkgoHelper()
	r := harness.Call(method, path, key, body)
	Expect(r.Header.Get("X-Content-Type-Options")).To(Equal("nosniff"), "%s %s", method, path)
	return r
}
