package pingtest

import (
	"fmt"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// The status projector writes at most 20 statuses a second for the
// cluster (this suite's manager has the default budget). A namespace whose
// checks all go down at once must not hold another namespace's down behind
// its own in `kubectl get checks`: namespaces take turns.
var _ = Describe("Status writes shared between namespaces", func() {
	const crowd = 160 // 8 s of the budget, written one namespace after the other

	It("shows another namespace's down while a crowd of downs is still being written", func(ctx SpecContext) {
		a, b := newProject(), newProject()
		create := func(ns, slug string) {
			c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: slug},
				Spec: v1.CheckSpec{Slug: slug, Timeout: ptr.To[int64](3600)}}
			Expect(k8sClient.Create(ctx, c)).To(Succeed())
		}
		for i := range crowd {
			create(a.ns, fmt.Sprint("a-", i))
		}
		create(b.ns, "b")
		DeferCleanup(func(ctx SpecContext) {
			Expect(k8sClient.DeleteAllOf(ctx, &v1.Check{}, client.InNamespace(a.ns))).To(Succeed())
		})
		states := func(ns string) map[v1.CheckState]int {
			var list v1.CheckList
			Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			n := map[v1.CheckState]int{}
			for _, c := range list.Items {
				n[c.Status.State]++
			}
			return n
		}
		// The creations' own status writes are done before the crowd fails.
		Eventually(func() map[v1.CheckState]int { return states(a.ns) }).WithTimeout(time.Minute).
			Should(Equal(map[v1.CheckState]int{v1.CheckStateNew: crowd}))
		Eventually(func() map[v1.CheckState]int { return states(b.ns) }).
			Should(Equal(map[v1.CheckState]int{v1.CheckStateNew: 1}))

		shots := make([]*shot, crowd)
		for i := range shots {
			shots[i] = &shot{url: fmt.Sprintf("%s/ping/%s/a-%d/fail", baseURL, a.pingKey, i), check: "a"}
		}
		fire(shots)
		for _, s := range shots {
			Expect(s.err).NotTo(HaveOccurred())
			Expect(s.status).To(Equal(http.StatusOK))
		}
		bFailed := time.Now()
		expectOK(pingURL("GET", "/ping/"+b.pingKey+"/b/fail", ""))

		Eventually(func() map[v1.CheckState]int { return states(b.ns) }).
			Should(Equal(map[v1.CheckState]int{v1.CheckStateDown: 1}))
		shownFirst := states(a.ns)[v1.CheckStateDown]
		GinkgoWriter.Printf("B's down shown %v after its ping, behind %d of A's %d\n",
			time.Since(bFailed).Round(time.Millisecond), shownFirst, crowd)
		Expect(shownFirst).To(BeNumerically("<", crowd/2),
			"B's down waited for most of A's: one queue for the cluster, not turns")

		// Nothing of A's is lost: every down is shown in its turn.
		Eventually(func() map[v1.CheckState]int { return states(a.ns) }).WithTimeout(time.Minute).
			Should(Equal(map[v1.CheckState]int{v1.CheckStateDown: crowd}))
	}, SpecTimeout(3*time.Minute))
})
