package checks_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

// waitingShare is this suite's bound of one namespace's writes waiting for
// its one write slot.
const waitingShare = 64

var _ = Describe("Sharing the Kubernetes client between namespaces", func() {
	// #46's probe: 128 parallel snoozes from one project took another
	// project's snoozes from 17 ms to 5.2 s: one queue, first come first
	// served, in client-go's rate limiter.
	It("lets another namespace's write in next, however many one namespace has waiting, and refuses one past its share", func() {
		timeout := int64(3600)
		made := func(ns string, n int) []*v1.Check {
			var out []*v1.Check
			for i := range n {
				c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprint("c-", i)},
					Spec: v1.CheckSpec{Timeout: &timeout, Grace: 60}}
				Expect(harness.Client.Create(ctx, c)).To(Succeed())
				out = append(out, c)
			}
			for i, c := range out {
				out[i] = cached(c)
			}
			return out
		}
		busy, quiet := newProject(), newProject()
		crowd := made(busy, waitingShare+2) // one holds the slot, 64 wait, one too many
		other := made(quiet, 1)[0]

		var mu sync.Mutex
		var finished []string // in the order the writes returned
		var wg sync.WaitGroup
		update := func(c *v1.Check, change func()) {
			wg.Go(func() {
				defer GinkgoRecover()
				_, err := door.Update(ctx, c, func(c *v1.Check) error {
					change()
					c.Spec.Desc = "changed"
					return nil
				})
				Expect(err).NotTo(HaveOccurred(), c.Name)
				mu.Lock()
				finished = append(finished, c.Namespace+"/"+c.Name)
				mu.Unlock()
			})
		}

		By("the busy namespace's first write holds the slot; 64 more wait")
		holding, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		update(crowd[0], func() { once.Do(func() { close(holding) }); <-release })
		<-holding
		for _, c := range crowd[1 : waitingShare+1] {
			update(c, func() {})
		}
		Eventually(func() int { return door.WritesWaiting(busy) }).Should(Equal(waitingShare))

		By("one more of the busy namespace is refused at once, and counted")
		_, err := door.Update(ctx, crowd[waitingShare+1], func(c *v1.Check) error { c.Spec.Desc = "refused"; return nil })
		Expect(errors.Is(err, checks.ErrOverShare)).To(BeTrue(), "%v", err)
		Expect(managertest.NamespaceCounter("vigil_check_writes_refused_total", busy)).To(Equal(1.0))
		Expect(managertest.NamespaceCounter("vigil_check_writes_refused_total", quiet)).To(Equal(0.0))

		By("the quiet namespace's write comes in after one of the busy one's, not after 64")
		update(other, func() {})
		Eventually(func() int { return door.WritesWaiting(quiet) }).Should(Equal(1))
		close(release)
		wg.Wait()
		Expect(finished).To(HaveLen(waitingShare + 2))
		at := slices.Index(finished, quiet+"/"+other.Name)
		Expect(at).To(BeNumerically("<=", 2), "the quiet namespace's write returned %d-th: %v", at+1, finished[:at])
	})
})
