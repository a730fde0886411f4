package pingtest

import (
	"context"
	"net/http"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
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
		Eventually(func() int { return pingURL("GET", "/ping/"+id, "").status }).Should(Equal(http.StatusNotFound))
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
		r := call("GET", "/api/v3/checks/"+id, attacker.rw, "")
		Expect(r.status).To(Equal(http.StatusForbidden), r.String())
	})
})
