package controller_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// record records a ping of any kind as the ping path does.
func record(c *v1.Check, kind monitor.PingKind, at time.Time) store.Recorded {
	rec, err := harness.Manager.Checks.RecordPing(ctx, c, store.Ping{Kind: kind, At: at})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return rec
}

// upCondition is the check's Up condition, once its status shows the
// latest spec.
func upCondition(c *v1.Check) func(Gomega) *metav1.Condition {
	key := client.ObjectKeyFromObject(c)
	return func(g Gomega) *metav1.Condition {
		cur := get(key)(g)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		up := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionUp)
		g.Expect(up).NotTo(BeNil())
		return up
	}
}

// outbox is every notification the check's flips queued, by flip.
func outbox(c *v1.Check) func(Gomega) []int {
	return func(g Gomega) []int {
		var out []int
		for _, f := range flipsOf(c)(g) {
			dl, err := harness.Manager.Store.Deliveries(ctx, c.UID, f.N)
			g.Expect(err).NotTo(HaveOccurred())
			out = append(out, len(dl))
		}
		return out
	}
}

// onlyFlipTo is where the delivery of the check's one flip to channel
// stands. A spec that restarts the manager waits for it to be delivered
// first: one sent but not yet recorded when the manager stops is sent
// again (at least once, as after a crash), which such a spec does not
// count.
func onlyFlipTo(c *v1.Check, channel string) func(Gomega) store.DeliveryState {
	return func(g Gomega) store.DeliveryState {
		flips := flipsOf(c)(g)
		g.Expect(flips).To(HaveLen(1))
		dl, err := harness.Manager.Store.Deliveries(ctx, c.UID, flips[0].N)
		g.Expect(err).NotTo(HaveOccurred())
		return dl[channel].State
	}
}

func duration(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }

var _ = Describe("The alert policy", func() {
	It("with a failure threshold of 3, queues nothing for two failures and one notification at the third", func() {
		ns := newNamespace()
		Expect(k8sClient.Create(ctx, &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ops"},
			Spec: v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "http://127.0.0.1:9/"}}}})).To(Succeed())
		c := newCheck(ns, "flaky", v1.CheckSpec{Timeout: i64(3600), Grace: 60, Channels: []string{"ops"},
			AlertPolicy: v1.AlertPolicy{FailureThreshold: 3}})
		key := client.ObjectKeyFromObject(c)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateNew))
		t0 := clk.Now()

		for i := range 2 {
			rec := ping(get(key)(Default), t0.Add(time.Duration(i)*time.Minute), true)
			Expect(rec.Flip).To(BeNil(), "failure %d of 3", i+1)
		}
		Eventually(func(g Gomega) int32 { return get(key)(g).Status.Failures }).Should(BeEquivalentTo(2))
		Eventually(upCondition(c)).Should(And(HaveField("Status", metav1.ConditionTrue),
			HaveField("Message", ContainSubstring("2 of 3 failures in a row"))))
		Expect(stateOf(c)(Default)).To(Equal(v1.CheckStateUp))
		Expect(flipsOf(c)(Default)).To(BeEmpty())

		rec := ping(get(key)(Default), t0.Add(2*time.Minute), true)
		Expect(rec.Flip).NotTo(BeNil())
		Expect(rec.Flip.Reason).To(Equal(monitor.ReasonFail))
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateDown))
		Expect(outbox(c)(Default)).To(Equal([]int{1}), "one notification, to ops")
		Eventually(upCondition(c)).Should(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", v1.ReasonPingFailed)))

		// Back up at the next success; the count starts again.
		ping(get(key)(Default), t0.Add(3*time.Minute), false)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateUp))
		Eventually(func(g Gomega) int32 { return get(key)(g).Status.Failures }).Should(BeZero())
	})

	It("counts missed runs at their deadlines, and goes down at the third", func() {
		ns := newNamespace()
		c := newCheck(ns, "missed", v1.CheckSpec{Timeout: i64(60), Grace: 60, AlertPolicy: v1.AlertPolicy{FailureThreshold: 3}})
		key := client.ObjectKeyFromObject(c)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateNew))
		t0 := clk.Now()
		ping(get(key)(Default), t0, false)
		// Due at +1, +2, +3 min; deadlines a minute later each.
		clk.SetTime(t0.Add(2 * time.Minute))
		Eventually(func(g Gomega) int32 { return get(key)(g).Status.Failures }).Should(BeEquivalentTo(1))
		clk.SetTime(t0.Add(4*time.Minute - time.Microsecond))
		Eventually(func(g Gomega) int32 { return get(key)(g).Status.Failures }).Should(BeEquivalentTo(2))
		Consistently(stateOf(c), "300ms").ShouldNot(Equal(v1.CheckStateDown))
		clk.SetTime(t0.Add(4 * time.Minute))
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateDown))
		Eventually(flipsOf(c)).Should(HaveLen(1))
		f := flipsOf(c)(Default)[0]
		Expect(f.Reason).To(Equal(monitor.ReasonTimeout))
		Expect(f.At).To(BeTemporally("==", t0.Add(4*time.Minute).UTC().Truncate(time.Microsecond)))
		Expect(upCondition(c)(Default).Reason).To(Equal(v1.ReasonDeadlineMissed))
	})

	It("takes a run over maxRuntime down at exactly its start plus maxRuntime, ran longer than", func() {
		ns := newNamespace()
		c := newCheck(ns, "long", v1.CheckSpec{Timeout: i64(3600), Grace: 60,
			AlertPolicy: v1.AlertPolicy{MaxRuntime: duration(10 * time.Minute)}})
		key := client.ObjectKeyFromObject(c)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateNew))
		t0 := clk.Now()
		ping(get(key)(Default), t0, false)
		record(get(key)(Default), monitor.PingStart, t0.Add(time.Minute))
		Eventually(func(g Gomega) bool { return get(key)(g).Status.Started }).Should(BeTrue())

		// Past grace, within maxRuntime: still up.
		clk.SetTime(t0.Add(11*time.Minute - time.Microsecond))
		Consistently(stateOf(c), "300ms").Should(Equal(v1.CheckStateUp))

		clk.SetTime(t0.Add(11 * time.Minute))
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateDown))
		Eventually(flipsOf(c)).Should(HaveLen(1))
		f := flipsOf(c)(Default)[0]
		Expect(f.Reason).To(Equal(monitor.ReasonRuntime))
		Expect(f.Detail).To(Equal("ran longer than 10 minutes"))
		Expect(f.At).To(BeTemporally("==", t0.Add(11*time.Minute).UTC().Truncate(time.Microsecond)))
		Eventually(upCondition(c)).Should(And(HaveField("Reason", v1.ReasonRanTooLong),
			HaveField("Message", ContainSubstring("ran longer than 10 minutes"))))
		Eventually(eventsFor(c, v1.ReasonCheckDown)).Should(ContainElement(
			HaveField("Note", ContainSubstring("ran longer than 10 minutes"))))
	})

	It("fails a run that succeeds under minRuntime, with how long it took", func() {
		ns := newNamespace()
		c := newCheck(ns, "short", v1.CheckSpec{Timeout: i64(3600), Grace: 60,
			AlertPolicy: v1.AlertPolicy{MinRuntime: duration(5 * time.Minute)}})
		key := client.ObjectKeyFromObject(c)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateNew))
		t0 := clk.Now()
		ping(get(key)(Default), t0, false)
		record(get(key)(Default), monitor.PingStart, t0.Add(time.Minute))
		rec := record(get(key)(Default), monitor.PingSuccess, t0.Add(time.Minute+3*time.Second))
		Expect(rec.Kind).To(Equal(monitor.PingFail), "logged as the failure it counts as")
		Expect(rec.Flip).NotTo(BeNil())
		Expect(rec.Flip.Reason).To(Equal(monitor.ReasonShort))
		Expect(rec.Flip.Detail).To(Equal("finished in 3 seconds, expected at least 5 minutes"))
		Eventually(upCondition(c)).Should(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", v1.ReasonRanTooShort),
			HaveField("Message", ContainSubstring("finished in 3 seconds, expected at least 5 minutes"))))
	})

	It("refuses a minRuntime not shorter than maxRuntime, values out of bounds, an escalation without channels and an unknown Channel event", func() {
		ns := newNamespace()
		bad := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: v1.CheckSpec{Grace: 60,
			AlertPolicy: v1.AlertPolicy{MinRuntime: duration(time.Hour), MaxRuntime: duration(time.Hour)}}}
		Expect(k8sClient.Create(ctx, bad)).To(MatchError(ContainSubstring("minRuntime must be shorter than maxRuntime")))
		bad.Spec.AlertPolicy = v1.AlertPolicy{FailureThreshold: 101}
		Expect(k8sClient.Create(ctx, bad)).To(MatchError(ContainSubstring("failureThreshold")))
		bad.Spec.AlertPolicy = v1.AlertPolicy{MaxRuntime: duration(400 * 24 * time.Hour)}
		Expect(k8sClient.Create(ctx, bad)).To(MatchError(ContainSubstring("maxRuntime must be between 1s and 8784h")))
		bad.Spec.AlertPolicy = v1.AlertPolicy{RealertInterval: duration(30 * time.Second)}
		Expect(k8sClient.Create(ctx, bad)).To(MatchError(ContainSubstring("realertInterval must be between 1m and 8784h")))
		bad.Spec.AlertPolicy = v1.AlertPolicy{Escalation: &v1.Escalation{After: metav1.Duration{Duration: time.Hour}}}
		Expect(k8sClient.Create(ctx, bad)).To(MatchError(ContainSubstring("spec.escalation.channels")))
		ch := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "odd"}, Spec: v1.ChannelSpec{Kind: v1.ChannelWebhook,
			Events: []v1.ChannelEvent{"sometimes"}, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "http://127.0.0.1:9/"}}}}
		Expect(k8sClient.Create(ctx, ch)).To(MatchError(ContainSubstring(`supported values: "down", "up", "realert", "failure"`)))
	})
})

// receiver records the paths and bodies of the webhook requests it gets.
type receiver struct {
	mu            sync.Mutex
	paths, bodies []string
	server        *httptest.Server
}

func newReceiver() *receiver {
	r := &receiver{}
	r.server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.paths = append(r.paths, req.URL.Path)
		r.bodies = append(r.bodies, string(body))
		r.mu.Unlock()
	}))
	DeferCleanup(r.server.Close)
	return r
}

func (r *receiver) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}

func (r *receiver) gotBodies() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bodies...)
}

// hook makes a webhook Channel that calls the receiver at /<name>-down
// and /<name>-up.
func hook(ns, name string, r *receiver, mutate ...func(*v1.ChannelSpec)) {
	spec := v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{
		Down: &v1.WebhookRequest{URL: r.server.URL + "/" + name + "-down"},
		Up:   &v1.WebhookRequest{URL: r.server.URL + "/" + name + "-up"}}}
	for _, m := range mutate {
		m(&spec)
	}
	ExpectWithOffset(1, k8sClient.Create(ctx, &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec})).To(Succeed())
}

func ready(c *v1.Check) func(Gomega) bool {
	key := client.ObjectKeyFromObject(c)
	return func(g Gomega) bool {
		return meta.IsStatusConditionTrue(get(key)(g).Status.Conditions, v1.ConditionReady)
	}
}

var _ = Describe("Re-alerts and escalation", func() {
	It("re-alerts at the interval, escalates while still down, tells the up to both, and stops", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r)
		hook(ns, "lead", r)
		hook(ns, "quiet", r, func(s *v1.ChannelSpec) { s.Events = []v1.ChannelEvent{v1.ChannelEventDown, v1.ChannelEventUp} })
		c := newCheck(ns, "nightly", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Channels: []string{"ops", "quiet"},
			AlertPolicy: v1.AlertPolicy{RealertInterval: duration(10 * time.Minute),
				Escalation: &v1.Escalation{After: metav1.Duration{Duration: 25 * time.Minute}, Channels: []string{"lead"}}}})
		key := client.ObjectKeyFromObject(c)
		Eventually(ready(c)).Should(BeTrue())
		t0 := clk.Now()

		ping(get(key)(Default), t0, true)
		Eventually(r.got).Should(ConsistOf("/ops-down", "/quiet-down"))
		clk.SetTime(t0.Add(10*time.Minute - time.Millisecond))
		Consistently(r.got, "300ms").Should(HaveLen(2))
		clk.SetTime(t0.Add(10 * time.Minute))
		Eventually(r.got).Should(ConsistOf("/ops-down", "/quiet-down", "/ops-down"), "quiet takes no re-alerts")
		clk.SetTime(t0.Add(25 * time.Minute))
		Eventually(r.got).Should(ConsistOf("/ops-down", "/quiet-down", "/ops-down", "/ops-down", "/lead-down"))

		clk.SetTime(t0.Add(26 * time.Minute))
		ping(get(key)(Default), t0.Add(26*time.Minute), false)
		Eventually(r.got).Should(HaveLen(8))
		Expect(r.got()[5:]).To(ConsistOf("/ops-up", "/quiet-up", "/lead-up"))
		clk.SetTime(t0.Add(2 * time.Hour))
		Consistently(r.got, "500ms").Should(HaveLen(8), "nothing after the up")
	})

	It("does not escalate a down that ends before the delay", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r)
		hook(ns, "lead", r)
		c := newCheck(ns, "brief", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Channels: []string{"ops"},
			AlertPolicy: v1.AlertPolicy{Escalation: &v1.Escalation{After: metav1.Duration{Duration: 30 * time.Minute}, Channels: []string{"lead"}}}})
		key := client.ObjectKeyFromObject(c)
		Eventually(ready(c)).Should(BeTrue())
		t0 := clk.Now()
		ping(get(key)(Default), t0, true)
		clk.SetTime(t0.Add(5 * time.Minute))
		ping(get(key)(Default), t0.Add(5*time.Minute), false)
		Eventually(r.got).Should(Equal([]string{"/ops-down", "/ops-up"}))
		clk.SetTime(t0.Add(time.Hour))
		Consistently(r.got, "500ms").Should(Equal([]string{"/ops-down", "/ops-up"}))
	})
})

var _ = Describe("Notices across a restart", func() {
	It("sends a notice that fell due while no manager ran as soon as one starts", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r)
		c := newCheck(ns, "unattended", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Channels: []string{"ops"},
			AlertPolicy: v1.AlertPolicy{RealertInterval: duration(10 * time.Minute)}})
		key := client.ObjectKeyFromObject(c)
		Eventually(ready(c)).Should(BeTrue())
		t0 := clk.Now()
		ping(get(key)(Default), t0, true)
		Eventually(r.got).Should(Equal([]string{"/ops-down"}))
		// The re-alert falls due between the two managers, and the clock
		// does not move again: the new leader's first pass sends it.
		harness.Restart(func() { clk.SetTime(t0.Add(11 * time.Minute)) })
		harness.AllowEgressNow(ns, egress.Loopback.String())
		Eventually(r.got).Should(Equal([]string{"/ops-down", "/ops-down"}))
	})

	It("keeps a re-alert's schedule and an escalation's delay across a manager restart", func() {
		ns := newNamespace()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		r := newReceiver()
		hook(ns, "ops", r)
		hook(ns, "lead", r)
		c := newCheck(ns, "restarted", v1.CheckSpec{Timeout: i64(86400), Grace: 3600, Channels: []string{"ops"},
			AlertPolicy: v1.AlertPolicy{FailureThreshold: 2, RealertInterval: duration(10 * time.Minute),
				Escalation: &v1.Escalation{After: metav1.Duration{Duration: 15 * time.Minute}, Channels: []string{"lead"}}}})
		key := client.ObjectKeyFromObject(c)
		Eventually(ready(c)).Should(BeTrue())
		t0 := clk.Now()

		// One failure of two, then a restart: the count is the store's.
		ping(get(key)(Default), t0, true)
		Eventually(func(g Gomega) int32 { return get(key)(g).Status.Failures }).Should(BeEquivalentTo(1))
		harness.Restart()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		clk.SetTime(t0.Add(time.Minute))
		Expect(ping(get(key)(Default), t0.Add(time.Minute), true).Flip).NotTo(BeNil(), "the second failure, after the restart")
		Eventually(r.got).Should(Equal([]string{"/ops-down"}))
		Eventually(onlyFlipTo(c, "ops")).Should(Equal(store.DeliveryDelivered))

		// A restart in the middle of the re-alert interval and the
		// escalation delay: both come at their instants.
		clk.SetTime(t0.Add(5 * time.Minute))
		harness.Restart()
		harness.AllowEgressNow(ns, egress.Loopback.String())
		clk.SetTime(t0.Add(11*time.Minute - time.Millisecond))
		Consistently(r.got, "300ms").Should(HaveLen(1))
		clk.SetTime(t0.Add(11 * time.Minute))
		// The new manager's deadline loop may make its ticker only after
		// the clock moved (a loaded machine starts it late), and a fake
		// clock moves no further by itself: step it on by the loop's
		// interval until the re-alert comes.
		Eventually(func() []string { clk.Step(250 * time.Millisecond); return r.got() }).
			Should(Equal([]string{"/ops-down", "/ops-down"}))
		clk.SetTime(t0.Add(16 * time.Minute))
		Eventually(r.got).Should(Equal([]string{"/ops-down", "/ops-down", "/lead-down"}))
		clk.SetTime(t0.Add(17 * time.Minute))
		ping(get(key)(Default), t0.Add(17*time.Minute), false)
		Eventually(r.got).Should(HaveLen(5))
		Expect(r.got()[3:]).To(ConsistOf("/ops-up", "/lead-up"))
	})
})
