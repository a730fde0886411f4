package notifytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/notify"
	"github.com/vigil-operator/vigil/internal/store"
)

var _ = Describe("A group Channel", func() {
	It("takes a check down and up through each of its members, each in its own format, once per member", func() {
		var mu sync.Mutex
		var got []received
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			mu.Lock()
			got = append(got, received{Path: r.URL.Path, All: string(body)})
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"ok": true, "result": {"message_id": 1}}`)
		}))
		DeferCleanup(receiver.Close)
		requests := func(prefix string) func() []received {
			return func() []received {
				mu.Lock()
				defer mu.Unlock()
				var out []received
				for _, r := range got {
					if strings.HasPrefix(r.Path, prefix) {
						out = append(out, r)
					}
				}
				return out
			}
		}

		proj := harness.NewProject("group-")
		ns := proj.Namespace
		harness.AllowEgress(ns, egress.Loopback.String())
		Expect(harness.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "creds", Labels: map[string]string{notify.LabelChannelSecret: "true"}},
			StringData: map[string]string{
				"slack": receiver.URL + "/slack/T000/B000/slacktoken", "pagerduty": "pd-routing-key-0123456789",
				"telegram": "123456:telegram-bot-token", "opsgenie": "opsgenie-api-key-0123",
			}})).To(Succeed())
		ref := func(key string) v1.SecretKeyRef { return v1.SecretKeyRef{Name: "creds", Key: key} }
		for _, ch := range []*v1.Channel{
			{ObjectMeta: metav1.ObjectMeta{Name: "slack"}, Spec: v1.ChannelSpec{Kind: v1.ChannelSlack,
				Slack: &v1.IncomingWebhookChannel{URLSecretRef: ref("slack")}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "pager"}, Spec: v1.ChannelSpec{Kind: v1.ChannelPagerDuty,
				PagerDuty: &v1.PagerDutyChannel{URL: receiver.URL + "/pagerduty", RoutingKeySecretRef: ref("pagerduty")}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "telegram"}, Spec: v1.ChannelSpec{Kind: v1.ChannelTelegram,
				Telegram: &v1.TelegramChannel{URL: receiver.URL, ChatID: "-100200300", BotTokenSecretRef: ref("telegram")}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "opsgenie"}, Spec: v1.ChannelSpec{Kind: v1.ChannelOpsgenie,
				Opsgenie: &v1.OpsgenieChannel{URL: receiver.URL + "/opsgenie", APIKeySecretRef: ref("opsgenie")}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "oncall"}, Spec: v1.ChannelSpec{Kind: v1.ChannelGroup,
				Group: &v1.GroupChannel{Channels: []string{"slack", "pager", "telegram", "opsgenie"}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "typo"}, Spec: v1.ChannelSpec{Kind: v1.ChannelGroup,
				Group: &v1.GroupChannel{Channels: []string{"slack", "pagr"}}}},
		} {
			ch.Namespace = ns
			Expect(harness.Client.Create(ctx, ch)).To(Succeed())
		}
		ready := func(name string) func(Gomega) *metav1.Condition {
			return func(g Gomega) *metav1.Condition {
				cur := &v1.Channel{}
				g.Expect(harness.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cur)).To(Succeed())
				c := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
				g.Expect(c).NotTo(BeNil())
				return c
			}
		}
		Eventually(ready("oncall")).Should(And(HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", ContainSubstring("members: slack, pager, telegram, opsgenie"))))
		Eventually(ready("typo")).Should(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", v1.ReasonMemberNotFound), HaveField("Message", ContainSubstring(`"pagr" not found`))))

		// The check names the group and one of its members: the member
		// hears of it once.
		timeout := int64(3600)
		check := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup"},
			Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60, Channels: []string{"oncall", "slack"}}}
		Expect(harness.Client.Create(ctx, check)).To(Succeed())
		var uuid string
		Eventually(func(g Gomega) string {
			g.Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(check), check)).To(Succeed())
			uuid = check.Status.UUID
			return uuid
		}).ShouldNot(BeEmpty())
		ping := func(suffix string) {
			resp, err := http.Post(harness.BaseURL+"/ping/"+uuid+suffix, "text/plain", strings.NewReader("exit 3: disk full"))
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Body.Close()).To(Succeed())
			Expect(resp.StatusCode).To(Equal(http.StatusOK))
		}
		ping("/fail")

		link := harness.BaseURL + "/checks/" + uuid
		Eventually(requests("/slack/")).Should(ConsistOf(HaveField("All", And(
			ContainSubstring(`is DOWN`), ContainSubstring(`"title_link":"`+link+`"`), ContainSubstring("disk full")))))
		Eventually(requests("/pagerduty")).Should(ConsistOf(HaveField("All", And(
			ContainSubstring(`"event_action":"trigger"`), ContainSubstring(`"dedup_key":"vigil-`+uuid+`"`)))))
		Eventually(requests("/bot123456:telegram-bot-token/sendMessage")).Should(ConsistOf(HaveField("All", And(
			ContainSubstring(`"chat_id":-100200300`), ContainSubstring("DOWN"), ContainSubstring(link)))))
		Eventually(requests("/opsgenie/v2/alerts")).Should(ConsistOf(HaveField("All", And(
			ContainSubstring(`"alias":"vigil-`+uuid+`"`), ContainSubstring(`"priority":"P3"`)))))

		// The outbox holds one delivery per member, none for the group.
		Eventually(func(g Gomega) {
			byChannel, err := harness.Manager.Store.Deliveries(ctx, check.UID, 1)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(byChannel).To(HaveLen(4))
			for _, name := range []string{"slack", "pager", "telegram", "opsgenie"} {
				g.Expect(byChannel).To(HaveKeyWithValue(name, HaveField("State", store.DeliveryDelivered)))
			}
		}).Should(Succeed())

		// Acknowledged: PagerDuty and Opsgenie acknowledge the incident
		// they opened; Slack and Telegram hear nothing of it.
		r := harness.Call("POST", "/api/v3/checks/"+uuid+"/ack", proj.ReadWrite, "")
		Expect(r.Status).To(Equal(http.StatusOK), r.String())
		Eventually(requests("/pagerduty")).Should(ContainElement(HaveField("All", And(
			ContainSubstring(`"event_action":"acknowledge"`), ContainSubstring(`"dedup_key":"vigil-`+uuid+`"`)))))
		Eventually(requests("/opsgenie/v2/alerts/vigil-" + uuid + "/acknowledge")).Should(ConsistOf(HaveField("All",
			ContainSubstring("Acknowledged in Vigil by API key "+proj.ReadWrite[:12]))))
		Consistently(requests("/slack/"), "500ms").Should(HaveLen(1))
		Expect(requests("/bot123456:telegram-bot-token/sendMessage")()).To(HaveLen(1))

		// Up: each member resolves what it opened, or says so.
		ping("")
		Eventually(requests("/slack/")).Should(HaveLen(2))
		Expect(requests("/slack/")()[1].All).To(ContainSubstring("is UP"))
		Eventually(requests("/pagerduty")).Should(ContainElement(HaveField("All", And(
			ContainSubstring(`"event_action":"resolve"`), ContainSubstring(`"dedup_key":"vigil-`+uuid+`"`)))))
		Eventually(requests("/opsgenie/v2/alerts/vigil-" + uuid + "/close")).Should(HaveLen(1))
		Eventually(requests("/bot123456:telegram-bot-token/sendMessage")).Should(HaveLen(2))
		var up struct{ Text string }
		Expect(json.Unmarshal([]byte(requests("/bot123456:telegram-bot-token/sendMessage")()[1].All), &up)).To(Succeed())
		Expect(up.Text).To(ContainSubstring("UP"))
	})
})
