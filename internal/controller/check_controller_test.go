package controller_test

import (
	"strconv"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/controller"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv"
)

var touches atomic.Int64

// tick makes the controller look at a check now: a metadata change (which
// does not bump the generation) triggers a reconcile.
func tick(c *v1.Check) {
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations["test.vigil.dev/tick"] = strconv.FormatInt(touches.Add(1), 10)
	ExpectWithOffset(1, k8sClient.Patch(ctx, c, patch)).To(Succeed())
}

// ping records a ping as the ping path does, and returns what it recorded.
func ping(c *v1.Check, at time.Time, failed bool) store.Recorded {
	kind := monitor.PingSuccess
	if failed {
		kind = monitor.PingFail
	}
	rec, err := harness.Manager.Checks.RecordPing(ctx, c, store.Ping{Kind: kind, At: at})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return rec
}

// get returns the current check.
func get(key client.ObjectKey) func(Gomega) *v1.Check {
	return func(g Gomega) *v1.Check {
		var c v1.Check
		g.Expect(k8sClient.Get(ctx, key, &c)).To(Succeed())
		return &c
	}
}

// stateOf is the state a check's status shows, once it shows the latest
// spec.
func stateOf(c *v1.Check) func(Gomega) v1.CheckState {
	key := client.ObjectKeyFromObject(c)
	return func(g Gomega) v1.CheckState {
		cur := get(key)(g)
		g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
		return cur.Status.State
	}
}

func newCheck(ns, name string, spec v1.CheckSpec) *v1.Check {
	c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	ExpectWithOffset(1, k8sClient.Create(ctx, c)).To(Succeed())
	return c
}

// flipsOf are the check's flips in the ping store, oldest first.
func flipsOf(c *v1.Check) func(Gomega) []store.Flip {
	return func(g Gomega) []store.Flip {
		flips, err := harness.Manager.Store.Flips(ctx, c.UID)
		g.Expect(err).NotTo(HaveOccurred())
		for i, j := 0, len(flips)-1; i < j; i, j = i+1, j-1 {
			flips[i], flips[j] = flips[j], flips[i]
		}
		return flips
	}
}

func eventsFor(c *v1.Check, reason string) func(Gomega) []eventsv1.Event {
	return func(g Gomega) []eventsv1.Event {
		var list eventsv1.EventList
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(c.Namespace))).To(Succeed())
		var out []eventsv1.Event
		for _, e := range list.Items {
			if e.Regarding.Name == c.Name && e.Reason == reason {
				out = append(out, e)
			}
		}
		return out
	}
}

func i64(v int64) *int64   { return &v }
func str(s string) *string { return &s }

var _ = Describe("Check reconciler", func() {
	It("moves a pinged check up, into grace and down at exactly the right instants, with one flip and one Event", func() {
		ns := newNamespace()
		t0 := clk.Now()
		c := newCheck(ns, "minutely", v1.CheckSpec{Timeout: i64(60), Grace: 60})
		key := client.ObjectKeyFromObject(c)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateNew))

		ping(get(key)(Default), t0, false)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateUp))
		Eventually(func(g Gomega) time.Time {
			return get(key)(g).Status.NextPing.Time
		}).Should(BeTemporally("==", t0.Add(60*time.Second).Truncate(time.Second)))

		// The deadline loop looks at due checks each time the clock moves.
		clk.SetTime(t0.Add(59 * time.Second))
		Consistently(stateOf(c), "300ms").Should(Equal(v1.CheckStateUp))

		clk.SetTime(t0.Add(60 * time.Second))
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateGrace))

		clk.SetTime(t0.Add(120*time.Second - time.Microsecond))
		Consistently(stateOf(c), "300ms").Should(Equal(v1.CheckStateGrace))

		// Noticed late: the flip is still at the deadline itself.
		clk.SetTime(t0.Add(125 * time.Second))
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateDown))

		Eventually(flipsOf(c)).Should(HaveLen(1))
		f := flipsOf(c)(Default)[0]
		Expect(f.Up).To(BeFalse())
		Expect(f.Reason).To(Equal(monitor.ReasonTimeout))
		Expect(f.At).To(BeTemporally("==", t0.Add(120*time.Second).UTC().Truncate(time.Microsecond)))
		Eventually(eventsFor(c, v1.ReasonCheckDown)).Should(HaveLen(1))
		Expect(eventsFor(c, v1.ReasonCheckDown)(Default)[0].Type).To(Equal("Warning"))

		cur := get(key)(Default)
		up := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionUp)
		Expect(up.Status).To(Equal(metav1.ConditionFalse))
		Expect(up.Message).To(ContainSubstring("no ping arrived by its deadline"))
		Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, v1.ConditionReady)).To(BeTrue(),
			"a down check is still reconciled and monitored")

		// Looking again changes nothing: no second flip or Event.
		tick(cur)
		clk.Step(time.Minute)
		Consistently(flipsOf(c), "300ms").Should(HaveLen(1))
		Expect(eventsFor(c, v1.ReasonCheckDown)(Default)).To(HaveLen(1))

		// A ping brings it back up with an up flip at the ping, recorded
		// with the ping.
		back := clk.Now()
		rec := ping(get(key)(Default), back, false)
		Expect(rec.Flip).NotTo(BeNil())
		Expect(rec.Flip.Up).To(BeTrue())
		Expect(flipsOf(c)(Default)).To(HaveLen(2))
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateUp))
		Eventually(eventsFor(c, v1.ReasonCheckUp)).Should(HaveLen(1))
	})

	It("records a failure ping's down flip with the ping", func() {
		ns := newNamespace()
		c := newCheck(ns, "failing", v1.CheckSpec{Timeout: i64(3600), Grace: 60})
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateNew))
		rec := ping(get(client.ObjectKeyFromObject(c))(Default), clk.Now(), true)
		Expect(rec.Flip).NotTo(BeNil())
		Expect(flipsOf(c)(Default)).To(ConsistOf(And(HaveField("Reason", monitor.ReasonFail), HaveField("From", monitor.StatusNew))))
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateDown))
	})

	It("never takes a brand-new check down", func() {
		c := newCheck(newNamespace(), "idle", v1.CheckSpec{Timeout: i64(60), Grace: 60})
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateNew))
		clk.Step(48 * time.Hour)
		Consistently(stateOf(c), "300ms").Should(Equal(v1.CheckStateNew))
		Expect(get(client.ObjectKeyFromObject(c))(Default).Status.NextPing).To(BeNil())
	})

	It("stops monitoring a paused check", func() {
		ns := newNamespace()
		c := newCheck(ns, "paused", v1.CheckSpec{Timeout: i64(60), Grace: 60})
		key := client.ObjectKeyFromObject(c)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateNew))
		ping(get(key)(Default), clk.Now(), false)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateUp))
		clk.Step(time.Second)
		_, err := harness.Manager.Checks.Pause(ctx, get(key)(Default))
		Expect(err).NotTo(HaveOccurred())
		Eventually(stateOf(c)).Should(Equal(v1.CheckStatePaused))
		clk.Step(time.Hour)
		Consistently(stateOf(c), "300ms").Should(Equal(v1.CheckStatePaused))
		Expect(flipsOf(c)(Default)).To(BeEmpty())
		Expect(meta.FindStatusCondition(get(key)(Default).Status.Conditions, v1.ConditionUp).Status).
			To(Equal(metav1.ConditionUnknown))
	})

	It("moves the deadline when the spec changes, and records the down a shorter timeout has already missed", func() {
		c := newCheck(newNamespace(), "respec", v1.CheckSpec{Timeout: i64(3600), Grace: 60})
		key := client.ObjectKeyFromObject(c)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateNew))
		ping(get(key)(Default), clk.Now(), false)
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateUp))
		clk.Step(5 * time.Minute)
		Consistently(stateOf(c), "300ms").Should(Equal(v1.CheckStateUp))

		cur := get(key)(Default)
		shorter := cur.DeepCopy()
		shorter.Spec.Timeout = i64(60)
		Expect(k8sClient.Patch(ctx, shorter, client.MergeFrom(cur))).To(Succeed())
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateDown))
		Expect(flipsOf(c)(Default)).To(ConsistOf(HaveField("Reason", monitor.ReasonTimeout)))
	})

	It("forgets a deleted check's pings and flips", func() {
		c := newCheck(newNamespace(), "deleted", v1.CheckSpec{Timeout: i64(60), Grace: 60})
		Eventually(stateOf(c)).Should(Equal(v1.CheckStateNew))
		cur := get(client.ObjectKeyFromObject(c))(Default)
		ping(cur, clk.Now(), true)
		Expect(k8sClient.Delete(ctx, cur)).To(Succeed())
		Eventually(func() (bool, error) {
			_, found, err := harness.Manager.Store.Check(ctx, cur.UID)
			return found, err
		}).Should(BeFalse())
		Expect(flipsOf(cur)(Default)).To(BeEmpty())
	})

	It("forgets the pings of checks whose objects are gone, as after a deletion while no manager ran", func() {
		// Rows of a check the cluster no longer has, as a manager that was
		// down while the check was deleted finds them.
		ns := newNamespace()
		ghost := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ghost", UID: "00000000-0000-4000-8000-00000000dead"},
			Spec: v1.CheckSpec{Timeout: i64(60), Grace: 60}}
		ping(ghost, clk.Now(), false)
		_, found, err := harness.Manager.Store.Check(ctx, ghost.UID)
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue())
		// Housekeeping runs at start and then every minute.
		clk.Step(time.Minute)
		Eventually(func() (bool, error) {
			_, found, err := harness.Manager.Store.Check(ctx, ghost.UID)
			return found, err
		}).Should(BeFalse())
	})

	It("reports a bad cron expression as Ready=False and Stalled, and recovers when it is fixed", func() {
		ns := newNamespace()
		c := newCheck(ns, "badcron", v1.CheckSpec{Schedule: str("61 * * * *"), Grace: 60, TZ: "UTC"})
		key := client.ObjectKeyFromObject(c)
		Eventually(func(g Gomega) {
			cur := get(key)(g)
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
			ready := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(ready.Reason).To(Equal(v1.ReasonInvalidSchedule))
			g.Expect(ready.Message).To(ContainSubstring("invalid cron expression"))
			g.Expect(ready.Message).To(ContainSubstring("61"))
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, v1.ConditionStalled)).To(BeTrue())
		}).Should(Succeed())
		Eventually(eventsFor(c, v1.ReasonInvalidSchedule)).Should(HaveLen(1))

		cur := get(key)(Default)
		fixed := cur.DeepCopy()
		fixed.Spec.Schedule = str("0 * * * *")
		Expect(k8sClient.Patch(ctx, fixed, client.MergeFrom(cur))).To(Succeed())
		Eventually(func(g Gomega) {
			cur := get(key)(g)
			g.Expect(cur.Status.ObservedGeneration).To(Equal(cur.Generation))
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, v1.ConditionReady)).To(BeTrue())
			g.Expect(meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionStalled)).To(BeNil())
		}).Should(Succeed())
	})

	It("reports an unknown time zone in an OnCalendar expression", func() {
		c := newCheck(newNamespace(), "badzone", v1.CheckSpec{Schedule: str("12:34 Mars/Olympus"), Grace: 60, TZ: "UTC"})
		Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(get(client.ObjectKeyFromObject(c))(g).Status.Conditions, v1.ConditionReady)
		}).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Message", ContainSubstring("Mars/Olympus"))))
	})

	It("makes the later of two checks with the same UUID not Ready", func() {
		ns := newNamespace()
		const uuid = "0f0e0d0c-1c6d-4b6c-9c3a-1f0d2e3c4b5a"
		first := newCheck(ns, "first", v1.CheckSpec{UUID: uuid, Grace: 60})
		Eventually(stateOf(first)).Should(Equal(v1.CheckStateNew))
		time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
		second := newCheck(newNamespace(), "second", v1.CheckSpec{UUID: uuid, Grace: 60})
		Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(get(client.ObjectKeyFromObject(second))(g).Status.Conditions, v1.ConditionReady)
		}).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.ReasonDuplicateUUID),
			HaveField("Message", ContainSubstring("belongs to another project")), HaveField("Message", Not(ContainSubstring(ns)))))
		Expect(meta.IsStatusConditionTrue(get(client.ObjectKeyFromObject(first))(Default).Status.Conditions, v1.ConditionReady)).To(BeTrue())
	})

	It("makes the later of two checks with the same UUID in one project not Ready, naming the first", func() {
		ns := newNamespace()
		const uuid = "1f0e0d0c-1c6d-4b6c-9c3a-1f0d2e3c4b5a"
		first := newCheck(ns, "first", v1.CheckSpec{UUID: uuid, Grace: 60})
		Eventually(stateOf(first)).Should(Equal(v1.CheckStateNew))
		time.Sleep(1100 * time.Millisecond) // creation timestamps have one-second resolution
		second := newCheck(ns, "second", v1.CheckSpec{UUID: uuid, Grace: 60})
		Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(get(client.ObjectKeyFromObject(second))(g).Status.Conditions, v1.ConditionReady)
		}).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.ReasonDuplicateUUID),
			HaveField("Message", ContainSubstring("check first"))))
	})

	It("reports channels that do not exist, and recovers when they appear", func() {
		ns := newNamespace()
		c := newCheck(ns, "notify", v1.CheckSpec{Grace: 60, Channels: []string{"ops"}})
		key := client.ObjectKeyFromObject(c)
		Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(get(key)(g).Status.Conditions, v1.ConditionReady)
		}).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.ReasonUnknownChannel)))
		Expect(k8sClient.Create(ctx, &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ops"},
			Spec: v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "http://127.0.0.1:9/"}}}})).To(Succeed())
		Eventually(func(g Gomega) bool {
			return meta.IsStatusConditionTrue(get(key)(g).Status.Conditions, v1.ConditionReady)
		}).Should(BeTrue())
	})

	It("lets kstatus call a reconciled check Current whether it is up or down", func() {
		ns := newNamespace()
		up := newCheck(ns, "kstatus-up", v1.CheckSpec{Timeout: i64(3600), Grace: 60})
		down := newCheck(ns, "kstatus-down", v1.CheckSpec{Timeout: i64(3600), Grace: 60})
		ping(get(client.ObjectKeyFromObject(up))(Default), clk.Now(), false)
		ping(get(client.ObjectKeyFromObject(down))(Default), clk.Now(), true)
		Eventually(stateOf(up)).Should(Equal(v1.CheckStateUp))
		Eventually(stateOf(down)).Should(Equal(v1.CheckStateDown))
		for _, c := range []*v1.Check{up, down} {
			u := toUnstructured(get(client.ObjectKeyFromObject(c))(Default))
			res, err := status.Compute(u)
			Expect(err).NotTo(HaveOccurred())
			Expect(res.Status).To(Equal(status.CurrentStatus), "%s: %s", c.Name, res.Message)
		}
		bad := newCheck(ns, "kstatus-bad", v1.CheckSpec{Schedule: str("0 0 31 2 *"), Grace: 60, TZ: "UTC"})
		Eventually(func(g Gomega) status.Status {
			res, err := status.Compute(toUnstructured(get(client.ObjectKeyFromObject(bad))(g)))
			g.Expect(err).NotTo(HaveOccurred())
			return res.Status
		}).Should(Equal(status.FailedStatus))
	})
})

func toUnstructured(c *v1.Check) *unstructured.Unstructured {
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{Object: obj}
	u.SetAPIVersion(v1.GroupVersion.String())
	u.SetKind("Check")
	return u
}

var _ = Describe("Ping URL publishing", func() {
	It("writes no Secret in a namespace that has not bound the ping-url-secrets role, and says how to allow it", func() {
		ns := newNamespace()
		// The one request this test provokes on purpose.
		harness.Forbidden.Allow("POST", "/api/v1/namespaces/"+ns+"/secrets")
		c := newCheck(ns, "unpublished", v1.CheckSpec{Timeout: i64(3600), Grace: 60, TZ: "UTC",
			PingURLSecret: &v1.LocalObjectReference{Name: "unpublished-ping"}})
		Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(get(client.ObjectKeyFromObject(c))(g).Status.Conditions, v1.ConditionReady)
		}).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.ReasonPingURLSecretForbidden),
			HaveField("Message", ContainSubstring("bind the ClusterRole vigil-ping-url-secrets"))))
		Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unpublished-ping"}, &corev1.Secret{}))).To(BeTrue())

		// Bound as docs/install.md says, the Secret is published when the
		// check is next looked at (within a minute; here, at once).
		allowPingURLSecrets(ns)
		tick(get(client.ObjectKeyFromObject(c))(Default))
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "unpublished-ping"}, &corev1.Secret{})).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(get(client.ObjectKeyFromObject(c))(g).Status.Conditions, v1.ConditionReady)).To(BeTrue())
		}).Should(Succeed())
	})

	It("keeps the ping URL in a Secret the check owns, and leaves other Secrets alone", func() {
		ns := newNamespace()
		allowPingURLSecrets(ns)
		c := newCheck(ns, "published", v1.CheckSpec{Timeout: i64(3600), Grace: 60, TZ: "UTC",
			PingURLSecret: &v1.LocalObjectReference{Name: "published-ping"}})
		Eventually(func(g Gomega) {
			s := &corev1.Secret{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "published-ping"}, s)).To(Succeed())
			cur := get(client.ObjectKeyFromObject(c))(g)
			g.Expect(string(s.Data[controller.PingURLKey])).To(Equal("http://vigil.test/ping/" + cur.Status.UUID))
			g.Expect(string(s.Data[controller.CheckUUIDKey])).To(Equal(cur.Status.UUID))
			g.Expect(metav1.IsControlledBy(s, cur)).To(BeTrue())
		}).Should(Succeed())

		foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"}, StringData: map[string]string{"x": "y"}}
		Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
		other := newCheck(ns, "clash", v1.CheckSpec{Timeout: i64(3600), Grace: 60, TZ: "UTC",
			PingURLSecret: &v1.LocalObjectReference{Name: "taken"}})
		Eventually(func(g Gomega) *metav1.Condition {
			return meta.FindStatusCondition(get(client.ObjectKeyFromObject(other))(g).Status.Conditions, v1.ConditionReady)
		}).Should(And(HaveField("Status", metav1.ConditionFalse), HaveField("Message", ContainSubstring("does not belong to this check"))))
		s := &corev1.Secret{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(foreign), s)).To(Succeed())
		Expect(s.Data).To(Equal(map[string][]byte{"x": []byte("y")}))
	})
})

// allowPingURLSecrets binds the vigil-ping-url-secrets role to the manager in
// ns, as a namespace that uses spec.pingURLSecret does.
func allowPingURLSecrets(ns string) {
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vigil-ping-url-secrets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "vigil-ping-url-secrets"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: testenv.ManagerNamespace, Name: testenv.ManagerServiceAccount}},
	})).To(Succeed())
}
