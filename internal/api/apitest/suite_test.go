// Package apitest exercises the HTTP surface of a whole manager (the
// Management API, pings and badges, with the controllers running) against
// a real kube-apiserver and etcd, the way clients use it.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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

// response is an HTTP answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json() map[string]any {
	var m map[string]any
	ExpectWithOffset(1, json.Unmarshal(r.body, &m)).To(Succeed(), string(r.body))
	return m
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// call makes a request with an optional key and body.
func call(method, path, key, body string) response {
	req, err := http.NewRequestWithContext(context.Background(), method, baseURL+path, bytes.NewBufferString(body))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	// Every answer, JSON with <, > and & unescaped included.
	ExpectWithOffset(1, resp.Header.Get("X-Content-Type-Options")).To(Equal("nosniff"), "%s %s", method, path)
	b, err := io.ReadAll(resp.Body)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}
