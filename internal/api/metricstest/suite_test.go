// Package metricstest exercises the Prometheus endpoint of a whole manager
// (/projects/<uuid>/metrics/) against a real kube-apiserver and etcd: its
// status codes, its exact exposition of checks in every state, and a real
// Prometheus scraping it. The manager runs on a fake clock, so that a check
// can be in its grace period without the test waiting for it.
package metricstest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	testingclock "k8s.io/utils/clock/testing"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

var (
	harness *managertest.Harness
	// clk is the manager's clock: pings are recorded at its time and
	// statuses computed at it.
	clk = testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
)

func TestMetrics(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Prometheus endpoint")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	harness = managertest.Start(manager.Options{Clock: clk})
})

var _ = AfterSuite(func() { harness.Stop() })

// response is an HTTP answer.
type response struct {
	status int
	header http.Header
	body   string
}

// get makes a GET request (or another method) with the given headers
// (name, value pairs).
func request(method, path string, headers ...string) response {
	req, err := http.NewRequestWithContext(context.Background(), method, harness.BaseURL+path, nil)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return response{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

// apiCall makes a Management API request with a key and a JSON body and
// decodes the JSON answer.
func apiCall(method, path, key, body string) (int, map[string]any) {
	req, err := http.NewRequestWithContext(context.Background(), method, harness.BaseURL+path, bytes.NewBufferString(body))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var m map[string]any
	ExpectWithOffset(1, json.NewDecoder(resp.Body).Decode(&m)).To(Succeed())
	return resp.StatusCode, m
}
