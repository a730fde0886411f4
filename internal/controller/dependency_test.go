package controller_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/store"
)

// conditionOf is the check's condition of that type once its status shows
// the latest spec (nil: absent).
func conditionOf(c *v1.Check, typ string) func(Gomega) *metav1.Condition {
	key := client.ObjectKeyFromObject(c)
	return func(g Gomega) *metav1.Condition {
		cur := get(key)(g)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		return meta.FindStatusCondition(cur.Status.Conditions, typ)
	}
}

var _ = Describe("Dependencies", func() {
	It("pages nobody for 30 dependents of a down parent, and tells each one still down once when it is back", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "host", r)
		hook(ns, "jobs", r)
		t0 := clk.Now()

		host := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "backup-host", Labels: map[string]string{"role": "backup-host"}},
			Spec: v1.CheckSpec{Timeout: i64(3600), Grace: 60, Channels: []string{"host"}}}
		Expect(k8sClient.Create(ctx, host)).To(Succeed())
		// Half name the host, half select it by its label.
		jobs := make([]*v1.Check, 30)
		for i := range jobs {
			deps := &v1.DependsOn{Checks: []string{"backup-host"}}
			if i%2 == 1 {
				deps = &v1.DependsOn{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "backup-host"}}}
			}
			jobs[i] = newCheck(ns, fmt.Sprintf("job-%02d", i), v1.CheckSpec{Timeout: i64(60), Grace: 60, Channels: []string{"jobs"},
				AlertPolicy: v1.AlertPolicy{DependsOn: deps, RealertInterval: duration(time.Minute)}})
		}
		Eventually(ready(host)).Should(BeTrue())
		ping(get(client.ObjectKeyFromObject(host))(Default), t0, false)
		for _, c := range jobs {
			Eventually(ready(c)).Should(BeTrue())
			ping(get(client.ObjectKeyFromObject(c))(Default), t0, false)
		}

		// The host goes down; then every job misses its deadline.
		clk.SetTime(t0.Add(10 * time.Second))
		ping(get(client.ObjectKeyFromObject(host))(Default), t0.Add(10*time.Second), true)
		Eventually(r.got).Should(Equal([]string{"/host-down"}))
		clk.SetTime(t0.Add(3 * time.Minute))
		for _, c := range jobs {
			Eventually(stateOf(c)).Should(Equal(v1.CheckStateDown))
		}
		Eventually(conditionOf(jobs[1], v1.ConditionHeld)).Should(And(
			HaveField("Reason", v1.ReasonDependencyDown),
			HaveField("Message", ContainSubstring("depends on backup-host, which is down since"))))
		// Re-alerts too wait: a few minutes pass.
		for m := 4; m <= 6; m++ {
			clk.SetTime(t0.Add(time.Duration(m) * time.Minute))
			Consistently(r.got, "300ms").Should(Equal([]string{"/host-down"}))
		}

		// Twenty-five jobs run again; five stay down. The host comes back:
		// each of the five is told once, at the next recheck.
		for _, c := range jobs[:25] {
			ping(get(client.ObjectKeyFromObject(c))(Default), t0.Add(6*time.Minute), false)
		}
		ping(get(client.ObjectKeyFromObject(host))(Default), t0.Add(6*time.Minute), false)
		Eventually(r.got).Should(ContainElement("/host-up"))
		Expect(r.got()[:2]).To(Equal([]string{"/host-down", "/host-up"}))
		clk.SetTime(t0.Add(6*time.Minute + store.DependencyRecheck))
		Eventually(func() int { return len(r.got()) }).Should(Equal(7), func() string {
			out := ""
			for _, c := range jobs[25:] {
				obs, _, err := harness.Manager.Store.Check(ctx, c.UID)
				out += fmt.Sprintf("%s: %s, next change %s, held by %+v (err %v), flips %+v\n", c.Name, obs.Facts.State, obs.NextChange, obs.Dependency, err, flipsOf(c)(Default))
			}
			return out
		})
		Consistently(r.got, "1s").Should(HaveLen(7))
		Expect(r.got()[2:]).To(HaveEach("/jobs-down"))
		for _, c := range jobs[25:] {
			Eventually(conditionOf(c, v1.ConditionHeld)).Should(BeNil())
		}
		for _, c := range jobs[:25] {
			flips := flipsOf(c)(Default)
			Expect(flips).To(HaveLen(2))
			Expect(flips[0].HeldByParent()).To(Equal("backup-host"))
		}
	})

	It("refuses a cycle with Ready=False until it is broken", func() {
		ns := newNamespace()
		a := newCheck(ns, "a", v1.CheckSpec{AlertPolicy: v1.AlertPolicy{DependsOn: &v1.DependsOn{Checks: []string{"b"}}}})
		Eventually(ready(a)).Should(BeTrue())
		b := newCheck(ns, "b", v1.CheckSpec{AlertPolicy: v1.AlertPolicy{DependsOn: &v1.DependsOn{Checks: []string{"a"}}}})
		for _, c := range []*v1.Check{a, b} {
			Eventually(conditionOf(c, v1.ConditionReady)).Should(And(
				HaveField("Status", metav1.ConditionFalse),
				HaveField("Reason", v1.ReasonDependencyCycle),
				HaveField("Message", ContainSubstring("spec.dependsOn makes a cycle: "+c.Name+" → "))))
		}
		cur := get(client.ObjectKeyFromObject(b))(Default)
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.DependsOn = nil
		Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
		Eventually(ready(a)).Should(BeTrue())
		Eventually(ready(b)).Should(BeTrue())

		bad := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"},
			Spec: v1.CheckSpec{AlertPolicy: v1.AlertPolicy{DependsOn: &v1.DependsOn{}}}}
		Expect(k8sClient.Create(ctx, bad)).To(MatchError(ContainSubstring("dependsOn needs checks, a selector, or both")))
	})
})
