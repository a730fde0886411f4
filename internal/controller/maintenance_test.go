package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/maintenance"
	"github.com/vigil-operator/vigil/internal/store"
)

// maintenanceCondition is the check's Maintenance condition (nil: none).
func maintenanceCondition(c *v1.Check) func(Gomega) *metav1.Condition {
	key := client.ObjectKeyFromObject(c)
	return func(g Gomega) *metav1.Condition {
		return meta.FindStatusCondition(get(key)(g).Status.Conditions, v1.ConditionMaintenance)
	}
}

func windowStatus(ns, name string) func(Gomega) v1.MaintenanceWindowStatus {
	return func(g Gomega) v1.MaintenanceWindowStatus {
		mw := &v1.MaintenanceWindow{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, mw)).To(Succeed())
		return mw.Status
	}
}

func at(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

var _ = Describe("Maintenance windows", func() {
	It("hold the down, show maintenance, and notify once at their end, across a restart", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r)
		c := newCheck(ns, "restore", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Channels: []string{"ops"}, Tags: "prod db"})
		other := newCheck(ns, "web", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Channels: []string{"ops"}, Tags: "web"})
		key := client.ObjectKeyFromObject(c)
		Eventually(ready(c)).Should(BeTrue())
		Eventually(ready(other)).Should(BeTrue())
		t0 := clk.Now().UTC().Truncate(time.Second)

		Expect(k8sClient.Create(ctx, &v1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "upgrade"},
			Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Tags: []string{"db"}}, From: at(t0.Add(10 * time.Minute)), To: at(t0.Add(time.Hour))}})).To(Succeed())
		Eventually(windowStatus(ns, "upgrade")).Should(And(
			HaveField("Active", false), HaveField("Checks", BeEquivalentTo(1)),
			HaveField("NextStart", HaveField("Time", BeTemporally("==", t0.Add(10*time.Minute)))),
			HaveField("Conditions", ContainElement(And(HaveField("Type", v1.ConditionReady), HaveField("Status", metav1.ConditionTrue))))))
		Expect(maintenanceCondition(c)(Default)).To(BeNil())
		// "active": false is written, for kubectl's column to show it.
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(v1.GroupVersion.WithKind("MaintenanceWindow"))
		Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "upgrade"}, u)).To(Succeed())
		active, found, err := unstructured.NestedBool(u.Object, "status", "active")
		Expect(err).NotTo(HaveOccurred())
		Expect(found && !active).To(BeTrue(), "status.active is written as false")

		clk.SetTime(t0.Add(10 * time.Minute))
		Eventually(maintenanceCondition(c)).Should(And(Not(BeNil()),
			HaveField("Message", ContainSubstring("MaintenanceWindow upgrade holds the check's notifications until "+t0.Add(time.Hour).Format(time.RFC3339)))))
		Consistently(maintenanceCondition(other), "300ms").Should(BeNil(), "the window covers tag db only")

		clk.SetTime(t0.Add(20 * time.Minute))
		rec := ping(get(key)(Default), t0.Add(20*time.Minute), true)
		Expect(rec.Flip).NotTo(BeNil())
		Expect(rec.Flip.Held).To(Equal("upgrade"))
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateDown), "the flip is recorded and shown")
		ping(get(client.ObjectKeyFromObject(other))(Default), t0.Add(20*time.Minute), true)
		Eventually(r.got).Should(Equal([]string{"/ops-down"}), "the check outside the window is told")
		Eventually(onlyFlipTo(other, "ops")).Should(Equal(store.DeliveryDelivered))

		// A restart in the middle of the window holds on.
		clk.SetTime(t0.Add(30 * time.Minute))
		harness.Restart()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		clk.SetTime(t0.Add(time.Hour - time.Millisecond))
		Consistently(r.got, "300ms").Should(HaveLen(1))

		clk.SetTime(t0.Add(time.Hour))
		Eventually(r.got).Should(Equal([]string{"/ops-down", "/ops-down"}), "told once, at the end")
		Eventually(maintenanceCondition(c)).Should(BeNil())
		clk.SetTime(t0.Add(3 * time.Hour))
		Consistently(r.got, "500ms").Should(HaveLen(2))
	})

	It("snooze one check the same way, and a snooze that has ended is deleted", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r)
		c := newCheck(ns, "noisy", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Channels: []string{"ops"}})
		key := client.ObjectKeyFromObject(c)
		Eventually(ready(c)).Should(BeTrue())
		t0 := clk.Now()

		mw, err := harness.Manager.Checks.Snooze(ctx, get(key)(Default), 2*time.Hour)
		Expect(err).NotTo(HaveOccurred())
		Expect(mw.Name).To(Equal(maintenance.SnoozeName("noisy")))
		Eventually(windowStatus(ns, mw.Name)).Should(HaveField("Active", true))
		Eventually(maintenanceCondition(c)).ShouldNot(BeNil())
		clk.SetTime(t0.Add(time.Minute))
		Expect(ping(get(key)(Default), t0.Add(time.Minute), true).Flip.Held).To(Equal(mw.Name))
		Consistently(r.got, "300ms").Should(BeEmpty())

		// Snoozing again moves the same window; a check up again by its
		// end tells nobody.
		clk.SetTime(t0.Add(30 * time.Minute))
		_, err = harness.Manager.Checks.Snooze(ctx, get(key)(Default), time.Hour)
		Expect(err).NotTo(HaveOccurred())
		var list v1.MaintenanceWindowList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
		ping(get(key)(Default), t0.Add(40*time.Minute), false)
		clk.SetTime(t0.Add(90 * time.Minute))
		Eventually(maintenanceCondition(c)).Should(BeNil())
		Consistently(r.got, "300ms").Should(BeEmpty())

		// A snooze that holds a down tells it once, at its end.
		clk.SetTime(t0.Add(2 * time.Hour))
		_, err = harness.Manager.Checks.Snooze(ctx, get(key)(Default), time.Hour)
		Expect(err).NotTo(HaveOccurred())
		Eventually(maintenanceCondition(c)).ShouldNot(BeNil())
		Expect(ping(get(key)(Default), t0.Add(2*time.Hour+time.Minute), true).Flip.Held).To(Equal(mw.Name))
		Consistently(r.got, "300ms").Should(BeEmpty())
		clk.SetTime(t0.Add(3 * time.Hour))
		Eventually(r.got).Should(Equal([]string{"/ops-down"}))
		clk.SetTime(t0.Add(3*time.Hour + time.Minute))
		Consistently(r.got, "300ms").Should(HaveLen(1))

		Expect(harness.Manager.Checks.Snooze(ctx, get(key)(Default), 40*24*time.Hour)).Error().To(MatchError(ContainSubstring("a snooze lasts from 1 minute to")))

		// A snooze window that ended is deleted when it is next read.
		ended := maintenance.Snooze(get(key)(Default), t0.Add(-3*time.Hour), time.Hour)
		ended.Name = "snooze-old"
		Expect(k8sClient.Create(ctx, ended)).To(Succeed())
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKeyFromObject(ended), &v1.MaintenanceWindow{})
		}).Should(Satisfy(apierrors.IsNotFound))
	})

	It("tell a Channel that takes maintenance when they start and end, and no other", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r)
		hook(ns, "watch", r, func(s *v1.ChannelSpec) {
			s.Events = []v1.ChannelEvent{v1.ChannelEventMaintenance}
			s.Webhook.Down.URL = r.server.URL + "/watch-$NOTICE"
		})
		c := newCheck(ns, "migrate", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Channels: []string{"ops", "watch"}})
		Eventually(ready(c)).Should(BeTrue())
		t0 := clk.Now().UTC().Truncate(time.Second)
		Expect(k8sClient.Create(ctx, &v1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "migration"},
			Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Checks: []string{"migrate"}}, From: at(t0.Add(10 * time.Minute)), To: at(t0.Add(20 * time.Minute))}})).To(Succeed())
		Eventually(windowStatus(ns, "migration")).Should(HaveField("Checks", BeEquivalentTo(1)))
		clk.SetTime(t0.Add(10 * time.Minute))
		Eventually(r.got).Should(Equal([]string{"/watch-maintenance-start"}))
		clk.SetTime(t0.Add(20 * time.Minute))
		Eventually(r.got).Should(Equal([]string{"/watch-maintenance-start", "/watch-maintenance-end"}))
		Consistently(r.got, "300ms").Should(HaveLen(2), "ops takes no maintenance events")
	})

	It("report a schedule that does not parse on their Ready condition", func() {
		ns := newNamespace()
		sched := "Mon..Fry 02:00"
		Expect(k8sClient.Create(ctx, &v1.MaintenanceWindow{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "typo"},
			Spec: v1.MaintenanceWindowSpec{CheckSelection: v1.CheckSelection{Selector: &metav1.LabelSelector{}}, Schedule: &sched,
				Duration: &metav1.Duration{Duration: time.Hour}}})).To(Succeed())
		Eventually(windowStatus(ns, "typo")).Should(HaveField("Conditions", ContainElement(And(
			HaveField("Type", v1.ConditionReady), HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", v1.ReasonInvalidSpec), HaveField("Message", ContainSubstring("spec.schedule"))))))
	})
})
