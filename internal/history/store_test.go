package history_test

import (
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/history"
)

func newCheck(ns, name string) *v1.Check {
	c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	Expect(k8sClient.Create(ctx, c)).To(Succeed())
	return c
}

func newNamespace() string {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hist-"}}
	Expect(k8sClient.Create(ctx, ns)).To(Succeed())
	return ns.Name
}

// appendPing is the mutation the ping path makes: the next serial number
// comes from the history itself, the source of truth.
func appendPing(h *v1.CheckHistory) error {
	h.LastN++
	h.Pings = append(h.Pings, v1.PingRecord{N: h.LastN, Type: v1.PingSuccess, Date: metav1.NowMicro()})
	return nil
}

var _ = Describe("Store", func() {
	var store *history.Store
	BeforeEach(func() {
		store = &history.Store{Client: k8sClient, Reader: k8sClient}
	})

	It("returns an empty, unsaved history for a check that has none", func() {
		c := newCheck(newNamespace(), "fresh")
		h, err := store.Get(ctx, c)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.ResourceVersion).To(BeEmpty())
		Expect(h.Pings).To(BeEmpty())
		err = k8sClient.Get(ctx, client.ObjectKeyFromObject(c), &v1.CheckHistory{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Get must not create the history")
	})

	It("creates the history lazily, owned by its check", func() {
		c := newCheck(newNamespace(), "lazy")
		_, err := store.Update(ctx, c, appendPing)
		Expect(err).NotTo(HaveOccurred())
		var h v1.CheckHistory
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), &h)).To(Succeed())
		Expect(h.LastN).To(Equal(int64(1)))
		Expect(h.OwnerReferences).To(HaveLen(1))
		ref := h.OwnerReferences[0]
		Expect(ref.UID).To(Equal(c.UID))
		Expect(ref.Kind).To(Equal("Check"))
		Expect(*ref.Controller).To(BeTrue())
		// envtest runs no garbage collector; the reference is what makes
		// the cluster's collector delete the history with the check.
	})

	It("loses no append when writers race (optimistic concurrency)", func() {
		c := newCheck(newNamespace(), "racy")
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func() {
				defer GinkgoRecover()
				defer wg.Done()
				for i := 0; i < 5; i++ {
					_, err := store.Update(ctx, c, appendPing)
					Expect(err).NotTo(HaveOccurred())
				}
			}()
		}
		wg.Wait()
		h, err := store.Get(ctx, c)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.LastN).To(Equal(int64(40)))
		seen := map[int64]bool{}
		for _, p := range h.Pings {
			Expect(seen[p.N]).To(BeFalse(), "serial %d recorded twice", p.N)
			seen[p.N] = true
		}
		Expect(seen).To(HaveLen(40))
	})

	It("trims to the namespace's limits on every write", func() {
		c := newCheck(newNamespace(), "bounded")
		store.Limits = func(string) history.Limits {
			l := history.DefaultLimits()
			l.PingLog = 3
			return l
		}
		for i := 0; i < 5; i++ {
			_, err := store.Update(ctx, c, appendPing)
			Expect(err).NotTo(HaveOccurred())
		}
		h, err := store.Get(ctx, c)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.LastN).To(Equal(int64(5)))
		Expect(h.Pings).To(HaveLen(3))
		Expect(h.Pings[0].N).To(Equal(int64(3)))
	})

	It("replaces the leftover history of an earlier check with the same name", func() {
		ns := newNamespace()
		old := newCheck(ns, "reborn")
		_, err := store.Update(ctx, old, appendPing)
		Expect(err).NotTo(HaveOccurred())
		// Delete the check; without a garbage collector its history stays.
		Expect(k8sClient.Delete(ctx, old)).To(Succeed())
		reborn := newCheck(ns, "reborn")

		h, err := store.Get(ctx, reborn)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.LastN).To(BeZero(), "the new check must not see the old check's pings")

		h, err = store.Update(ctx, reborn, appendPing)
		Expect(err).NotTo(HaveOccurred())
		Expect(h.LastN).To(Equal(int64(1)))
		Expect(h.OwnerReferences[0].UID).To(Equal(reborn.UID))
	})

	It("labels histories that owe notifications", func() {
		c := newCheck(newNamespace(), "owing")
		_, err := store.Update(ctx, c, func(h *v1.CheckHistory) error {
			h.Flips = append(h.Flips, v1.FlipRecord{
				Flip:       v1.Flip{Time: metav1.NewMicroTime(time.Now()), Up: false, Reason: "timeout"},
				Deliveries: []v1.FlipDelivery{{Channel: "ops", State: v1.DeliveryPending}},
			})
			return nil
		})
		Expect(err).NotTo(HaveOccurred())
		var list v1.CheckHistoryList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(c.Namespace), client.MatchingLabels{history.PendingLabel: "true"})).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
	})
})
