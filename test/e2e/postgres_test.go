package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// renderPostgres starts a throw-away PostgreSQL server and database for the
// container's specs, and returns the kustomize PostgreSQL install with the
// Secret that holds the database's DSN, as a user creates it
// (docs/postgres.md).
func renderPostgres() ([]unstructured.Unstructured, *testenv.Postgres) {
	ctx := context.Background()
	pg, err := testenv.StartPostgres(ctx)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(pg.Remove)
	dsn, err := pg.NewDatabase(ctx)
	Expect(err).NotTo(HaveOccurred())
	objs, err := testenv.KustomizeBuild(ctx, "config/postgres")
	Expect(err).NotTo(HaveOccurred())
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "vigil-system", Name: "vigil-postgres"},
		StringData: map[string]string{"dsn": dsn},
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(secret)
	Expect(err).NotTo(HaveOccurred())
	return append(objs, unstructured.Unstructured{Object: raw}), pg
}

var _ = Describe("Installed with kustomize (config/postgres): replicas on PostgreSQL", Ordered, func() {
	describeInstall("", func(string) []unstructured.Unstructured {
		objs, _ := renderPostgres()
		return objs
	}, false)
})

var _ = Describe("Replicas on PostgreSQL under faults", Ordered, func() {
	var (
		cl  *cluster
		pg  *testenv.Postgres
		ctx = context.Background()
		rw  string
		// hook records the notifications of the crash test's checks.
		hook *recorder
	)

	BeforeAll(func() {
		var objs []unstructured.Unstructured
		objs, pg = renderPostgres()
		cl = startCluster("", objs)
		Expect(cl.replicaCount()).To(Equal(2), "the PostgreSQL install runs two replicas")
		// Room in the ping log for every ping of the crash test, and every
		// flip of its random pings notified on its own: it is about
		// delivery across kills, not about flapping or storms.
		cl.extraArgs = []string{"--ping-log-limit=1000", "--flap-limit=-1", "--storm-threshold=-1"}
		cl.startManager()
		DeferCleanup(func() { cl.stopManager() })
		Expect(cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "faults"}})).To(Succeed())
		cl.allowEgress("faults", egress.Loopback.String()) // the webhook receiver
		rw = cl.vigil("keys", "create", "-n", "faults")
		Eventually(func() int { return cl.api("GET", "/api/v3/checks/", rw, "").Status }).Should(Equal(http.StatusOK))
		hook = newRecorder()
		cl.kubectlApply("faults", fmt.Sprintf(`
apiVersion: monitoring.vigil.dev/v1alpha1
kind: Channel
metadata:
  name: crash-hook
spec:
  kind: webhook
  webhook:
    down: {url: "%[1]s/down?check=$NAME", method: GET}
    up: {url: "%[1]s/up?check=$NAME", method: GET}
`, hook.url))
		Eventually(func(g Gomega) {
			ch := &v1.Channel{}
			g.Expect(cl.c.Get(ctx, client.ObjectKey{Namespace: "faults", Name: "crash-hook"}, ch)).To(Succeed())
			g.Expect(ch.Status.Conditions).To(ContainElement(And(HaveField("Type", v1.ConditionReady), HaveField("Status", metav1.ConditionTrue))))
		}).Should(Succeed())
	})

	AfterEach(func() { cl.expectHealthyManager() })

	It("loses no acknowledged ping and no flip, and doubles none, when a follower and then the leader are SIGKILLed under load", func() {
		// 200 pings a second at most, so that every check's log (1,000)
		// holds all its pings to the end.
		const checks, workers = 16, 8
		pace := time.NewTicker(5 * time.Millisecond)
		defer pace.Stop()
		var uuids []string
		for i := range checks {
			uuids = append(uuids, cl.createCheck(rw, fmt.Sprintf(`{"name": "crash-%d", "timeout": 3600, "channels": "crash-hook"}`, i)).uuid())
		}
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
					<-pace.C
					check, rid := uuids[(w*3+n)%checks], uuid.NewString()
					path := "/ping/" + check
					if n%7 == 6 {
						path += "/fail" // flips: down here, up at the next success
					}
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, cl.httpURL+path+"?rid="+rid, nil)
					resp, err := hc.Do(req)
					ok := err == nil && resp.StatusCode == http.StatusOK
					if err == nil {
						_ = resp.Body.Close()
					}
					mu.Lock()
					outcomes = append(outcomes, pingOutcome{check, rid, ok})
					mu.Unlock()
					if !ok {
						time.Sleep(20 * time.Millisecond) // a client's back-off
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
		progress := func(what string) {
			before := acked()
			Eventually(acked).WithTimeout(time.Minute).Should(BeNumerically(">", before+300), what)
		}

		progress("the load runs on both replicas")
		Eventually(cl.leader).ShouldNot(Equal(-1), "a replica leads")
		leader := cl.leader()
		follower := 1 - leader
		cl.killReplica(follower)
		progress("the leader alone takes the load")
		cl.startReplica(follower)
		progress("the load runs on both replicas again")

		killed := time.Now()
		cl.killReplica(leader)
		progress("the follower takes the load while the leader is gone")
		Eventually(cl.leader).WithTimeout(time.Minute).Should(Equal(follower), "the follower takes the lease")
		GinkgoWriter.Printf("the follower led %s after the leader was killed\n", time.Since(killed).Round(100*time.Millisecond))
		cl.startReplica(leader)
		progress("the load runs on both replicas at the end")
		stop.Store(true)
		wg.Wait()

		var okTotal, stored, unanswered, flipsTotal int
		for i, u := range uuids {
			log, ok, failed := cl.expectStoredOnce(rw, u, outcomes)
			okTotal, stored, unanswered = okTotal+ok, stored+len(log), unanswered+failed

			// Serial numbers are gap-free across the replicas, and the
			// flips are exactly the changes of the pings in serial order.
			sort.Slice(log, func(i, j int) bool { return log[i].N < log[j].N })
			want := []int{}
			state := "new"
			for i, p := range log {
				Expect(p.N).To(Equal(i+1), "serial numbers of %s", u)
				switch {
				case p.Type == "fail" && state != "down":
					want, state = append(want, 0), "down"
				case p.Type == "success" && state == "down":
					want, state = append(want, 1), "up"
				case p.Type == "success":
					state = "up"
				}
			}
			Expect(cl.flipsUp(rw, u)).To(Equal(want), "the flips of %s are the changes of its pings", u)
			flipsTotal += len(want)

			// Every flip is notified (at least once: a leader killed in the
			// middle of a delivery sends it again).
			name := fmt.Sprint("crash-", i)
			downs, ups := countOf(want, 0), countOf(want, 1)
			Eventually(func() bool {
				return hook.count("GET /down?check="+name+" ") >= downs && hook.count("GET /up?check="+name+" ") >= ups
			}).WithTimeout(time.Minute).Should(BeTrue(), "every flip of %s is notified", name)
		}
		var notified int
		for _, r := range hook.requests() {
			if strings.HasPrefix(r, "GET /down?check=crash-") || strings.HasPrefix(r, "GET /up?check=crash-") {
				notified++
			}
		}
		GinkgoWriter.Printf("2 kills of 2 replicas: %d pings acknowledged, %d stored, %d unanswered; %d flips, %d notifications\n",
			okTotal, stored, unanswered, flipsTotal, notified)
	})

	It("answers 503 at once while PostgreSQL is down, in bounded memory, and recovers on its own", func() {
		c := cl.createCheck(rw, `{"name": "db-outage", "timeout": 3600}`)
		Expect(cl.ping(c.PingURL, "GET", "")).To(Equal("OK"))
		rssBefore := cl.first().rss()

		Expect(pg.Stop()).To(Succeed())
		restarted := false
		DeferCleanup(func() {
			if !restarted {
				Expect(pg.Start(ctx)).To(Succeed())
			}
		})
		const pings = 1000
		body := strings.Repeat("x", 10_000)
		var slowest time.Duration
		for i := range pings {
			start := time.Now()
			r := do(http.DefaultClient, "POST", c.PingURL, body, nil)
			slowest = max(slowest, time.Since(start))
			Expect(r.Status).To(Equal(http.StatusServiceUnavailable), "ping %d while PostgreSQL is down: %s", i, r.Body)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.PingURL, nil)
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusServiceUnavailable))
		Expect(resp.Header.Get("Retry-After")).To(Equal("5"))
		api := cl.api("GET", "/api/v3/checks/", rw, "")
		Expect(api.Status).To(Equal(http.StatusServiceUnavailable), api.Body)
		Expect(api.Body).To(ContainSubstring(`"error"`))
		rssDuring := cl.first().rss()
		GinkgoWriter.Printf("PostgreSQL down: %d pings refused, the slowest answer in %s; RSS %d MiB before, %d MiB after\n",
			pings, slowest.Round(time.Millisecond), rssBefore>>20, rssDuring>>20)
		Expect(rssDuring-rssBefore).To(BeNumerically("<", int64(64<<20)), "refused bodies are not kept")

		Expect(pg.Start(ctx)).To(Succeed())
		restarted = true
		Eventually(func() int { return do(http.DefaultClient, "GET", c.PingURL, "", nil).Status }).
			Should(Equal(http.StatusOK), "pings are taken again, with no restart")
		Eventually(func() string { return cl.api("GET", "/api/v3/checks/"+c.uuid(), rw, "").Body }).
			Should(ContainSubstring(`"n_pings":2`), "only acknowledged pings were stored")
		cl.expectHealthyManager()
	})
})

// loggedPing is a ping as the Management API lists it.
type loggedPing struct {
	Type string `json:"type"`
	N    int    `json:"n"`
	RID  string `json:"rid"`
}

func (cl *cluster) pingLog(key, id string) []loggedPing {
	GinkgoHelper()
	r := cl.api("GET", "/api/v3/checks/"+id+"/pings/", key, "")
	Expect(r.Status).To(Equal(http.StatusOK), r.Body)
	var log struct {
		Pings []loggedPing `json:"pings"`
	}
	Expect(json.Unmarshal([]byte(r.Body), &log)).To(Succeed())
	return log.Pings
}

// flipsUp is the check's flips, oldest first, as their "up" values.
func (cl *cluster) flipsUp(key, id string) []int {
	GinkgoHelper()
	r := cl.api("GET", "/api/v3/checks/"+id+"/flips/", key, "")
	Expect(r.Status).To(Equal(http.StatusOK), r.Body)
	var flips []struct {
		Up int `json:"up"`
	}
	Expect(json.Unmarshal([]byte(r.Body), &flips)).To(Succeed())
	up := []int{}
	for i := len(flips) - 1; i >= 0; i-- { // the API lists the newest first
		up = append(up, flips[i].Up)
	}
	return up
}

func countOf(xs []int, x int) int {
	n := 0
	for _, v := range xs {
		if v == x {
			n++
		}
	}
	return n
}

// count is how many requests the recorder saw that start with prefix.
func (r *recorder) count(prefix string) int {
	n := 0
	for _, line := range r.requests() {
		if strings.HasPrefix(line, prefix) {
			n++
		}
	}
	return n
}
