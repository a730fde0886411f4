package delivery_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/notify"
)

// countingReader counts the reads that reach the API server through the
// manager's own reader.
type countingReader struct {
	client.Reader
	gets atomic.Int64
}

func (c *countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.gets.Add(1)
	return c.Reader.Get(ctx, key, obj, opts...)
}

var _ = Describe("Channel Secrets read for a wave of notifications", func() {
	It("reach the API server once per Secret and moment, and an edit is read after the time they are kept", func() {
		ctx := context.Background()
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "delivery-secrets-"}}
		Expect(k8sClient.Create(ctx, n)).To(Succeed())
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: n.Name, Name: "slack"},
			Data: map[string][]byte{"url": []byte("https://hooks.slack.com/services/T0/B0/first")}}
		Expect(k8sClient.Create(ctx, secret)).To(Succeed())
		big := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: n.Name, Name: "big"},
			Data: map[string][]byte{"url": []byte(strings.Repeat("x", notify.MaxSecretKept+1))}}
		Expect(k8sClient.Create(ctx, big)).To(Succeed())

		api := &countingReader{Reader: managerReader}
		const ttl = 2 * time.Second
		read := notify.SecretsIn(notify.RecentSecrets(api, ttl), n.Name)
		url := v1.SecretKeyRef{Name: "slack", Key: "url"}

		// 200 deliveries at once, as a wave of downs routed to one
		// Channel asks: one read.
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				defer GinkgoRecover()
				v, err := read(ctx, url)
				Expect(err).NotTo(HaveOccurred())
				Expect(v).To(HaveSuffix("/first"))
			})
		}
		wg.Wait()
		Expect(api.gets.Load()).To(BeEquivalentTo(1), "200 deliveries read the Secret %d times", api.gets.Load())
		// And the next ones within the time it is kept: none.
		for range 50 {
			_, err := read(ctx, url)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(api.gets.Load()).To(BeEquivalentTo(1))

		// An edit is read once the kept copy has expired.
		secret.Data["url"] = []byte("https://hooks.slack.com/services/T0/B0/second")
		Expect(k8sClient.Update(ctx, secret)).To(Succeed())
		Eventually(func() (string, error) { return read(ctx, url) }).WithTimeout(3 * ttl).Should(HaveSuffix("/second"))

		// Neither a missing Secret nor a large one is kept.
		before := api.gets.Load()
		for range 3 {
			_, err := read(ctx, v1.SecretKeyRef{Name: "missing", Key: "url"})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%v", err)
			_, err = read(ctx, v1.SecretKeyRef{Name: "big", Key: "url"})
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(api.gets.Load() - before).To(BeEquivalentTo(6))
	})
})
