package notifytest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv/mailtest"
)

var _ = Describe("Channels under the default egress policy", func() {
	It("reach no loopback receiver, say EgressDenied, and deliver once the administrator allows their namespace alone", func() {
		var mu sync.Mutex
		var paths []string
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			paths = append(paths, r.URL.Path)
			mu.Unlock()
			_, _ = io.WriteString(w, "internal answer that must not reach a Channel's status")
		}))
		DeferCleanup(receiver.Close)
		requests := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), paths...)
		}
		mail := mailtest.Start()

		// Two projects, each with a webhook and an email Channel at the
		// loopback receivers, and a check on both that goes down.
		type project struct {
			ns    string
			check *v1.Check
		}
		newProject := func(prefix string) project {
			ns := harness.NewProject(prefix).Namespace
			for _, ch := range []*v1.Channel{
				{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"}, Spec: v1.ChannelSpec{
					Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: receiver.URL + "/" + ns + "/down"}}}},
				{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mail"}, Spec: v1.ChannelSpec{
					Kind: v1.ChannelEmail, Email: &v1.EmailChannel{To: []string{"ops@example.com"}, From: "vigil@" + ns + ".example.com",
						Host: "localhost", Port: mail.Port, Security: v1.SMTPNone}}},
			} {
				Expect(harness.Client.Create(ctx, ch)).To(Succeed())
			}
			timeout := int64(3600)
			check := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup"},
				Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60, Channels: []string{"hook", "mail"}}}
			Expect(harness.Client.Create(ctx, check)).To(Succeed())
			Eventually(func(g Gomega) string {
				g.Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(check), check)).To(Succeed())
				return check.Status.UUID
			}).ShouldNot(BeEmpty())
			resp, err := http.Get(harness.BaseURL + "/ping/" + check.Status.UUID + "/fail")
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Body.Close()).To(Succeed())
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
			return project{ns: ns, check: check}
		}
		a, b := newProject("egress-a-"), newProject("egress-b-")

		channel := func(ns, name string) func(Gomega) v1.ChannelStatus {
			return func(g Gomega) v1.ChannelStatus {
				cur := &v1.Channel{}
				g.Expect(harness.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cur)).To(Succeed())
				return cur.Status
			}
		}
		reasons := func(ns, name string) func(Gomega) []string {
			return func(g Gomega) []string {
				var list eventsv1.EventList
				g.Expect(harness.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
				var out []string
				for _, e := range list.Items {
					if e.Regarding.Kind == "Channel" && e.Regarding.Name == name {
						out = append(out, e.Reason)
					}
				}
				return out
			}
		}
		// The manager's own record of the deliveries: attempts so far, while
		// none is delivered.
		attempts := func(p project, channel string) func(Gomega) int {
			return func(g Gomega) int {
				byChannel, err := harness.Manager.Store.Deliveries(ctx, p.check.UID, 1)
				g.Expect(err).NotTo(HaveOccurred())
				if byChannel[channel].State == store.DeliveryDelivered {
					StopTrying(p.ns + "/" + channel + " was delivered").Now()
				}
				return byChannel[channel].Attempts
			}
		}

		for _, p := range []project{a, b} {
			for _, name := range []string{"hook", "mail"} {
				Eventually(channel(p.ns, name)).Should(HaveField("LastError", And(
					ContainSubstring(v1.ReasonEgressDenied+": "), ContainSubstring(" a loopback address, "),
					Not(ContainSubstring("internal answer")))), "%s/%s", p.ns, name)
				Eventually(reasons(p.ns, name)).Should(ContainElement(v1.ReasonEgressDenied), "%s/%s", p.ns, name)
			}
		}
		Expect(requests()).To(BeEmpty(), "the webhook receiver was never connected to")
		sessions := mail.Sessions()
		Expect(sessions).To(BeZero(), "the SMTP server was never connected to")

		// The administrator allows loopback for project a: its pending
		// notifications are delivered on their next attempt.
		harness.AllowEgress(a.ns, egress.Loopback.String())
		Eventually(requests).Should(ContainElement("/" + a.ns + "/down"))
		Eventually(mail.Received).Should(ContainElement(ContainSubstring("vigil@" + a.ns + ".example.com")))
		Eventually(func(g Gomega) store.DeliveryState {
			byChannel, err := harness.Manager.Store.Deliveries(ctx, a.check.UID, 1)
			g.Expect(err).NotTo(HaveOccurred())
			return byChannel["hook"].State
		}).Should(Equal(store.DeliveryDelivered))

		// Project b's allowlist is its own: attempts made after a's
		// delivery, under the same ConfigMap, are still refused. (One
		// delivery is attempted at a time: the second attempt counted from
		// here started after a's delivery.)
		for _, name := range []string{"hook", "mail"} {
			seen := attempts(b, name)(Default)
			Eventually(attempts(b, name)).Should(BeNumerically(">", seen+1), "b/%s is attempted again", name)
			Expect(channel(b.ns, name)(Default).LastError).To(ContainSubstring(v1.ReasonEgressDenied))
		}
		for _, p := range requests() {
			Expect(p).NotTo(HavePrefix("/"+b.ns+"/"), "project b reached the receiver")
		}
		messages := mail.Received()
		for _, m := range messages {
			Expect(strings.Contains(m, b.ns)).To(BeFalse(), "project b reached the SMTP server")
		}
	})
})
