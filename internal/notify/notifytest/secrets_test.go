package notifytest

import (
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
)

// received is a request the receiver got: its path and everything it
// carried, headers and body.
type received struct {
	Path, All string
}

var _ = Describe("Channels with --channel-secrets-require-label", func() {
	It("use only labelled Secrets, and send nothing of the others", func() {
		var mu sync.Mutex
		var got []received
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var all strings.Builder
			_ = r.Header.Write(&all)
			body, _ := io.ReadAll(r.Body)
			all.Write(body)
			mu.Lock()
			got = append(got, received{Path: r.URL.Path, All: all.String()})
			mu.Unlock()
		}))
		DeferCleanup(receiver.Close)
		requests := func() []received {
			mu.Lock()
			defer mu.Unlock()
			return append([]received(nil), got...)
		}

		ns := harness.NewProject("secrets-").Namespace
		harness.AllowEgress(ns, egress.Loopback.String()) // the receiver is on loopback
		secret := func(name, token string, labels map[string]string) *corev1.Secret {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
				StringData: map[string]string{"token": token}}
			Expect(harness.Client.Create(ctx, s)).To(Succeed())
			return s
		}
		// A Secret its owners never meant for Channels, and one they did.
		private := secret("database", "s3cret-database-password", nil)
		secret("hook-token", "s3cret-hook-token", map[string]string{notify.LabelChannelSecret: "true"})
		channel := func(name, secretName string) *v1.Channel {
			ch := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ChannelSpec{
				Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{
					URL:              receiver.URL + "/" + name,
					HeaderSecretRefs: map[string]v1.SecretKeyRef{"X-Token": {Name: secretName, Key: "token"}},
				}}}}
			Expect(harness.Client.Create(ctx, ch)).To(Succeed())
			return ch
		}
		exfiltrate := channel("exfiltrate", private.Name)
		allowed := channel("allowed", "hook-token")
		ready := func(ch *v1.Channel) func(Gomega) *metav1.Condition {
			return func(g Gomega) *metav1.Condition {
				cur := &v1.Channel{}
				g.Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(ch), cur)).To(Succeed())
				c := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
				g.Expect(c).NotTo(BeNil())
				return c
			}
		}
		Eventually(ready(exfiltrate)).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", v1.ReasonSecretNotAllowed),
			HaveField("Message", And(ContainSubstring(`Secret "database"`), ContainSubstring(notify.LabelChannelSecret+`: "true"`)))))
		Eventually(ready(allowed)).Should(HaveField("Status", metav1.ConditionTrue))

		// A check on both channels goes down.
		timeout := int64(3600)
		check := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup"},
			Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60, Channels: []string{exfiltrate.Name, allowed.Name}}}
		Expect(harness.Client.Create(ctx, check)).To(Succeed())
		var uuid string
		Eventually(func(g Gomega) string {
			g.Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(check), check)).To(Succeed())
			uuid = check.Status.UUID
			return uuid
		}).ShouldNot(BeEmpty())
		resp, err := http.Get(harness.BaseURL + "/ping/" + uuid + "/fail")
		Expect(err).NotTo(HaveOccurred())
		Expect(resp.Body.Close()).To(Succeed())
		Expect(resp.StatusCode).To(Equal(http.StatusOK))

		// The labelled Secret's value arrives; the other channel's
		// delivery fails, recorded on it, without a request.
		Eventually(requests).Should(ContainElement(And(
			HaveField("Path", "/allowed"), HaveField("All", ContainSubstring("X-Token: s3cret-hook-token")))))
		Eventually(func(g Gomega) string {
			cur := &v1.Channel{}
			g.Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(exfiltrate), cur)).To(Succeed())
			return cur.Status.LastError
		}).Should(ContainSubstring(`Secret "database" is not labelled ` + notify.LabelChannelSecret))
		for _, r := range requests() {
			Expect(r.Path).To(Equal("/allowed"))
			Expect(r.All).NotTo(ContainSubstring("s3cret-database"))
		}

		// Labelled by who may, the Secret serves the delivery's next
		// attempt.
		labelled := private.DeepCopy()
		labelled.Labels = map[string]string{notify.LabelChannelSecret: "true"}
		Expect(harness.Client.Patch(ctx, labelled, client.MergeFrom(private))).To(Succeed())
		Eventually(requests).Should(ContainElement(And(
			HaveField("Path", "/exfiltrate"), HaveField("All", ContainSubstring("X-Token: s3cret-database-password")))))
	})
})
