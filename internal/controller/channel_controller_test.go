package controller_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// readyCondition returns the channel's Ready condition once it is current.
func readyCondition(key client.ObjectKey) func(Gomega) *metav1.Condition {
	return func(g Gomega) *metav1.Condition {
		var ch v1.Channel
		g.Expect(k8sClient.Get(ctx, key, &ch)).To(Succeed())
		g.Expect(ch.Status.ObservedGeneration).To(Equal(ch.Generation))
		c := meta.FindStatusCondition(ch.Status.Conditions, v1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(ch.Generation))
		return c
	}
}

func slackChannel(ns string) *v1.Channel {
	return &v1.Channel{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ops-slack"},
		Spec: v1.ChannelSpec{Kind: v1.ChannelSlack, DisplayName: "Ops Slack",
			Slack: &v1.IncomingWebhookChannel{URLSecretRef: v1.SecretKeyRef{Name: "slack", Key: "url"}}},
	}
}

var _ = Describe("Channel reconciler", func() {
	It("marks a webhook channel without Secrets ready", func() {
		ns := newNamespace()
		ch := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hook"}, Spec: v1.ChannelSpec{
			Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "http://127.0.0.1:9/down"}}}}
		Expect(k8sClient.Create(ctx, ch)).To(Succeed())
		Eventually(readyCondition(client.ObjectKeyFromObject(ch))).Should(And(
			HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", v1.ReasonChannelReady)))
	})

	It("reports a missing Secret, then recovers when it appears", func() {
		ns := newNamespace()
		ch := slackChannel(ns)
		Expect(k8sClient.Create(ctx, ch)).To(Succeed())
		key := client.ObjectKeyFromObject(ch)
		Eventually(readyCondition(key)).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", v1.ReasonSecretNotFound),
			HaveField("Message", ContainSubstring(`Secret "slack" not found`))))

		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
			StringData: map[string]string{"url": "https://hooks.slack.com/services/T/B/X"}})).To(Succeed())
		Eventually(readyCondition(key)).Should(HaveField("Status", metav1.ConditionTrue))
	})

	It("reports a Secret that lacks the key", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slack"},
			StringData: map[string]string{"webhook": "https://hooks.slack.com/services/T/B/X"}})).To(Succeed())
		ch := slackChannel(ns)
		Expect(k8sClient.Create(ctx, ch)).To(Succeed())
		Eventually(readyCondition(client.ObjectKeyFromObject(ch))).Should(And(
			HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", v1.ReasonSecretKeyMissing),
			HaveField("Message", ContainSubstring(`has no key "url"`))))
	})

	It("never reads a Secret from another namespace", func() {
		other := newNamespace()
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "slack"},
			StringData: map[string]string{"url": "https://hooks.slack.com/services/T/B/X"}})).To(Succeed())
		ch := slackChannel(newNamespace())
		Expect(k8sClient.Create(ctx, ch)).To(Succeed())
		Eventually(readyCondition(client.ObjectKeyFromObject(ch))).Should(HaveField("Reason", v1.ReasonSecretNotFound))
	})
})
