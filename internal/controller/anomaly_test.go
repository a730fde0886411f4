package controller_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/monitor"
)

var _ = Describe("Duration anomalies", func() {
	It("learn a check's usual run time from its runs and page once for a run far outside it", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r)
		c := newCheck(ns, "dump", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Channels: []string{"ops"},
			AlertPolicy: v1.AlertPolicy{Anomaly: &v1.AnomalyPolicy{}}})
		key := client.ObjectKeyFromObject(c)
		Eventually(ready(c)).Should(BeTrue())
		t0 := clk.Now()
		run := func(i int, took time.Duration) {
			GinkgoHelper()
			begin := t0.Add(time.Duration(i) * time.Hour)
			clk.SetTime(begin)
			record(get(key)(Default), monitor.PingStart, begin)
			clk.SetTime(begin.Add(took))
			record(get(key)(Default), monitor.PingSuccess, begin.Add(took))
		}
		for i := range 10 { // mysqldump | gpg: about 40 minutes
			run(i, 38*time.Minute+time.Duration(i)*20*time.Second)
		}
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateUp))
		Consistently(r.got, "300ms").Should(BeEmpty())

		run(10, 4*time.Second) // "succeeds" at once
		Eventually(upCondition(c)).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.ReasonRunAnomalous),
			HaveField("Message", MatchRegexp(`^The check is down: a run ran 4 seconds; usually \d+ minutes?( \d+ seconds?)? to \d+ minutes?( \d+ seconds?)? over its last 10 runs, at `))))
		Eventually(r.got).Should(Equal([]string{"/ops-down"}))

		run(11, 41*time.Minute)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateUp))
		Eventually(r.got).Should(Equal([]string{"/ops-down", "/ops-up"}))
	})
})
