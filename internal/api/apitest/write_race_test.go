package apitest

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

var _ = Describe("Writes racing on one check", func() {
	// As a client of the reference expects (its 4.4 fixed "race
	// conditions when concurrent requests update the same check"): every
	// write that races another on the same check succeeds, and the pings
	// that arrive meanwhile are all counted.
	It("all succeed: 64 parallel updates, pauses, resumes, snoozes and unsnoozes while pings arrive", func() {
		p := newProject()
		created := call("POST", "/api/v3/checks/", p.rw, `{"name": "busy", "timeout": 3600, "grace": 60}`)
		Expect(created.Status).To(Equal(http.StatusCreated), created.String())
		uuid := created.JSON()["uuid"].(string)
		path := "/api/v3/checks/" + uuid

		writes := []func(i int) managertest.Response{
			func(i int) managertest.Response {
				return call("POST", path, p.rw, fmt.Sprintf(`{"desc": "write %d"}`, i))
			},
			func(i int) managertest.Response {
				return call("POST", path, p.rw, fmt.Sprintf(`{"tags": "t%d", "grace": %d}`, i, 60+i))
			},
			func(int) managertest.Response { return call("POST", path+"/pause", p.rw, "") },
			func(int) managertest.Response { return call("POST", path+"/snooze", p.rw, `{"duration": 3600}`) },
			func(int) managertest.Response { return call("DELETE", path+"/snooze", p.rw, "") },
		}
		var mu sync.Mutex
		failed := map[string]int{}
		var pings atomic.Int64
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Go(func() {
				defer GinkgoRecover()
				<-start
				r := writes[i%len(writes)](i)
				if r.Status != http.StatusOK {
					mu.Lock()
					failed[fmt.Sprintf("%d %s", r.Status, r.Body)]++
					mu.Unlock()
				}
			})
		}
		for range 4 {
			wg.Go(func() {
				defer GinkgoRecover()
				<-start
				for range 10 {
					r := call("GET", "/ping/"+uuid, "", "")
					Expect(r.Status).To(Equal(http.StatusOK), r.String())
					pings.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		Expect(failed).To(BeEmpty(), "answers other than 200")

		// Each write took effect: the last desc is one of those written,
		// and every ping is counted.
		final := call("GET", path, p.rw, "").JSON()
		Expect(final["desc"]).To(MatchRegexp(`^write \d+$`))
		Expect(final["n_pings"]).To(BeEquivalentTo(pings.Load()))
	})
})
