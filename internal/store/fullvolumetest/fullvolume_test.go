// Package fullvolumetest fills the volume under a whole manager's
// embedded ping store: pings and API writes are answered 503 with
// Retry-After, reads go on, the metric says so, and writing resumes by
// itself once space is freed, with every acknowledged ping kept.
package fullvolumetest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

var (
	harness *managertest.Harness
	vol     string
)

func TestFullVolume(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "A full store volume")
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	// A filesystem that fills: a tmpfs, which needs root (CI runs as
	// root). Without it the suite fails; it never skips.
	vol = filepath.Join(GinkgoT().TempDir(), "vol")
	Expect(os.Mkdir(vol, 0o750)).To(Succeed())
	out, err := exec.CommandContext(context.Background(), "mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", vol).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "mounting a 16 MiB tmpfs for the store needs root (CI runs as root): %s", out)
	harness = managertest.Start(manager.Options{Store: "sqlite:" + filepath.Join(vol, "vigil.db")})
})

var _ = AfterSuite(func() {
	harness.Stop()
	out, err := exec.CommandContext(context.Background(), "umount", vol).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "umount: %s", out)
})

// call makes a request and returns its status, Retry-After and body.
func call(method, url, key, body string) (int, string, string) {
	req, err := http.NewRequestWithContext(context.Background(), method, url, strings.NewReader(body))
	Expect(err).NotTo(HaveOccurred())
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b)
}

// storeFull is the manager's vigil_store_full gauge.
func storeFull() float64 {
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == "vigil_store_full" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

var _ = Describe("A full store volume", func() {
	It("refuses writes with 503 and Retry-After, keeps reads, and resumes once space is freed", func() {
		p := harness.NewProject("full-")
		status, _, body := call("POST", harness.BaseURL+"/api/v3/checks/", p.ReadWrite, `{"name": "backup", "timeout": 3600}`)
		Expect(status).To(Equal(http.StatusCreated), body)
		var check struct {
			UUID    string `json:"uuid"`
			PingURL string `json:"ping_url"`
		}
		Expect(json.Unmarshal([]byte(body), &check)).To(Succeed())
		nPings := func() float64 {
			status, _, body := call("GET", harness.BaseURL+"/api/v3/checks/"+check.UUID, p.ReadOnly, "")
			Expect(status).To(Equal(http.StatusOK), body)
			var c map[string]any
			Expect(json.Unmarshal([]byte(body), &c)).To(Succeed())
			return c["n_pings"].(float64)
		}

		// A file takes all the room but 256 KiB.
		var st syscall.Statfs_t
		Expect(syscall.Statfs(vol, &st)).To(Succeed())
		filler := filepath.Join(vol, "filler")
		Expect(os.WriteFile(filler, make([]byte, int64(st.Bavail)*st.Bsize-256<<10), 0o600)).To(Succeed())
		logBody := strings.Repeat("backup log line\n", 512) // 8 KiB
		acked := 0
		for {
			status, retry, body := call("POST", check.PingURL, "", logBody)
			if status != http.StatusOK {
				Expect(status).To(Equal(http.StatusServiceUnavailable), body)
				Expect(retry).To(Equal("30"))
				Expect(body).To(Equal("the ping store is full, try again later"))
				break
			}
			acked++
			Expect(acked).To(BeNumerically("<", 1000), "the volume never filled")
		}
		Expect(storeFull()).To(Equal(1.0))

		// A smaller write may still fit where the refused ones were
		// begun (SQLite reuses its WAL file's room): a second file takes
		// the last bytes, and bodiless pings the last room in the WAL.
		Expect(syscall.Statfs(vol, &st)).To(Succeed())
		rest := filepath.Join(vol, "rest")
		Expect(os.WriteFile(rest, make([]byte, int64(st.Bavail)*st.Bsize), 0o600)).To(Succeed())
		for {
			status, retry, body := call("POST", check.PingURL, "", "")
			if status != http.StatusOK {
				Expect(status).To(Equal(http.StatusServiceUnavailable), body)
				Expect(retry).To(Equal("30"))
				break
			}
			acked++
			Expect(acked).To(BeNumerically("<", 2000), "the WAL never filled")
		}
		// An API write to the store is refused alike, or fits: never a 500.
		status, retry, body := call("POST", harness.BaseURL+"/api/v3/checks/"+check.UUID+"/pause", p.ReadWrite, "")
		GinkgoWriter.Printf("a pause on the full volume: %d %s\n", status, body)
		if status != http.StatusOK {
			Expect(status).To(Equal(http.StatusServiceUnavailable), body)
			Expect(retry).To(Equal("30"))
			Expect(body).To(ContainSubstring("the ping store is full"))
		}
		// Reads go on, and nothing of a refused ping was recorded.
		Expect(nPings()).To(BeEquivalentTo(acked))

		Expect(os.Remove(filler)).To(Succeed())
		Expect(os.Remove(rest)).To(Succeed())
		status, _, body = call("POST", check.PingURL, "", logBody)
		Expect(status).To(Equal(http.StatusOK), body)
		Expect(nPings()).To(BeEquivalentTo(acked + 1))
		Expect(storeFull()).To(Equal(0.0))
		status, _, body = call("POST", harness.BaseURL+"/api/v3/checks/"+check.UUID+"/resume", p.ReadWrite, "")
		Expect(status).To(BeElementOf(http.StatusOK, http.StatusConflict), body) // conflict: the pause did not fit
	})
})
