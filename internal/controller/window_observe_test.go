package controller_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

// observedIn is vigil_checks_observed_total of the namespace: the checks
// the ping store's writer looked at outside their pings.
func observedIn(ns string) float64 {
	return managertest.NamespaceCounter("vigil_checks_observed_total", ns)
}

var _ = Describe("A maintenance window's change", func() {
	// A snooze is a window: a tenant's hundred snoozes had the store's one
	// writer, which every namespace's pings wait for, read each row of its
	// namespace a hundred times.
	It("has the store look again at the checks it selects and holds, not at every check of its namespace", func() {
		const n = 30
		ns := newNamespace()
		var all []*v1.Check
		for i := range n {
			all = append(all, newCheck(ns, fmt.Sprint("c-", i), v1.CheckSpec{Timeout: i64(86400), Grace: 3600}))
		}
		for _, c := range all {
			Eventually(ready(c)).Should(BeTrue())
		}
		settled := func() float64 {
			var last float64
			Eventually(func() float64 { last = observedIn(ns); return last }).Should(BeNumerically(">=", n))
			Consistently(func() float64 { return observedIn(ns) }).WithTimeout(time.Second).Should(Equal(last))
			return last
		}
		cost := func(step string, do func()) {
			before := settled()
			do()
			after := settled()
			GinkgoWriter.Printf("%s: %v checks observed\n", step, after-before)
			Expect(after-before).To(BeNumerically("<=", 4), "%s had the store look at %v of the namespace's %d checks", step, after-before, n)
		}
		t0 := clk.Now().UTC().Truncate(time.Second)
		mw := &v1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "one"},
			Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Checks: []string{"c-3"}}, From: at(t0.Add(-time.Minute)), To: at(t0.Add(time.Hour))}}

		cost("a window over c-3 applied", func() {
			Expect(k8sClient.Create(ctx, mw)).To(Succeed())
			Eventually(maintenanceCondition(all[3])).ShouldNot(BeNil())
		})
		cost("the window moved to c-4", func() {
			Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(mw), mw)).To(Succeed())
			mw.Spec.Checks = []string{"c-4"}
			Expect(k8sClient.Update(ctx, mw)).To(Succeed())
			Eventually(maintenanceCondition(all[4])).ShouldNot(BeNil())
			Eventually(maintenanceCondition(all[3])).Should(BeNil(), "c-3, held until the edit, is let go")
		})
		cost("the window deleted", func() {
			Expect(k8sClient.Delete(ctx, mw)).To(Succeed())
			Eventually(maintenanceCondition(all[4])).Should(BeNil(), "c-4, held until the window went, is let go")
		})
	})
})
