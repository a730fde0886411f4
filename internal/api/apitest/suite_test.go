// Package apitest exercises the HTTP surface of a whole manager (the
// Management API, pings and badges, with the controllers running) against
// a real kube-apiserver and etcd, the way clients use it.
package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/testenv"
)

var (
	env       *envtest.Environment
	k8sClient client.Client
	baseURL   string
	cancel    context.CancelFunc
)

func TestAPI(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Management API and pings")
}

func freeAddr() string {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().String()
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(20 * time.Second)
	SetDefaultEventuallyPollingInterval(50 * time.Millisecond)
	var err error
	env, err = testenv.New()
	Expect(err).NotTo(HaveOccurred())
	cfg, err := env.Start()
	Expect(err).NotTo(HaveOccurred())
	k8sClient, err = client.New(cfg, client.Options{Scheme: env.Scheme})
	Expect(err).NotTo(HaveOccurred())

	addr := freeAddr()
	baseURL = "http://" + addr
	var ctx context.Context
	ctx, cancel = context.WithCancel(context.Background())
	mgr, err := manager.New(ctx, cfg, manager.Options{
		HTTPAddr: addr, BaseURL: baseURL, MetricsAddr: "0", ProbeAddr: "0", CheckLimit: 20,
	})
	Expect(err).NotTo(HaveOccurred())
	go func() {
		defer GinkgoRecover()
		Expect(mgr.Start(ctx)).To(Succeed())
	}()
	Eventually(func() error {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, baseURL+"/api/v3/checks/", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}).Should(Succeed())
})

var _ = AfterSuite(func() {
	if cancel != nil {
		cancel()
	}
	if env != nil {
		Expect(env.Stop()).To(Succeed())
	}
})

// proj is a namespace with a project: read-write and read-only keys and a
// ping key.
type proj struct {
	ns, rw, ro, pingKey string
}

func newProject() proj {
	ctx := context.Background()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "proj-"}}
	Expect(k8sClient.Create(ctx, n)).To(Succeed())
	rw, err := project.CreateAPIKey(ctx, k8sClient, n.Name, project.ReadWrite)
	Expect(err).NotTo(HaveOccurred())
	ro, err := project.CreateAPIKey(ctx, k8sClient, n.Name, project.ReadOnly)
	Expect(err).NotTo(HaveOccurred())
	data, err := project.EnsureProjectSecret(ctx, k8sClient, n.Name)
	Expect(err).NotTo(HaveOccurred())
	p := proj{ns: n.Name, rw: rw, ro: ro, pingKey: string(data[project.DataPingKey])}
	// The server knows the keys once its cache has the Secret.
	Eventually(func() int { return call("GET", "/api/v3/checks/", p.ro, "").status }).Should(Equal(http.StatusOK))
	return p
}

// response is an HTTP answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json() map[string]any {
	var m map[string]any
	ExpectWithOffset(1, json.Unmarshal(r.body, &m)).To(Succeed(), string(r.body))
	return m
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// call makes a request with an optional key and body.
func call(method, path, key, body string) response {
	req, err := http.NewRequestWithContext(context.Background(), method, baseURL+path, bytes.NewBufferString(body))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}
