package pingtest

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/project"
)

var _ = Describe("A UUID is its project's", func() {
	ctx := context.Background()

	readyOf := func(key client.ObjectKey) func(Gomega) *metav1.Condition {
		return func(g Gomega) *metav1.Condition {
			var c v1.Check
			g.Expect(k8sClient.Get(ctx, key, &c)).To(Succeed())
			return meta.FindStatusCondition(c.Status.Conditions, v1.ConditionReady)
		}
	}

	It("never lets another project's check take its pings, even while its Check is re-created", func() {
		victim, attacker := newProject(), newProject()
		id := victim.create(`{"name": "backup", "timeout": 3600}`)
		original := victim.checkObject(id)
		expectOK(pingURL("GET", "/ping/"+id, ""))

		// The attacker applies a Check that names the victim's UUID (which
		// a badge or a log line may have shown).
		stolen := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: attacker.ns, Name: "stolen"},
			Spec: v1.CheckSpec{UUID: id, Grace: 60}}
		Expect(k8sClient.Create(ctx, stolen)).To(Succeed())
		Eventually(readyOf(client.ObjectKeyFromObject(stolen))).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.ReasonDuplicateUUID),
			HaveField("Message", ContainSubstring("belongs to another project")),
			HaveField("Message", Not(ContainSubstring(victim.ns)))))

		// GitOps deletes and re-creates the victim's Check. Meanwhile the
		// UUID answers 404, never with the attacker's check.
		Expect(k8sClient.Delete(ctx, original)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(original), &v1.Check{}))
		}).Should(BeTrue())
		Eventually(func() int { return pingURL("GET", "/ping/"+id, "").Status }).Should(Equal(http.StatusNotFound))
		for range 5 {
			expectError(pingURL("GET", "/ping/"+id, ""), http.StatusNotFound, "not found", false)
		}
		recreated := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: victim.ns, Name: original.Name}, Spec: original.Spec}
		Expect(k8sClient.Create(ctx, recreated)).To(Succeed())
		Eventually(readyOf(client.ObjectKeyFromObject(recreated))).Should(HaveField("Status", metav1.ConditionTrue))
		expectOK(pingURL("GET", "/ping/"+id, ""))

		Expect(logged(recreated)).To(HaveLen(1))
		var cur v1.Check
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(stolen), &cur)).To(Succeed())
		Expect(logged(&cur)).To(BeEmpty())
		Expect(meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)).To(HaveField("Reason", v1.ReasonDuplicateUUID))
		// Nor does the attacker's API key reach it.
		r := harness.Call("GET", "/api/v3/checks/"+id, attacker.rw, "")
		Expect(r.Status).To(Equal(http.StatusForbidden), r.String())
	})

	It("never lets another project's copy of its ping key take its slug pings", func() {
		victim, attacker := newProject(), newProject()
		id := victim.create(`{"name": "nightly", "slug": "nightly", "timeout": 3600}`)
		decoy := attacker.create(`{"name": "nightly", "slug": "nightly", "timeout": 3600}`)
		// The attacker writes the victim's ping key into a project Secret
		// of their own namespace, newer than the victim's (creation times
		// have one-second resolution; a tie goes to the namespace first
		// by name).
		time.Sleep(1100 * time.Millisecond)
		copied := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: attacker.ns, Name: "copied",
			Labels: map[string]string{project.SecretLabel: "true"}},
			Data: map[string][]byte{project.DataPingKey: []byte(victim.pingKey)}}
		Expect(k8sClient.Create(ctx, copied)).To(Succeed())
		// The manager has seen it once it tells the Secret's owner so.
		Eventually(func(g Gomega) []string {
			var events eventsv1.EventList
			g.Expect(k8sClient.List(ctx, &events, client.InNamespace(attacker.ns))).To(Succeed())
			var reasons []string
			for _, e := range events.Items {
				if e.Regarding.Name == "copied" {
					reasons = append(reasons, e.Reason)
				}
			}
			return reasons
		}).Should(ContainElement(project.ReasonKeyConflict))
		for range 3 {
			expectOK(pingURL("GET", "/ping/"+victim.pingKey+"/nightly", ""))
		}
		Expect(victim.pings(id)).To(HaveLen(3))
		Expect(attacker.pings(decoy)).To(BeEmpty())
	})
})
