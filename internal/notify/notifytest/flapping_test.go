package notifytest

import (
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/store"
)

var _ = Describe("A flapping check", func() {
	// #46's probe: every flip of a check routed to "*" queued a delivery to
	// each Channel, kept 90 days. The manager notifies 10 flips an hour one
	// by one (the default --flap-limit); past them, one "flapping" notice.
	It("queues at most the limit and one notice per Channel, records every flip, and another namespace is told at once", func() {
		var mu sync.Mutex
		got := map[string][]string{} // the bodies ($STATUS) each path received
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			got[r.URL.Path] = append(got[r.URL.Path], string(b))
			mu.Unlock()
		}))
		DeferCleanup(receiver.Close)
		received := func() map[string][]string {
			mu.Lock()
			defer mu.Unlock()
			out := maps.Clone(got)
			for k, v := range out {
				out[k] = slices.Clone(v)
			}
			return out
		}
		hooks := []string{"hook-1", "hook-2", "hook-3"}
		project := func(prefix string, hooks []string) (string, *v1.Check) {
			ns := harness.NewProject(prefix).Namespace
			harness.AllowEgressNow(ns, egress.Loopback.String())
			for _, name := range hooks {
				url := receiver.URL + "/" + ns + "/" + name
				Expect(harness.Client.Create(ctx, &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ChannelSpec{
					Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{
						Down: &v1.WebhookRequest{URL: url, Body: "$STATUS"}, Up: &v1.WebhookRequest{URL: url, Body: "$STATUS"}}}})).To(Succeed())
			}
			check := backup(ns, "*")
			// The Channels are in the manager's index before anything flips.
			Eventually(func() []string { return harness.Manager.Checks.ChannelNames(ns) }).Should(HaveLen(len(hooks)))
			return ns, check
		}
		ping := func(c *v1.Check, suffix string) {
			resp, err := http.Post(harness.BaseURL+"/ping/"+c.Status.UUID+suffix, "text/plain", nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Body.Close()).To(Succeed())
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
		}
		flappingNS, flapping := project("flap-a-", hooks)
		otherNS, other := project("flap-b-", hooks[:1])

		const flips = 40
		for i := range flips {
			if i%2 == 0 {
				ping(flapping, "/fail")
			} else {
				ping(flapping, "")
			}
		}
		ping(other, "/fail")

		told := slices.Repeat([]string{"down", "up"}, 5) // the 10 notified one by one
		told = append(told, "flapping")
		want := map[string][]string{"/" + otherNS + "/hook-1": {"down"}}
		for _, h := range hooks {
			want["/"+flappingNS+"/"+h] = told
		}
		Eventually(received).Should(Equal(want))
		Consistently(received).WithTimeout(time.Second).Should(Equal(want))

		By("every flip is recorded, and 11 deliveries a Channel queued for 40 flips")
		recorded, err := harness.Manager.Store.Flips(ctx, flapping.UID)
		Expect(err).NotTo(HaveOccurred())
		Expect(recorded).To(HaveLen(flips))
		held, rows := 0, 0
		for _, f := range recorded {
			if f.Held == store.HeldFlapping {
				held++
			}
		}
		for n := int64(1); n <= flips+1; n++ { // the flips and the notice
			byChannel, err := harness.Manager.Store.Deliveries(ctx, flapping.UID, n)
			Expect(err).NotTo(HaveOccurred())
			rows += len(byChannel)
		}
		Expect(held).To(Equal(flips - 10))
		Expect(rows).To(Equal(11*len(hooks)), "one delivery row per flip and Channel would be %d", flips*len(hooks))
	})
})
