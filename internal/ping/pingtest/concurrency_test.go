package pingtest

import (
	"net/http"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// shot is one ping to fire: where, and the answer it got.
type shot struct {
	url    string
	check  string
	status int
	err    error
}

// fire sends every shot at once (each in its own goroutine, released
// together) and waits for all answers.
func fire(shots []*shot) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for _, s := range shots {
		wg.Go(func() {
			<-start
			r, err := tryDo("GET", s.url, "", nil)
			s.status, s.err = r.Status, err
		})
	}
	close(start)
	wg.Wait()
}

// answered counts, per check, the shots answered 200 OK, and checks that
// every other answer is a retryable 503.
func answered(shots []*shot) map[string]int64 {
	GinkgoHelper()
	ok := map[string]int64{}
	for _, s := range shots {
		Expect(s.err).NotTo(HaveOccurred())
		Expect(s.status).To(BeElementOf(http.StatusOK, http.StatusServiceUnavailable))
		if s.status == http.StatusOK {
			ok[s.check]++
		}
	}
	GinkgoWriter.Printf("stored %v of %d pings\n", ok, len(shots))
	return ok
}

// expectCounted asserts that the check counts exactly ok pings, that its
// ping log holds the newest serials up to ok, each once, contiguous, and
// that its status (a projection) catches up with the count.
func expectCounted(p proj, uuid string, ok int64) {
	GinkgoHelper()
	Expect(p.check(uuid)).To(HaveKeyWithValue("n_pings", BeEquivalentTo(ok)))
	kept := min(ok, 100)
	Expect(serials(p.pings(uuid))).To(Equal(descending(ok, ok-kept+1)))
	var stored []int64
	for _, r := range logged(p.checkObject(uuid)) {
		stored = append(stored, r.N)
	}
	Expect(stored[len(stored)-1]).To(Equal(ok))
	for i := 1; i < len(stored); i++ {
		Expect(stored[i]).To(Equal(stored[i-1]+1), "serials %v", stored)
	}
	Eventually(func() int64 { return p.checkObject(uuid).Status.NPings }).Should(Equal(ok))
}

var _ = Describe("Concurrent pings", func() {
	var p proj
	BeforeEach(func() { p = newProject() })

	It("counts each of 200 simultaneous pings to one check exactly once", func() {
		u := p.create(`{"name": "hot"}`)
		shots := make([]*shot, 200)
		for i := range shots {
			shots[i] = &shot{url: baseURL + "/ping/" + u, check: u}
		}
		fire(shots)
		ok := answered(shots)[u]
		Expect(ok).To(BeNumerically(">", 150), "most pings are stored, not refused")
		expectCounted(p, u, ok)
		Expect(p.check(u)).To(HaveKeyWithValue("status", "up"))
	})

	It("commits pings that arrive together in batches: far fewer transactions than pings", func() {
		u := p.create(`{"name": "batched"}`)
		before := mgr.Store.Stats()
		shots := make([]*shot, 200)
		for i := range shots {
			shots[i] = &shot{url: baseURL + "/ping/" + u, check: u}
		}
		fire(shots)
		ok := answered(shots)[u]
		after := mgr.Store.Stats()
		commits := after.Commits - before.Commits
		GinkgoWriter.Printf("%d pings stored in %d transactions\n", ok, commits)
		Expect(commits).To(BeNumerically("<=", ok/4), "pings waiting for a commit in flight ride in the next one")
	})

	It("counts simultaneous pings to several checks independently", func() {
		uuids := make([]string, 5)
		for i := range uuids {
			uuids[i] = p.create(`{}`)
		}
		var shots []*shot
		for round := range 40 {
			for i, u := range uuids {
				suffix := ""
				if (round+i)%4 == 0 {
					suffix = "/log"
				}
				shots = append(shots, &shot{url: baseURL + "/ping/" + u + suffix, check: u})
			}
		}
		fire(shots)
		byCheck := answered(shots)
		for _, u := range uuids {
			expectCounted(p, u, byCheck[u])
		}
	})

	It("loses and doubles no ping when independent replicas record the same check at once", func() {
		u := p.create(`{"name": "shared"}`)
		servers := []string{baseURL, newReplica(nil), newReplica(nil)}
		var all []*shot
		for range 3 {
			var shots []*shot
			for i := range 60 {
				suffix := ""
				switch i % 6 {
				case 1:
					suffix = "/start"
				case 4:
					suffix = "/log"
				}
				for _, srv := range servers {
					shots = append(shots, &shot{url: srv + "/ping/" + u + suffix, check: u})
				}
			}
			fire(shots)
			all = append(all, shots...)
		}
		ok := answered(all)[u]
		Expect(ok).To(BeNumerically(">", int64(len(all))*3/4), "most pings are stored, not refused")
		expectCounted(p, u, ok)
	})

	It("answers a ping only once it is stored with the flip it causes", func() {
		u := p.create(`{"name": "flipped"}`)
		expectOK(pingURL("GET", "/ping/"+u, ""))
		expectOK(pingURL("GET", "/ping/"+u+"/fail", ""))
		// Right after the answer, as the reference records flips with the
		// ping.
		Expect(harness.Call("GET", "/api/v3/checks/"+u+"/flips/", p.rw, "").Text()).To(MatchRegexp(`^\[\{"timestamp":"[^"]+","up":0\}\]$`))
		expectOK(pingURL("GET", "/ping/"+u, ""))
		Expect(harness.Call("GET", "/api/v3/checks/"+u+"/flips/", p.rw, "").Text()).To(MatchRegexp(`^\[\{"timestamp":"[^"]+","up":1\},\{"timestamp":"[^"]+","up":0\}\]$`))
	})
})
