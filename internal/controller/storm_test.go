package controller_test

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/delivery"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/store"
)

var _ = Describe("Storm control", func() {
	It("tells a Channel of 50 checks down at once in one message, across a restart, and each recovery once", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r, func(s *v1.ChannelSpec) {
			s.Webhook.Down.Method, s.Webhook.Down.Body = "POST", "$SUMMARY|$REASON_TEXT"
			s.Webhook.Up.Method, s.Webhook.Up.Body = "POST", "$SUMMARY|$REASON_TEXT"
		})
		t0 := clk.Now()
		jobs := make([]*v1.Check, 50)
		for i := range jobs {
			jobs[i] = newCheck(ns, fmt.Sprintf("job-%02d", i), v1.CheckSpec{Timeout: i64(60), Grace: 60, Channels: []string{"ops"}})
		}
		for _, c := range jobs {
			Eventually(ready(c)).Should(BeTrue())
			ping(get(client.ObjectKeyFromObject(c))(Default), t0, false)
		}

		// Every job misses its deadline in one pass: a storm. Nothing goes
		// until the oldest has waited StormGather, a restart in between.
		clk.SetTime(t0.Add(2 * time.Minute))
		for _, c := range jobs {
			Eventually(stateOf(c)).Should(Equal(v1.CheckStateDown))
		}
		Consistently(r.got, "500ms").Should(BeEmpty())
		harness.Restart(func() { clk.SetTime(t0.Add(2*time.Minute + 5*time.Second)) })
		harness.AllowEgressNow(ns, egress.Loopback.String())
		Consistently(r.got, "500ms").Should(BeEmpty())
		clk.SetTime(t0.Add(2*time.Minute + delivery.DefaultStormGather))
		Eventually(r.got).Should(Equal([]string{"/ops-down"}))
		Consistently(r.got, "1s").Should(HaveLen(1))
		Expect(r.gotBodies()[0]).To(Equal(fmt.Sprintf("50 checks in %s are DOWN|job-00", ns) + bodyList(1, 25) + ", and 25 more"))
		for _, c := range []*v1.Check{jobs[0], jobs[49]} {
			notes, err := harness.Manager.Store.Notifications(ctx, c.UID, 5)
			Expect(err).NotTo(HaveOccurred())
			Expect(notes[0].Deliveries).To(ConsistOf(HaveField("State", store.DeliveryDelivered)))
		}

		// They come back one ping at a time: the first go alone, until
		// enough have that the rest wait and go together. Each check's
		// recovery is told exactly once.
		clk.SetTime(t0.Add(3 * time.Minute))
		for _, c := range jobs {
			ping(get(client.ObjectKeyFromObject(c))(Default), t0.Add(3*time.Minute), false)
		}
		clk.SetTime(t0.Add(3*time.Minute + delivery.DefaultStormGather))
		told := func(g Gomega) int {
			n := 0
			for i, body := range r.gotBodies()[1:] {
				g.Expect(r.got()[i+1]).To(Equal("/ops-up"))
				summary, _, _ := strings.Cut(body, "|")
				if count, group := strings.CutSuffix(strings.TrimSuffix(summary, " are UP"), " checks in "+ns); group {
					k, err := strconv.Atoi(count)
					g.Expect(err).NotTo(HaveOccurred())
					n += k
				} else {
					n++
				}
			}
			return n
		}
		Eventually(told).Should(Equal(50))
		Consistently(told, "1s").Should(Equal(50))
		Expect(len(r.got())-1).To(BeNumerically("<=", 25), "the 25th recovery and those after it went together")
	})
})

// bodyList is ", job-NN" for NN from lo to hi-1.
func bodyList(lo, hi int) string {
	var b strings.Builder
	for i := lo; i < hi; i++ {
		fmt.Fprintf(&b, ", job-%02d", i)
	}
	return b.String()
}
