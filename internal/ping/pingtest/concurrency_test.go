package pingtest

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/ping"
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
			s.status, s.err = r.status, err
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

// expectCounted asserts that the check counts exactly ok pings, and that its
// ping log holds the newest min(ok, 100) serials, each once, contiguous.
func expectCounted(p proj, uuid string, ok int64) {
	GinkgoHelper()
	Expect(p.check(uuid)).To(HaveKeyWithValue("n_pings", BeEquivalentTo(ok)))
	Expect(p.checkObject(uuid).Status.NPings).To(Equal(ok))
	h := historyOf(p.checkObject(uuid))
	Expect(h.LastN).To(Equal(ok))
	kept := min(ok, 100)
	got := serials(p.pings(uuid))
	Expect(got).To(Equal(descending(ok, ok-kept+1)))
	stored := make([]int64, 0, len(h.Pings))
	for _, r := range h.Pings {
		stored = append(stored, r.N)
	}
	Expect(sort.SliceIsSorted(stored, func(i, j int) bool { return stored[i] < stored[j] })).To(BeTrue())
	Expect(stored).To(HaveLen(int(kept)))
	Expect(stored[0]).To(Equal(ok - kept + 1))
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

	It("commits pings that arrive together in batches: far fewer history writes than pings", func() {
		u := p.create(`{"name": "batched"}`)
		first := &shot{url: baseURL + "/ping/" + u, check: u}
		fire([]*shot{first}) // the history exists before the watch starts
		Expect(first.status).To(Equal(http.StatusOK))
		obj := p.checkObject(u)
		wc, err := client.NewWithWatch(cfg, client.Options{Scheme: env.Scheme})
		Expect(err).NotTo(HaveOccurred())
		w, err := wc.Watch(context.Background(), &v1.CheckHistoryList{}, client.InNamespace(obj.Namespace),
			client.MatchingFields{"metadata.name": obj.Name})
		Expect(err).NotTo(HaveOccurred())
		defer w.Stop()

		shots := make([]*shot, 200)
		for i := range shots {
			shots[i] = &shot{url: baseURL + "/ping/" + u, check: u}
		}
		fire(shots)
		ok := answered(shots)[u]
		writes := 0
		Eventually(func() int64 {
			for {
				select {
				case ev := <-w.ResultChan():
					h, isHistory := ev.Object.(*v1.CheckHistory)
					if !isHistory {
						continue
					}
					writes++
					if h.LastN == ok+1 {
						return h.LastN
					}
				default:
					return -1
				}
			}
		}).Should(Equal(ok + 1))
		GinkgoWriter.Printf("%d pings stored in %d history writes\n", ok, writes)
		Expect(writes).To(BeNumerically("<=", ok/4), "pings waiting for a write in flight ride in the next one")
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

	It("never lowers the count when another replica's writes overtake its own", func() {
		ctx := context.Background()
		u := p.create(`{"name": "overtaken"}`)
		check := p.checkObject(u)
		other := newRecorder(nil)
		var otherErrs []error
		once := sync.Once{}
		// Between this replica's history write and its status write, the
		// other replica stores two pings, history and status.
		mine := newRecorder(func() {
			once.Do(func() {
				for range 2 {
					_, err := other.Record(ctx, check, ping.Ping{Kind: monitor.PingSuccess, At: time.Now(), Method: "GET", Scheme: "http"})
					otherErrs = append(otherErrs, err)
				}
			})
		})
		rec, err := mine.Record(ctx, check, ping.Ping{Kind: monitor.PingStart, At: time.Now(), Method: "GET", Scheme: "http"})
		Expect(err).NotTo(HaveOccurred())
		Expect(rec.N).To(BeEquivalentTo(1))
		Expect(otherErrs).To(Equal([]error{nil, nil}))

		Expect(historyOf(check).LastN).To(BeEquivalentTo(3))
		Expect(p.checkObject(u).Status.NPings).To(BeEquivalentTo(3))
		Expect(types(p.pings(u))).To(Equal([]string{"success", "success", "start"}))
		Eventually(func() any { return p.check(u)["n_pings"] }).Should(BeEquivalentTo(3))
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("up"), "started": BeFalse()}))
	})
})
