// Package pingtest exercises the ping protocol end to end: a whole manager
// (pings, the Management API and the controllers) against a real
// kube-apiserver and etcd, pinged over HTTP the way jobs ping it, with
// results read back through the Management API and the Check objects.
package pingtest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/ping"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

// bodyLimit is the manager's ping body limit, small so truncation is cheap
// to test.
const bodyLimit = 1000

var (
	harness   *managertest.Harness
	cfg       *rest.Config
	k8sClient client.Client
	mgr       *manager.Manager
	baseURL   string
	smtpAddr  string
	probeAddr string // the manager's /healthz and /readyz
	// httpClient keeps enough idle connections for the concurrency specs.
	httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
)

// TestMain runs the package's tests on each ping store, one pass after the
// other on one control plane.
func TestMain(m *testing.M) { testenv.MainOnEachStore(m) }

func TestPing(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Ping protocol")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	var err error
	smtpAddr, err = testenv.FreeAddr(context.Background())
	Expect(err).NotTo(HaveOccurred())
	probeAddr, err = testenv.FreeAddr(context.Background())
	Expect(err).NotTo(HaveOccurred())
	harness = managertest.Start(manager.Options{
		CheckLimit: 20, SMTPAddr: smtpAddr, SMTPDomain: "pings.example.com", ProbeAddr: probeAddr,
		PingBodyLimit: bodyLimit,
		// The test client connects from 127.0.0.1: it is a trusted proxy
		// of this manager (and not of the replicas started by newReplica).
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
	})
	cfg, k8sClient, mgr, baseURL = harness.Config, harness.Client, harness.Manager, harness.BaseURL
})

var _ = AfterSuite(func() { harness.Stop() })

// newReplica serves pings the way another HTTP handler of the manager
// would, over the same ping store, with its own trusted proxies. It
// returns the replica's base URL.
func newReplica(trusted []netip.Prefix) string {
	h := &ping.Handler{
		Checks:         mgr.Checks,
		TrustedProxies: trusted,
		BodyLimit:      bodyLimit,
		Log:            GinkgoLogr,
	}
	srv := httptest.NewServer(h)
	DeferCleanup(srv.Close)
	return srv.URL
}

// proj is a namespace with a project: a read-write key and a ping key.
type proj struct {
	ns, rw, pingKey string
}

func newProject() proj {
	p := harness.NewProject("ping-")
	return proj{ns: p.Namespace, rw: p.ReadWrite, pingKey: p.PingKey}
}

// create creates a check through the Management API and returns its UUID.
func (p proj) create(body string) string {
	r := harness.Call("POST", "/api/v3/checks/", p.rw, body)
	ExpectWithOffset(1, r.Status).To(Equal(http.StatusCreated), r.String())
	return r.JSON()["uuid"].(string)
}

// check is the check's JSON from the Management API.
func (p proj) check(uuid string) map[string]any {
	r := harness.Call("GET", "/api/v3/checks/"+uuid, p.rw, "")
	ExpectWithOffset(1, r.Status).To(Equal(http.StatusOK), r.String())
	return r.JSON()
}

// pings is the check's ping log from the Management API, newest first.
func (p proj) pings(uuid string) []map[string]any {
	r := harness.Call("GET", "/api/v3/checks/"+uuid+"/pings/", p.rw, "")
	ExpectWithOffset(1, r.Status).To(Equal(http.StatusOK), r.String())
	var out struct {
		Pings []map[string]any `json:"pings"`
	}
	ExpectWithOffset(1, json.Unmarshal(r.Body, &out)).To(Succeed())
	return out.Pings
}

// checkObject reads the Check object with a UUID from the API server.
func (p proj) checkObject(uuid string) *v1.Check {
	var list v1.CheckList
	ExpectWithOffset(1, k8sClient.List(context.Background(), &list, client.InNamespace(p.ns))).To(Succeed())
	for i := range list.Items {
		if checks.UUIDOf(&list.Items[i]) == uuid {
			return &list.Items[i]
		}
	}
	Fail("no Check with UUID " + uuid + " in " + p.ns)
	return nil
}

// logged is the check's ping log in the store, oldest first.
func logged(c *v1.Check) []store.LoggedPing {
	pings, err := mgr.Store.Pings(context.Background(), c.UID, 10_000)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for i, j := 0, len(pings)-1; i < j; i, j = i+1, j-1 {
		pings[i], pings[j] = pings[j], pings[i]
	}
	return pings
}

// pingURL pings path on the suite manager.
func pingURL(method, path, body string) managertest.Response {
	GinkgoHelper()
	return do(method, baseURL+path, body, nil)
}

// do makes a request to a full URL with optional headers.
func do(method, url, body string, header http.Header) managertest.Response {
	GinkgoHelper()
	r, err := tryDo(method, url, body, header)
	Expect(err).NotTo(HaveOccurred())
	return r
}

// tryDo makes a request and returns any transport error instead of failing
// (for goroutines).
func tryDo(method, url, body string, header http.Header) (managertest.Response, error) {
	return managertest.Request(httpClient, method, url, body, header)
}
