package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
)

// slaCondition is the check's SLAMet condition (nil: none).
func slaCondition(c *v1.Check) func(Gomega) *metav1.Condition {
	key := client.ObjectKeyFromObject(c)
	return func(g Gomega) *metav1.Condition {
		return meta.FindStatusCondition(get(key)(g).Status.Conditions, v1.ConditionSLAMet)
	}
}

var _ = Describe("SLAs", func() {
	It("tell a breach once, and its end once, and show it on the SLAMet condition", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r, func(s *v1.ChannelSpec) {
			s.Events = []v1.ChannelEvent{v1.ChannelEventSLA}
			s.Webhook.Down.URL = r.server.URL + "/ops-$NOTICE"
		})
		c := newCheck(ns, "import", v1.CheckSpec{Timeout: i64(3600), Grace: 600, Channels: []string{"ops"},
			AlertPolicy: v1.AlertPolicy{SLA: &v1.CheckSLA{Window: &metav1.Duration{Duration: 24 * time.Hour}, MinSuccessRate: "90"}}})
		Eventually(ready(c)).Should(BeTrue())
		key := client.ObjectKeyFromObject(c)
		t0 := clk.Now()
		clk.Step(time.Minute)
		Eventually(slaCondition(c)).Should(HaveField("Reason", v1.ReasonTooFewRuns), "judged at the next look, with no runs yet")

		// Three runs of five succeeded in the last day: 60%, below 90%.
		for i, failed := range []bool{false, true, false, true, false} {
			ping(get(key)(Default), t0.Add(time.Duration(i-5)*time.Minute), failed)
		}
		clk.Step(time.Minute)
		Eventually(r.got).Should(Equal([]string{"/ops-sla-breach"}))
		Eventually(slaCondition(c)).Should(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", v1.ReasonSuccessRateLow), HaveField("Message", ContainSubstring("success rate 60% over the last day (3 of 5 runs), below 90%"))))
		clk.Step(time.Minute)
		Consistently(r.got, "300ms").Should(HaveLen(1), "a breach that lasts is told once")

		// Fifteen more successes: 18 of 20, 90%, meet it again.
		for i := range 15 {
			ping(get(key)(Default), clk.Now().Add(time.Duration(i-15)*time.Second), false)
		}
		clk.Step(time.Minute)
		Eventually(r.got).Should(Equal([]string{"/ops-sla-breach", "/ops-sla-met"}))
		Eventually(slaCondition(c)).Should(And(HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1.ReasonWithinSLA)))

		// The SLA removed, its condition goes, and nothing is told.
		Eventually(func() error {
			cur := get(key)(Default).DeepCopy()
			cur.Spec.SLA = nil
			return k8sClient.Update(ctx, cur)
		}).Should(Succeed())
		// The next look must see the spec without it: wait for the cache.
		Eventually(func() bool {
			for _, cached := range harness.Manager.Checks.InProject(ns) {
				if cached.Name == c.Name {
					return cached.Spec.SLA == nil
				}
			}
			return false
		}).Should(BeTrue())
		clk.Step(time.Minute)
		Eventually(slaCondition(c)).Should(BeNil())
		Consistently(r.got, "300ms").Should(HaveLen(2))
	})
})
