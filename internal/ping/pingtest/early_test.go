package pingtest

import (
	"context"
	"net/http"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

// A restarted manager reads every Check before it knows what a ping means
// for its check (36 s for 100,000 Checks, docs/performance.md). On the
// embedded store it acknowledges the pings to the UUIDs the store knows
// meanwhile, and records them once the Checks are read; on PostgreSQL, the
// other replica answers while this one reads.
var _ = Describe("Pings while a restarted manager reads its Checks", func() {
	It("are acknowledged at once and recorded in order, dated when they came, on the embedded store; wait on PostgreSQL", func() {
		p := newProject()
		u := p.create(`{"name": "nightly", "methods": "POST", "timeout": 3600, "grace": 60}`)
		c := p.checkObject(u)
		Eventually(func(g Gomega) bool {
			_, _, ok, err := mgr.Store.Holder(context.Background(), u)
			g.Expect(err).NotTo(HaveOccurred())
			return ok
		}).Should(BeTrue(), "the check's project claims its UUID")

		release := make(chan struct{})
		released := false
		DeferCleanup(func() {
			if !released {
				close(release)
			}
		})
		harness.RestartHoldingChecks(release)
		mgr = harness.Manager
		rid := uuid.NewString()
		// A request the early path does not take waits for the Checks:
		// the API, and a ping to a UUID nobody holds.
		waiting := func(method, path, body string, header http.Header) <-chan managertest.Response {
			out := make(chan managertest.Response, 1)
			go func() {
				defer GinkgoRecover()
				for {
					r, err := tryDo(method, baseURL+path, body, header)
					if err == nil {
						out <- r
						return
					}
					time.Sleep(20 * time.Millisecond) // not listening yet
				}
			}()
			return out
		}

		if mgr.Store.Shared() {
			// PostgreSQL: this replica does not listen until it has read
			// its Checks.
			Consistently(func() error {
				_, err := tryDo("POST", baseURL+"/ping/"+u+"/start", "", nil)
				return err
			}).WithTimeout(time.Second).Should(HaveOccurred())
		} else {
			// Once its store is open, it listens.
			Eventually(func() (int, error) {
				r, err := tryDo("POST", baseURL+"/ping/"+u+"/start", "", nil)
				return r.Status, err
			}).Should(Equal(http.StatusOK))
			expectOK(pingURL("GET", "/ping/"+u, ""))
			expectOK(pingURL("POST", "/ping/"+u+"/fail?rid="+rid, "disk full"))
			Expect(mgr.Store.EarlyPings(context.Background(), 10)).To(HaveLen(3))
		}
		list := waiting("GET", "/api/v3/checks/", "", testenv.APIKey(p.rw))
		unknown := waiting("GET", "/ping/"+uuid.NewString(), "", nil)
		Consistently(list).WithTimeout(time.Second).ShouldNot(Receive())
		Consistently(unknown).ShouldNot(Receive())
		Expect(logged(c)).To(BeEmpty(), "nothing is recorded before the check is read")

		releasedAt := time.Now()
		close(release)
		released = true
		Eventually(list).WithTimeout(time.Minute).Should(Receive(HaveField("Status", http.StatusOK)))
		Eventually(unknown).Should(Receive(HaveField("Status", http.StatusNotFound)))
		if mgr.Store.Shared() {
			expectOK(pingURL("POST", "/ping/"+u+"/start", ""))
			expectOK(pingURL("GET", "/ping/"+u, ""))
			expectOK(pingURL("POST", "/ping/"+u+"/fail?rid="+rid, "disk full"))
		}

		// Recorded as the check's rules say (it takes POST only), in the
		// order they came; the early ones dated before the Checks were read.
		pings := p.pings(u)
		Expect(types(pings)).To(Equal([]string{"fail", "ign", "start"}))
		Expect(pings[0]).To(HaveKeyWithValue("rid", rid))
		log := logged(c)
		Expect(log).To(HaveLen(3))
		Expect(log[2].BodySize).To(Equal(len("disk full")))
		if !mgr.Store.Shared() {
			Expect(log[2].At).To(BeTemporally("<", releasedAt))
		}
		Expect(mgr.Store.EarlyPings(context.Background(), 10)).To(BeEmpty())
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"n_pings": BeEquivalentTo(3), "status": Equal("down")}))
	})
})
