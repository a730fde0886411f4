package notifytest

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/store"
)

var _ = Describe("A webhook template that expands past its bound", func() {
	// #46's probe: a body template of 300 × $BODY_JSON, and an anonymous
	// fail ping of 10 kB of control bytes, made one request of 18 MB; a
	// 64 KiB template of them would make 393 MB, past the manager's memory.
	It("fails for good, saying so, builds no request, and another namespace's webhook is delivered", func() {
		var mu sync.Mutex
		got := map[string][]byte{}
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			got[r.URL.Path] = b
			mu.Unlock()
		}))
		DeferCleanup(receiver.Close)
		received := func(path string) func() []byte {
			return func() []byte {
				mu.Lock()
				defer mu.Unlock()
				return got[path]
			}
		}

		failing := func(prefix, body string) (string, *v1.Check) {
			ns := harness.NewProject(prefix).Namespace
			harness.AllowEgressNow(ns, egress.Loopback.String())
			Expect(harness.Client.Create(ctx, &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"}, Spec: v1.ChannelSpec{
				Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: receiver.URL + "/" + ns, Body: body}}}})).To(Succeed())
			check := backup(ns, "hook")
			resp, err := http.Post(harness.BaseURL+"/ping/"+check.Status.UUID+"/fail", "text/plain",
				strings.NewReader(strings.Repeat("\x01", 10_000)))
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Body.Close()).To(Succeed())
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			return ns, check
		}
		hostileNS, hostile := failing("bounds-a-", strings.Repeat("$BODY_JSON", 300))
		otherNS, _ := failing("bounds-b-", "$NAME is $STATUS")

		Eventually(received("/" + otherNS)).Should(Equal([]byte("backup is down")))
		Eventually(func(g Gomega) v1.ChannelStatus {
			cur := &v1.Channel{}
			g.Expect(harness.Client.Get(ctx, client.ObjectKey{Namespace: hostileNS, Name: "hook"}, cur)).To(Succeed())
			return cur.Status
		}).Should(HaveField("LastError", ContainSubstring("the webhook body: the template expands past its bound: it expands to more than 1048576 bytes")))
		// Given up at once: a permanent error, one attempt, never retried.
		Eventually(func(g Gomega) store.Delivery {
			byChannel, err := harness.Manager.Store.Deliveries(ctx, hostile.UID, 1)
			g.Expect(err).NotTo(HaveOccurred())
			return byChannel["hook"]
		}).Should(And(HaveField("State", store.DeliveryFailed), HaveField("Attempts", 1)))
		Expect(received("/"+hostileNS)()).To(BeNil(), "no request was sent")
	})
})

var _ = Describe("Channels past their namespace's limit", func() {
	// #46's probe: 100 Channels and one check routed to "*" queued 100
	// outbox rows a flip. Past the limit, the newest Channels get none.
	It("get no notification and say why, while another namespace's Channels all do", func() {
		var mu sync.Mutex
		got := map[string]int{}
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			got[r.URL.Path]++
			mu.Unlock()
		}))
		DeferCleanup(receiver.Close)
		received := func() map[string]int {
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(got)
		}
		hooks := []string{"hook-1", "hook-2", "hook-3"}
		flipping := func(prefix string, limit int) (string, *v1.Check) {
			ns := harness.NewProject(prefix).Namespace
			harness.AllowEgressNow(ns, egress.Loopback.String())
			if limit > 0 {
				harness.SetObjectLimit(ns, project.Channels, limit)
			}
			for _, name := range hooks { // created in this order: the ties of a second go by name
				Expect(harness.Client.Create(ctx, &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ChannelSpec{
					Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: receiver.URL + "/" + ns + "/" + name}}}})).To(Succeed())
			}
			check := backup(ns, "*")
			return ns, check
		}
		hostileNS, hostile := flipping("chlimit-a-", 2)
		otherNS, other := flipping("chlimit-b-", 0)

		By("the newest Channel is not Ready, with a Warning Event, before anything flips")
		Eventually(func(g Gomega) {
			ch := &v1.Channel{}
			g.Expect(harness.Client.Get(ctx, client.ObjectKey{Namespace: hostileNS, Name: "hook-3"}, ch)).To(Succeed())
			g.Expect(ch.Status.Conditions).To(ContainElement(And(HaveField("Type", v1.ConditionReady),
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.ReasonLimitExceeded),
				HaveField("Message", ContainSubstring("more than 2 Channels")))))
			var events eventsv1.EventList
			g.Expect(harness.Client.List(ctx, &events, client.InNamespace(hostileNS))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", v1.ReasonLimitExceeded),
				HaveField("Regarding.Name", "hook-3"), HaveField("Note", ContainSubstring("--channel-limit")))))
		}).Should(Succeed())
		for _, name := range hooks[:2] {
			ch := &v1.Channel{}
			Expect(harness.Client.Get(ctx, client.ObjectKey{Namespace: hostileNS, Name: name}, ch)).To(Succeed())
			Expect(ch.Status.Conditions).NotTo(ContainElement(HaveField("Reason", v1.ReasonLimitExceeded)), name)
		}

		for _, c := range []*v1.Check{hostile, other} {
			resp, err := http.Post(harness.BaseURL+"/ping/"+c.Status.UUID+"/fail", "text/plain", nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Body.Close()).To(Succeed())
		}
		want := map[string]int{"/" + hostileNS + "/hook-1": 1, "/" + hostileNS + "/hook-2": 1,
			"/" + otherNS + "/hook-1": 1, "/" + otherNS + "/hook-2": 1, "/" + otherNS + "/hook-3": 1}
		Eventually(received).Should(Equal(want))
		// The flip queued no delivery for the Channel past the limit.
		deliveries, err := harness.Manager.Store.Deliveries(ctx, hostile.UID, 1)
		Expect(err).NotTo(HaveOccurred())
		Expect(deliveries).To(HaveLen(2))
		Expect(deliveries).NotTo(HaveKey("hook-3"))
		Consistently(received).WithTimeout(time.Second).Should(Equal(want))
	})
})
