package apitest

import (
	"context"
	"net/http"

	healthchecksio "github.com/kristofferahl/go-healthchecksio/v2"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// The Go client github.com/kristofferahl/go-healthchecksio/v2 (the one the
// Terraform provider for Healthchecks builds on), unchanged, against Vigil.
var _ = Describe("go-healthchecksio/v2 as a client", func() {
	for _, version := range []string{"v1", "v3"} {
		It("creates, lists, updates, pauses and deletes checks and lists channels through /api/"+version, func() {
			p := newProject()
			ch := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "ops"}, Spec: v1.ChannelSpec{
				Kind: v1.ChannelWebhook, DisplayName: "Ops",
				Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "http://127.0.0.1:1/hook"}}}}
			Expect(k8sClient.Create(context.Background(), ch)).To(Succeed())

			hc := healthchecksio.NewClient(p.rw)
			hc.BaseURL = baseURL + "/api/" + version

			created, err := hc.Create(healthchecksio.Healthcheck{
				Name: "Nightly backup", Tags: "prod db", Timeout: 3600, Grace: 600, Unique: []string{"name"},
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(created.Name).To(Equal("Nightly backup"))
			Expect(created.Timeout).To(Equal(3600))
			Expect(created.Status).To(Equal("new"))
			id := created.ID()
			Expect(id).To(MatchRegexp(`^[0-9a-f-]{36}$`))
			if version == "v1" {
				Expect(created.Slug).To(Equal("nightly-backup"), "API v1 derives the slug from the name")
			}

			// The same upsert again updates rather than creates.
			again, err := hc.Create(healthchecksio.Healthcheck{Name: "Nightly backup", Timeout: 7200, Unique: []string{"name"}})
			Expect(err).NotTo(HaveOccurred())
			Expect(again.ID()).To(Equal(id))
			Expect(again.Timeout).To(Equal(7200))

			all, err := hc.GetAll()
			Expect(err).NotTo(HaveOccurred())
			Expect(all).To(HaveLen(1))
			Expect(all[0].PingURL).To(Equal(baseURL + "/ping/" + id))

			var channels []*healthchecksio.HealthcheckChannelResponse
			Eventually(func() ([]*healthchecksio.HealthcheckChannelResponse, error) {
				channels, err = hc.GetAllChannels()
				return channels, err
			}).Should(HaveLen(1))
			Expect(channels[0].Name).To(Equal("Ops"))
			Expect(channels[0].Kind).To(Equal("webhook"))

			updated, err := hc.Update(id, healthchecksio.Healthcheck{
				Name: "Nightly backup", Schedule: "0 3 * * *", Timezone: "Europe/Riga", Grace: 900, Channels: channels[0].ID,
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(updated.Schedule).To(Equal("0 3 * * *"))
			Expect(updated.Timezone).To(Equal("Europe/Riga"))
			Expect(updated.Channels).To(Equal(channels[0].ID))
			Expect(updated.Timeout).To(BeZero(), "a cron check shows no timeout")

			var list v1.CheckList
			Expect(k8sClient.List(context.Background(), &list, client.InNamespace(p.ns))).To(Succeed())
			Expect(list.Items).To(HaveLen(1))
			Expect(*list.Items[0].Spec.Schedule).To(Equal("0 3 * * *"))
			Expect(list.Items[0].Spec.Channels).To(Equal([]string{"ops"}))

			paused, err := hc.Pause(id)
			Expect(err).NotTo(HaveOccurred())
			Expect(paused.Status).To(Equal("paused"))

			deleted, err := hc.Delete(id)
			Expect(err).NotTo(HaveOccurred())
			Expect(deleted.Name).To(Equal("Nightly backup"))
			Expect(call(http.MethodGet, "/api/v3/checks/"+id, p.rw, "").Status).To(Equal(http.StatusNotFound))
		})
	}
})
