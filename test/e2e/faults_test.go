package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/testenv"
)

var _ = Describe("The installed manager under faults", Ordered, func() {
	var (
		cl      *cluster
		ctx     = context.Background()
		rw      string
		pingKey string
	)

	BeforeAll(func() {
		objs, err := testenv.KustomizeBuild(ctx, "config/default")
		Expect(err).NotTo(HaveOccurred())
		cl = startCluster("", objs)
		u, err := url.Parse(cl.admin.Host)
		Expect(err).NotTo(HaveOccurred())
		cl.apiProxy = newTCPProxy(u.Host)
		// Room in the ping log for every ping of the crash test.
		cl.extraArgs = []string{"--ping-log-limit=1000"}
		cl.startManager()
		DeferCleanup(func() { cl.stopManager() })
		Expect(cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "faults"}})).To(Succeed())
		rw = cl.vigil("keys", "create", "-n", "faults")
		data, err := project.EnsureProjectSecret(ctx, cl.c, "faults")
		Expect(err).NotTo(HaveOccurred())
		pingKey = string(data[project.DataPingKey])
		Eventually(func() int { return cl.api("GET", "/api/v3/checks/", rw, "").Status }).Should(Equal(http.StatusOK))
	})

	AfterEach(func() { cl.expectHealthyManager() })

	It("loses no acknowledged ping and counts none twice when it is SIGKILLed under load", func() {
		const checks, workers, kills = 8, 8, 3
		var uuids []string
		for i := range checks {
			uuids = append(uuids, cl.createCheck(rw, fmt.Sprintf(`{"name": "crash-%d", "timeout": 3600}`, i)).uuid())
		}
		// Every ping carries a run id of its own, so the log shows which
		// were stored.
		var (
			mu       sync.Mutex
			outcomes []pingOutcome
			stop     atomic.Bool
			wg       sync.WaitGroup
		)
		hc := &http.Client{Timeout: 10 * time.Second}
		for w := range workers {
			wg.Go(func() {
				for n := 0; !stop.Load(); n++ {
					check, rid := uuids[(w+n)%checks], uuid.NewString()
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cl.httpURL+"/ping/"+check+"?rid="+rid, nil)
					resp, err := hc.Do(req)
					ok := err == nil && resp.StatusCode == http.StatusOK
					if err == nil {
						_ = resp.Body.Close()
					}
					mu.Lock()
					outcomes = append(outcomes, pingOutcome{check, rid, ok})
					mu.Unlock()
					if !ok {
						time.Sleep(20 * time.Millisecond) // a client's back-off while it is down
					}
				}
			})
		}
		acked := func() int {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, o := range outcomes {
				if o.ok {
					n++
				}
			}
			return n
		}
		for range kills {
			before := acked()
			Eventually(acked).Should(BeNumerically(">", before+200), "the load is running")
			cl.killReplica(0)
			cl.startReplica(0)
		}
		Eventually(acked).Should(BeNumerically(">", 0))
		stop.Store(true)
		wg.Wait()

		var total, okTotal, lost int
		for _, u := range uuids {
			log, ok, unanswered := cl.expectStoredOnce(rw, u, outcomes)
			total, okTotal, lost = total+len(log), okTotal+ok, lost+unanswered
		}
		GinkgoWriter.Printf("%d kills: %d pings acknowledged, %d stored, %d unanswered (refused while down, or cut off)\n",
			kills, okTotal, total, lost)
		fmt.Fprintf(GinkgoWriter, "stored beyond the OK answers: %d\n", total-okTotal)
	})

	It("keeps acknowledging pings while the API server is unreachable, in bounded memory, and catches status up after", func() {
		c := cl.createCheck(rw, `{"name": "outage", "timeout": 3600}`)
		Expect(cl.ping(c.PingURL, "GET", "")).To(Equal("OK"))
		check := func() *unstructured.Unstructured {
			return cl.checkObject("faults", c.uuid())
		}
		Eventually(func() any { return nPings(check()) }).Should(BeEquivalentTo(1))
		rssBefore := cl.replicas[0].rss()

		cl.apiProxy.block()
		DeferCleanup(cl.apiProxy.unblock)
		const pings = 2000
		body := make([]byte, 10_000) // runitor's default body limit
		for i := range pings {
			r := cl.request("POST", cl.httpURL+"/ping/"+c.uuid(), string(body), nil)
			Expect(r.Status).To(Equal(http.StatusOK), "ping %d while the API server is unreachable: %s", i, r.Body)
		}
		// Creating a check needs the API server: a 503 that says when to
		// try again, not a hang.
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cl.httpURL+"/ping/"+pingKey+"/made-while-down?create=1", nil)
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
		Expect(resp.Header.Get("Retry-After")).NotTo(BeEmpty())
		Expect(cl.api("GET", "/api/v3/checks/"+c.uuid(), rw, "").Body).To(ContainSubstring(fmt.Sprintf(`"n_pings":%d`, pings+1)),
			"the Management API reads the store, and is exact while the API server is away")
		rssDuring := cl.replicas[0].rss()
		GinkgoWriter.Printf("manager RSS %d MiB before, %d MiB after %d pings (%d MiB of bodies) with the API server unreachable\n",
			rssBefore>>20, rssDuring>>20, pings, pings*len(body)>>20)
		Expect(rssDuring-rssBefore).To(BeNumerically("<", int64(64<<20)), "bodies go to the store, not to memory")

		cl.apiProxy.unblock()
		Eventually(func() any { return nPings(check()) }).WithTimeout(2 * time.Minute).Should(BeEquivalentTo(pings + 1))
	})
})

// checkObject is the Check object with that UUID, from the API server.
func (cl *cluster) checkObject(namespace, id string) *unstructured.Unstructured {
	GinkgoHelper()
	var list unstructured.UnstructuredList
	list.SetAPIVersion("monitoring.vigil.dev/v1alpha1")
	list.SetKind("CheckList")
	Expect(cl.c.List(context.Background(), &list, client.InNamespace(namespace))).To(Succeed())
	for i := range list.Items {
		if u, _, _ := unstructured.NestedString(list.Items[i].Object, "status", "uuid"); u == id {
			return &list.Items[i]
		}
		if u, _, _ := unstructured.NestedString(list.Items[i].Object, "spec", "uuid"); u == id {
			return &list.Items[i]
		}
		if string(list.Items[i].GetUID()) == id {
			return &list.Items[i]
		}
	}
	Fail("no Check with UUID " + id)
	return nil
}

func nPings(u *unstructured.Unstructured) int64 {
	n, _, _ := unstructured.NestedInt64(u.Object, "status", "nPings")
	return n
}

// pingOutcome is a ping a load test sent (its run id) and whether it was
// answered OK.
type pingOutcome struct {
	check, rid string
	ok         bool
}

// expectStoredOnce checks a check's ping log against what the load saw:
// every acknowledged ping is in it once, no ping is in it twice, n_pings
// counts it, and n_pings lies between the OK answers and the OK answers
// plus the unanswered ones (a ping stored by a manager killed before it
// could answer is counted, and its client saw no OK). It returns the log
// and the check's OK and unanswered pings.
func (cl *cluster) expectStoredOnce(key, id string, outcomes []pingOutcome) (log []loggedPing, ok, unanswered int) {
	GinkgoHelper()
	log = cl.pingLog(key, id)
	byRID := map[string]int{}
	for _, p := range log {
		byRID[p.RID]++
	}
	for _, o := range outcomes {
		switch {
		case o.check != id:
		case o.ok:
			ok++
			Expect(byRID[o.rid]).To(Equal(1), "acknowledged ping %s is in the log once", o.rid)
		default:
			unanswered++
		}
	}
	for rid, n := range byRID {
		Expect(n).To(Equal(1), "ping %s is in the log %d times", rid, n)
	}
	var c struct {
		NPings int `json:"n_pings"`
	}
	Expect(json.Unmarshal([]byte(cl.api("GET", "/api/v3/checks/"+id, key, "").Body), &c)).To(Succeed())
	Expect(c.NPings).To(Equal(len(log)), "n_pings counts what the log holds")
	Expect(c.NPings).To(BeNumerically(">=", ok))
	Expect(c.NPings).To(BeNumerically("<=", ok+unanswered))
	return log, ok, unanswered
}
