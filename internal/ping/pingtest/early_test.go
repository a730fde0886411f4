package pingtest

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

// A restarted manager reads every Check before it knows what a ping means
// for its check (36 s for 100,000 Checks, docs/performance.md). It
// acknowledges the pings to the UUIDs the store knows meanwhile, and
// records them once the Checks are read. On PostgreSQL it does so only
// while no other replica serves; pings another replica took so are
// recorded by the leader.
var _ = Describe("Pings while a restarted manager reads its Checks", func() {
	It("are acknowledged at once and recorded in order, dated when they came", func() {
		p := newProject()
		u := p.create(`{"name": "nightly", "methods": "POST", "timeout": 3600, "grace": 60}`)
		c := p.checkObject(u)
		claimed(u)

		release := restartHoldingChecks()
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

		// Once its store is open, it listens, and it is ready: on
		// PostgreSQL, because no other replica serves.
		Eventually(func() (int, error) { return status("POST", "/ping/"+u+"/start") }).Should(Equal(http.StatusOK))
		Expect(readyz()).To(Equal(http.StatusOK))
		expectOK(pingURL("GET", "/ping/"+u, ""))
		expectOK(pingURL("POST", "/ping/"+u+"/fail?rid="+rid, "disk full"))
		Expect(mgr.Store.EarlyPings(context.Background(), store.EarlyQuery{Limit: 10})).To(HaveLen(3))
		list := waiting("GET", "/api/v3/checks/", "", testenv.APIKey(p.rw))
		unknown := waiting("GET", "/ping/"+uuid.NewString(), "", nil)
		Consistently(list).WithTimeout(time.Second).ShouldNot(Receive())
		Consistently(unknown).ShouldNot(Receive())
		Expect(logged(c)).To(BeEmpty(), "nothing is recorded before the check is read")

		releasedAt := time.Now()
		release()
		Eventually(list).WithTimeout(time.Minute).Should(Receive(HaveField("Status", http.StatusOK)))
		Eventually(unknown).Should(Receive(HaveField("Status", http.StatusNotFound)))

		// Recorded as the check's rules say (it takes POST only), in the
		// order they came; the early ones dated before the Checks were read.
		pings := p.pings(u)
		Expect(types(pings)).To(Equal([]string{"fail", "ign", "start"}))
		Expect(pings[0]).To(HaveKeyWithValue("rid", rid))
		log := logged(c)
		Expect(log).To(HaveLen(3))
		Expect(log[2].BodySize).To(Equal(len("disk full")))
		Expect(log[2].At).To(BeTemporally("<", releasedAt))
		Expect(mgr.Store.EarlyPings(context.Background(), store.EarlyQuery{Limit: 10})).To(BeEmpty())
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"n_pings": BeEquivalentTo(3), "status": Equal("down")}))
	})
})

var _ = Describe("Pings a starting replica took on PostgreSQL", func() {
	It("are recorded by the leader, and a replica takes them only while no other serves", func() {
		if !mgr.Store.Shared() {
			Skip("the embedded store has one replica")
		}
		ctx := context.Background()
		p := newProject()
		u := p.create(`{"name": "hourly", "timeout": 3600, "grace": 60}`)
		c := p.checkObject(u)
		claimed(u)

		// Another replica, starting, took a ping: this one, whole,
		// records it.
		other, err := store.Open(ctx, harness.StoreDSN(), store.Options{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() {
			_ = other.TakeBackWhole(context.Background())
			_ = other.Close()
		})
		took := time.Now().Add(-time.Second).UTC().Truncate(time.Microsecond)
		Expect(other.RecordEarly(ctx, store.EarlyPing{Check: c.UID, Namespace: c.Namespace,
			Ping: store.Ping{Kind: "success", At: took, Method: "GET", Scheme: "http", UA: "curl"}})).To(Succeed())
		Eventually(func() []string { return types(p.pings(u)) }).Should(Equal([]string{"success"}))
		Expect(logged(c)[0].At).To(BeTemporally("==", took))
		Expect(other.EarlyPings(ctx, store.EarlyQuery{Scope: store.ThisReplica, Limit: 10})).To(BeEmpty())

		// While the other says it serves, a restarted replica is not
		// ready (its Service sends it nothing), though it listens.
		speaking, spoke := make(chan struct{}), make(chan struct{})
		Expect(other.SayWhole(ctx)).To(Succeed())
		go func() {
			defer GinkgoRecover()
			defer close(spoke)
			for {
				select {
				case <-speaking:
					return
				case <-time.After(time.Second):
					Expect(other.SayWhole(ctx)).To(Succeed())
				}
			}
		}()
		stopSpeaking := sync.OnceFunc(func() { close(speaking); <-spoke })
		DeferCleanup(stopSpeaking)
		release := restartHoldingChecks()
		Eventually(func() (int, error) { return status("POST", "/ping/"+u+"/start") }).Should(Equal(http.StatusOK))
		Consistently(readyz).WithTimeout(2 * time.Second).Should(Equal(http.StatusInternalServerError))
		stopSpeaking()
		Expect(other.TakeBackWhole(ctx)).To(Succeed())
		Eventually(readyz).Should(Equal(http.StatusOK))
		Expect(mgr.Checks.Ready()).NotTo(BeClosed(), "ready while alone, before its Checks are read")

		release()
		Eventually(mgr.Checks.Ready()).Should(BeClosed())
		Eventually(func() []string { return types(p.pings(u)) }).Should(Equal([]string{"start", "success"}))
		Expect(readyz()).To(Equal(http.StatusOK))
	})
})

// readyz is the manager's readiness, as its probe answers.
func readyz() (int, error) {
	r, err := tryDo("GET", "http://"+probeAddr+"/readyz", "", nil)
	return r.Status, err
}

// status is the status of a request to the manager's server (an error
// while it does not listen).
func status(method, path string) (int, error) {
	r, err := tryDo(method, baseURL+path, "", nil)
	return r.Status, err
}

// claimed waits until the project of the check u claims its UUID in the
// store: what a ping before the cache needs.
func claimed(u string) {
	GinkgoHelper()
	Eventually(func(g Gomega) bool {
		_, _, ok, err := mgr.Store.Holder(context.Background(), u)
		g.Expect(err).NotTo(HaveOccurred())
		return ok
	}).Should(BeTrue(), "the check's project claims its UUID")
}

// restartHoldingChecks restarts the manager behind an API server that
// answers its reads of Checks once release is called (at the latest when
// the spec ends).
func restartHoldingChecks() (release func()) {
	held := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(held) }) }
	DeferCleanup(release)
	harness.RestartHoldingChecks(held)
	mgr = harness.Manager
	return release
}
