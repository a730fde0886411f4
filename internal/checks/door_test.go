package checks_test

import (
	"errors"
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

func newProject() string { return harness.NewProject("door-").Namespace }

// cached waits until the manager's cache holds the object at the
// generation the test wrote. Not at its resourceVersion: the leader's
// status writes move that on meanwhile, and the cache may never hold the
// version the test read.
func cached(c *v1.Check) *v1.Check {
	var got *v1.Check
	EventuallyWithOffset(1, func(g Gomega) {
		cur := &v1.Check{}
		g.Expect(harness.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(c), cur)).To(Succeed())
		g.Expect(cur.Generation).To(Equal(c.Generation))
		got = cur
	}).Should(Succeed())
	return got
}

var _ = Describe("Writing checks", func() {
	timeout := int64(3600)
	spec := func() v1.CheckSpec { return v1.CheckSpec{Timeout: &timeout, Grace: 60} }

	It("applies a change lost to another writer again to the newest copy", func() {
		ns := newProject()
		read := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "contended"}, Spec: spec()}
		Expect(door.CreateOwned(ctx, read)).To(Succeed())
		runs := 0
		got, err := door.Update(ctx, read, func(c *v1.Check) error {
			runs++
			if runs == 1 {
				// Someone else writes between the copy the Door started
				// from and its write (to the newest copy: the
				// controller's status writes may already have moved it).
				Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
					other := &v1.Check{}
					if err := harness.Client.Get(ctx, client.ObjectKeyFromObject(read), other); err != nil {
						return err
					}
					other.Spec.Tags = "theirs"
					return harness.Client.Update(ctx, other)
				})).To(Succeed())
			}
			c.Spec.Desc = "ours"
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
		// At least twice: the first write lost to the other writer's.
		Expect(runs).To(BeNumerically(">=", 2))
		Expect(got.Spec.Tags).To(Equal("theirs"))
		Expect(got.Spec.Desc).To(Equal("ours"))
		// It returned once the cache shows what it wrote.
		cur := &v1.Check{}
		Expect(harness.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(got), cur)).To(Succeed())
		Expect(cur.Spec.Desc).To(Equal("ours"))

		// Nothing to change: nothing written.
		same, err := door.Update(ctx, got, func(*v1.Check) error { return nil })
		Expect(err).NotTo(HaveOccurred())
		Expect(same.ResourceVersion).To(Equal(got.ResourceVersion))
		// A change that fails is not written.
		bad := errors.New("no")
		_, err = door.Update(ctx, got, func(c *v1.Check) error { c.Spec.Desc = "x"; return bad })
		Expect(err).To(MatchError(bad))
	})

	It("never deletes a re-created object of the same name", func() {
		ns := newProject()
		old := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "recreated"}, Spec: spec()}
		Expect(door.CreateOwned(ctx, old)).To(Succeed())
		Expect(harness.Client.Delete(ctx, old.DeepCopy())).To(Succeed())
		fresh := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "recreated"}, Spec: spec()}
		Eventually(func() error { return harness.Client.Create(ctx, fresh.DeepCopy()) }).Should(Succeed())
		err := door.Delete(ctx, old)
		Expect(err).To(HaveOccurred())
		Expect(apierrors.IsNotFound(err)).To(BeFalse(), "a failed precondition, not a missing object")
		Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(fresh), &v1.Check{})).To(Succeed())

		cur := &v1.Check{}
		Expect(harness.Client.Get(ctx, client.ObjectKeyFromObject(fresh), cur)).To(Succeed())
		Expect(door.Delete(ctx, cur)).To(Succeed())
		// It returned once the cache no longer shows it.
		Expect(apierrors.IsNotFound(harness.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(cur), &v1.Check{}))).To(BeTrue())
		Expect(door.Delete(ctx, cur)).To(Succeed(), "deleting a check already gone")
	})
})

var _ = Describe("Creating checks", func() {
	It("keeps a project's limit exact however many create at once, and answers the existing check to its rule", func() {
		ns := newProject()
		Expect(countOver(ns, 50)).To(Equal(7))
		var list v1.CheckList
		Expect(harness.Client.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(7))
	})

	It("creates one check for requests racing to the same slug, with every channel of the project", func() {
		ns := newProject()
		for _, name := range []string{"hook", "mail"} {
			Expect(harness.Client.Create(ctx, &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec: v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "https://example.com/" + name}}}})).To(Succeed())
		}
		Eventually(func() []string { return door.ChannelNames(ns) }).Should(Equal([]string{"hook", "mail"}))
		var mu sync.Mutex
		created, found := 0, map[string]bool{}
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				defer GinkgoRecover()
				spec := v1.DefaultCheckSpec()
				spec.Slug = "nightly"
				c, isNew, err := door.Create(ctx, checks.Creation{Namespace: ns, Spec: spec, AllChannels: true,
					Existing: func(c *v1.Check) bool { return c.Spec.Slug == "nightly" }})
				Expect(err).NotTo(HaveOccurred())
				mu.Lock()
				defer mu.Unlock()
				found[c.Name] = true
				if isNew {
					created++
				}
			})
		}
		wg.Wait()
		Expect(created).To(Equal(1))
		Expect(found).To(HaveLen(1))
		for name := range found {
			c := &v1.Check{}
			Expect(harness.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c)).To(Succeed())
			Expect(c.Spec.Channels).To(Equal([]string{"hook", "mail"}))
			Expect(c.Name).To(HavePrefix("nightly-"))
			Expect(c.Spec.UUID).NotTo(BeEmpty())
			// A flip owes a notification to each channel "*" or the list
			// names, as the cache has them.
			Expect(door.Channels(cached(c))).To(Equal([]string{"hook", "mail"}))
		}
	})
})

// countOver makes n creations race in the project, and returns how many
// created a check; the others must be refused for the limit, nothing else.
func countOver(ns string, n int) int {
	var mu sync.Mutex
	created := 0
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			defer GinkgoRecover()
			spec := v1.DefaultCheckSpec()
			spec.Name = fmt.Sprint("check ", i)
			_, isNew, err := door.Create(ctx, checks.Creation{Namespace: ns, Spec: spec})
			var limit *checks.LimitError
			if err != nil {
				Expect(errors.As(err, &limit)).To(BeTrue(), "%v", err)
				Expect(limit.Limit).To(Equal(7))
			}
			mu.Lock()
			defer mu.Unlock()
			if isNew {
				created++
			}
		})
	}
	wg.Wait()
	return created
}

var _ = Describe("Reading a project", func() {
	timeout := int64(3600)

	// Every check of a Project must read as the door shows it alone, read
	// afresh: a Project kept from an earlier read included.
	sameAsAlone := func(g Gomega, p *checks.Project) {
		now := door.Now()
		for i, c := range p.Checks {
			obs, err := door.Observed(ctx, c)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.View(i, now)).To(Equal(door.View(c, obs, now)), c.Name)
			g.Expect(p.Observed(i).NPings).To(Equal(obs.NPings), c.Name)
		}
	}
	names := func(p *checks.Project) []string {
		var out []string
		for _, c := range p.Checks {
			out = append(out, c.Name)
		}
		return out
	}

	It("is the same answer while nothing changed, and shows each change", func() {
		ns := newProject()
		for _, name := range []string{"a", "b", "c"} {
			c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60}}
			Expect(door.CreateOwned(ctx, c)).To(Succeed())
		}
		// Once the controller's status writes settle, two reads in a row
		// are one answer.
		Eventually(func(g Gomega) {
			first, err := door.Project(ctx, ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(names(first)).To(Equal([]string{"a", "b", "c"}))
			again, err := door.Project(ctx, ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again).To(BeIdenticalTo(first))
			sameAsAlone(g, again)
		}).Should(Succeed())

		p, err := door.Project(ctx, ns)
		Expect(err).NotTo(HaveOccurred())
		b := p.Checks[1]
		_, err = door.RecordPing(ctx, b, store.Ping{Kind: monitor.PingSuccess, At: door.Now(), Method: "POST"})
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			p, err := door.Project(ctx, ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.Observed(1).NPings).To(BeEquivalentTo(1))
			g.Expect(p.View(1, door.Now()).Status).To(Equal(monitor.StatusUp))
			sameAsAlone(g, p)
		}).Should(Succeed())

		// a goes: b takes its place, with b's row.
		Expect(door.Delete(ctx, p.Checks[0])).To(Succeed())
		Eventually(func(g Gomega) {
			p, err := door.Project(ctx, ns)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(names(p)).To(Equal([]string{"b", "c"}))
			g.Expect(p.Observed(0).NPings).To(BeEquivalentTo(1))
			g.Expect(p.Observed(1).NPings).To(BeZero())
			sameAsAlone(g, p)
		}).Should(Succeed())
	})
})
