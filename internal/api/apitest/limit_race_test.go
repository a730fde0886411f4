package apitest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

var _ = Describe("The check limit under parallel creates", func() {
	// count is how many Checks the namespace holds, read from the API
	// server, not from the manager's cache.
	count := func(ns string) int {
		var list v1.CheckList
		Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		return len(list.Items)
	}

	// race sends every request at once and returns how many answered each
	// status. A request answered 503 (its creation turn did not come
	// within the request's time, on a loaded machine) is sent again, as
	// its Retry-After asks, until it has an answer: the limit must be exact
	// whatever the timing.
	race := func(requests []func() managertest.Response) map[int]int {
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, req := range requests {
			wg.Go(func() {
				defer GinkgoRecover()
				<-start
				r := req()
				// A 503, or a 429 past the project's share of writes waiting,
				// is tried again after its Retry-After, as a client would.
				if r.Status == http.StatusServiceUnavailable || r.Status == http.StatusTooManyRequests {
					Expect(r.Header.Get("Retry-After")).NotTo(BeEmpty(), "a %d without Retry-After: %s", r.Status, r.Body)
					Eventually(func() int { r = req(); return r.Status }).WithTimeout(time.Minute).WithPolling(time.Second).
						ShouldNot(BeElementOf(http.StatusServiceUnavailable, http.StatusTooManyRequests))
				}
				mu.Lock()
				statuses[r.Status]++
				mu.Unlock()
			})
		}
		close(start)
		wg.Wait()
		return statuses
	}

	It("leaves exactly the limit of 100 parallel creates through the API and ?create=1", func() {
		p := newProject() // the suite's default limit: 20
		var requests []func() managertest.Response
		for i := range 50 {
			requests = append(requests,
				func() managertest.Response {
					return call("POST", "/api/v3/checks/", p.rw, fmt.Sprintf(`{"name": "api-%d"}`, i))
				},
				func() managertest.Response {
					return call("GET", fmt.Sprintf("/ping/%s/auto-%d?create=1", p.pingKey, i), "", "")
				})
		}
		statuses := race(requests)
		Expect(count(p.ns)).To(Equal(20), "statuses: %v", statuses)
		Expect(statuses[http.StatusCreated]).To(Equal(20), "statuses: %v", statuses)
		// The API refuses with 403, a ping with 404, as one at the limit.
		Expect(statuses[http.StatusForbidden]+statuses[http.StatusNotFound]).To(Equal(80), "statuses: %v", statuses)
	})

	It("creates one check when many pings race to create the same slug", func() {
		p := newProject()
		var requests []func() managertest.Response
		for range 30 {
			requests = append(requests, func() managertest.Response { return call("GET", "/ping/"+p.pingKey+"/same?create=1", "", "") })
		}
		statuses := race(requests)
		Expect(count(p.ns)).To(Equal(1), "statuses: %v", statuses)
		Expect(statuses).To(Equal(map[int]int{http.StatusCreated: 1, http.StatusOK: 29}))
	})
})
