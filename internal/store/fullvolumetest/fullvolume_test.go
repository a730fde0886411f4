// Package fullvolumetest fills the volume under a whole manager's
// embedded ping store: pings and API writes are answered 503 with
// Retry-After, reads go on, the metric says so, and writing resumes by
// itself once space is freed, with every acknowledged ping kept.
package fullvolumetest

import (
	"context"
	"encoding/json"
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
		r := harness.Call("POST", "/api/v3/checks/", p.ReadWrite, `{"name": "backup", "timeout": 3600}`)
		Expect(r.Status).To(Equal(http.StatusCreated), r.Text())
		var check struct {
			UUID    string `json:"uuid"`
			PingURL string `json:"ping_url"`
		}
		Expect(json.Unmarshal(r.Body, &check)).To(Succeed())
		// The ping URL names the manager's own HTTP server.
		ping, found := strings.CutPrefix(check.PingURL, harness.BaseURL)
		Expect(found).To(BeTrue(), check.PingURL)
		nPings := func() float64 {
			r := harness.Call("GET", "/api/v3/checks/"+check.UUID, p.ReadOnly, "")
			Expect(r.Status).To(Equal(http.StatusOK), r.Text())
			return r.JSON()["n_pings"].(float64)
		}

		// A file takes all the room but 256 KiB.
		var st syscall.Statfs_t
		Expect(syscall.Statfs(vol, &st)).To(Succeed())
		filler := filepath.Join(vol, "filler")
		Expect(os.WriteFile(filler, make([]byte, int64(st.Bavail)*st.Bsize-256<<10), 0o600)).To(Succeed())
		logBody := strings.Repeat("backup log line\n", 512) // 8 KiB
		acked := 0
		for {
			r := harness.Call("POST", ping, "", logBody)
			if r.Status != http.StatusOK {
				Expect(r.Status).To(Equal(http.StatusServiceUnavailable), r.Text())
				Expect(r.Header.Get("Retry-After")).To(Equal("30"))
				Expect(r.Text()).To(Equal("the ping store is full, try again later"))
				break
			}
			acked++
			Expect(acked).To(BeNumerically("<", 1000), "the volume never filled")
		}

		// A smaller write may still fit where the refused ones were
		// begun (SQLite reuses its WAL file's room): a second file takes
		// the last bytes, and bodiless pings the last room in the WAL.
		Expect(syscall.Statfs(vol, &st)).To(Succeed())
		rest := filepath.Join(vol, "rest")
		Expect(os.WriteFile(rest, make([]byte, int64(st.Bavail)*st.Bsize), 0o600)).To(Succeed())
		for {
			r := harness.Call("POST", ping, "", "")
			if r.Status != http.StatusOK {
				Expect(r.Status).To(Equal(http.StatusServiceUnavailable), r.Text())
				Expect(r.Header.Get("Retry-After")).To(Equal("30"))
				break
			}
			acked++
			Expect(acked).To(BeNumerically("<", 2000), "the WAL never filled")
		}
		// Only now does no write fit: before, a small one of the manager's
		// own (the deadline loop's) could, and say the store writes again.
		Expect(storeFull()).To(Equal(1.0))
		// An API write to the store is refused alike, or fits: never a 500.
		r = harness.Call("POST", "/api/v3/checks/"+check.UUID+"/pause", p.ReadWrite, "")
		GinkgoWriter.Printf("a pause on the full volume: %s\n", r)
		if r.Status != http.StatusOK {
			Expect(r.Status).To(Equal(http.StatusServiceUnavailable), r.Text())
			Expect(r.Header.Get("Retry-After")).To(Equal("30"))
			Expect(r.Text()).To(ContainSubstring("the ping store is full"))
		}
		// Reads go on, and nothing of a refused ping was recorded.
		Expect(nPings()).To(BeEquivalentTo(acked))

		Expect(os.Remove(filler)).To(Succeed())
		Expect(os.Remove(rest)).To(Succeed())
		r = harness.Call("POST", ping, "", logBody)
		Expect(r.Status).To(Equal(http.StatusOK), r.Text())
		Expect(nPings()).To(BeEquivalentTo(acked + 1))
		Expect(storeFull()).To(Equal(0.0))
		r = harness.Call("POST", "/api/v3/checks/"+check.UUID+"/resume", p.ReadWrite, "")
		Expect(r.Status).To(BeElementOf(http.StatusOK, http.StatusConflict), r.Text()) // conflict: the pause did not fit
	})
})
