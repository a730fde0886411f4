package controller_test

import (
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/statuspage"
)

// readyOf is an object's Ready condition, once its status is current.
func readyOf(obj client.Object, conditions func() []metav1.Condition) func(Gomega) *metav1.Condition {
	key := client.ObjectKeyFromObject(obj)
	return func(g Gomega) *metav1.Condition {
		g.Expect(k8sClient.Get(ctx, key, obj)).To(Succeed())
		c := meta.FindStatusCondition(conditions(), v1.ConditionReady)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.ObservedGeneration).To(Equal(obj.GetGeneration()))
		return c
	}
}

var pastLimit = And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.ReasonLimitExceeded))

var _ = Describe("Objects past their namespace's limit", func() {
	It("are not Ready and are ignored: a window holds nothing, a status page is not served, a policy covers nothing", func() {
		ns := newNamespace()
		for _, kind := range []project.ObjectKind{project.MaintenanceWindows, project.StatusPages, project.CronJobPolicies} {
			harness.SetObjectLimit(ns, kind, 1)
		}
		db := newCheck(ns, "db", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Tags: "db"})
		web := newCheck(ns, "web", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Tags: "web"})
		Eventually(ready(db)).Should(BeTrue())
		Eventually(ready(web)).Should(BeTrue())
		now := clk.Now().UTC().Truncate(time.Second)

		By("maintenance windows: the second holds nothing")
		window := func(name, tag string) *v1.MaintenanceWindow {
			mw := &v1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Tags: []string{tag}}, From: at(now.Add(-time.Minute)), To: at(now.Add(time.Hour))}}
			Expect(k8sClient.Create(ctx, mw)).To(Succeed())
			return mw
		}
		first, second := window("w-1", "db"), window("w-2", "web")
		Eventually(readyOf(first, func() []metav1.Condition { return first.Status.Conditions })).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(readyOf(second, func() []metav1.Condition { return second.Status.Conditions })).Should(And(pastLimit,
			HaveField("Message", ContainSubstring("more than 1 MaintenanceWindows"))))
		Expect(second.Status.Checks).To(BeZero())
		Eventually(maintenanceCondition(db)).ShouldNot(BeNil())
		Consistently(maintenanceCondition(web)).WithTimeout(time.Second).Should(BeNil(), "the window past the limit holds nothing")

		By("status pages: the second is not served")
		page := func(name string) *v1.StatusPage {
			sp := &v1.StatusPage{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: v1.StatusPageSpec{CheckSelection: v1.CheckSelection{Tags: []string{"db"}}, Title: name}}
			Expect(k8sClient.Create(ctx, sp)).To(Succeed())
			return sp
		}
		served, hidden := page("p-1"), page("p-2")
		Eventually(readyOf(served, func() []metav1.Condition { return served.Status.Conditions })).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(readyOf(hidden, func() []metav1.Condition { return hidden.Status.Conditions })).Should(pastLimit)
		Expect(hidden.Status.URL).To(BeEmpty())
		status := func(sp *v1.StatusPage) int {
			resp, err := http.Get(statuspage.URL(harness.BaseURL, sp))
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Body.Close()).To(Succeed())
			return resp.StatusCode
		}
		Expect(status(served)).To(Equal(http.StatusOK))
		// The server reads the page's Ready condition from the manager's
		// cache, which sees the controller's write a moment after the API
		// server does.
		Eventually(func() int { return status(hidden) }).Should(Equal(http.StatusNotFound))

		By("CronJob policies: the second covers nothing")
		policy := func(name string) *v1.CronJobPolicy {
			p := &v1.CronJobPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			Expect(k8sClient.Create(ctx, p)).To(Succeed())
			return p
		}
		applied, ignored := policy("c-1"), policy("c-2")
		Eventually(readyOf(applied, func() []metav1.Condition { return applied.Status.Conditions })).Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(readyOf(ignored, func() []metav1.Condition { return ignored.Status.Conditions })).Should(And(pastLimit,
			HaveField("Message", ContainSubstring("--cronjob-policy-limit"))))

		By("raised, the limit counts them all")
		for _, kind := range []project.ObjectKind{project.MaintenanceWindows, project.StatusPages, project.CronJobPolicies} {
			harness.SetObjectLimit(ns, kind, 5)
		}
		Eventually(readyOf(second, func() []metav1.Condition { return second.Status.Conditions })).
			Should(HaveField("Status", metav1.ConditionTrue))
		Eventually(maintenanceCondition(web)).ShouldNot(BeNil())
		Eventually(readyOf(hidden, func() []metav1.Condition { return hidden.Status.Conditions })).
			Should(HaveField("Status", metav1.ConditionTrue))
		// The page is found by the URL its status now holds, once the
		// manager's cache has the status the test just read from the API
		// server.
		Eventually(func() int { return status(hidden) }).Should(Equal(http.StatusOK))
	})
})
