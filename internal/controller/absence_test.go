package controller_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/monitor"
)

var _ = Describe("Vigil's own absence", func() {
	It("pages nobody for deadlines that fell while no manager ran, and gives those checks a fresh grace", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r)
		hook(ns, "early", r)
		t0 := clk.Now()

		// A check that missed its deadline while Vigil ran: its down is
		// the job's, and told before the stop.
		missed := newCheck(ns, "missed", v1.CheckSpec{Timeout: i64(60), Grace: 60, Channels: []string{"early"}})
		Eventually(ready(missed)).Should(BeTrue())
		ping(get(client.ObjectKeyFromObject(missed))(Default), t0.Add(-3*time.Minute), false)

		// Twenty jobs every minute with a minute's grace, as in the
		// report: pinged once, then the manager stops for 2 min 20 s.
		jobs := make([]*v1.Check, 20)
		for i := range jobs {
			jobs[i] = newCheck(ns, fmt.Sprintf("job-%02d", i), v1.CheckSpec{Timeout: i64(60), Grace: 60, Channels: []string{"ops"}})
		}
		for _, c := range jobs {
			Eventually(ready(c)).Should(BeTrue())
			ping(get(client.ObjectKeyFromObject(c))(Default), t0, false)
		}
		clk.SetTime(t0.Add(time.Second))
		Eventually(stateOf(missed)).Should(Equal(v1.CheckStateDown))
		Eventually(r.got).Should(Equal([]string{"/early-down"}))
		for _, c := range jobs {
			Eventually(stateOf(c)).Should(Equal(v1.CheckStateUp))
		}

		back := t0.Add(2*time.Minute + 20*time.Second)
		harness.Restart(func() { clk.SetTime(back) })
		harness.AllowEgressNow(ns, egress.Loopback.String())

		// Back: every job's deadline (t0+2m) fell while Vigil was away.
		// None is down, none is told; each has a minute's grace from now.
		for _, c := range jobs {
			Eventually(stateOf(c)).Should(Equal(v1.CheckStateGrace))
		}
		Eventually(upCondition(jobs[0])).Should(HaveField("Message", ContainSubstring(
			"fell due while Vigil was away; the check has a fresh grace period from Vigil's return")))
		Consistently(r.got, "1s").Should(Equal([]string{"/early-down"}))

		// Half of them ping within the fresh grace; the other half do
		// not, and go down at its end, once each, saying why.
		clk.SetTime(back.Add(10 * time.Second))
		for _, c := range jobs[:10] {
			Expect(ping(get(client.ObjectKeyFromObject(c))(Default), back.Add(10*time.Second), false).Flip).To(BeNil())
		}
		clk.SetTime(back.Add(time.Minute))
		Eventually(func() int { return len(r.got()) }).Should(Equal(11))
		Consistently(r.got, "1s").Should(HaveLen(11))
		Expect(r.got()[1:]).To(HaveEach("/ops-down"))
		for _, c := range jobs[:10] {
			Eventually(stateOf(c)).Should(Equal(v1.CheckStateUp))
			Expect(flipsOf(c)(Default)).To(BeEmpty())
		}
		for _, c := range jobs[10:] {
			Eventually(stateOf(c)).Should(Equal(v1.CheckStateDown))
			flips := flipsOf(c)(Default)
			Expect(flips).To(HaveLen(1))
			Expect(flips[0].At).To(BeTemporally("==", back.Add(time.Minute)))
			Expect(flips[0].Reason).To(Equal(monitor.ReasonTimeout))
			Expect(flips[0].Detail).To(ContainSubstring("it fell due while Vigil was away"))
		}
	})
})
