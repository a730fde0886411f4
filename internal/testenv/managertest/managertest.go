// Package managertest runs a whole Vigil manager (controllers, the leader's
// loops and the HTTP server) against a real control plane (package
// testenv), for the suites that test it the way clients and users reach it
// (internal/api/apitest, internal/ping/pingtest, the dashboard's, the
// controllers' and others). It asserts with Gomega, so call it from Ginkgo
// nodes.
package managertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// Harness is a running control plane and manager.
type Harness struct {
	Cluster *testenv.Cluster
	// Config and Client are a cluster administrator's, for the test's own
	// objects.
	Config *rest.Config
	Client client.Client
	// ManagerConfig is the manager's: its ServiceAccount, bound to the
	// roles the install ships.
	ManagerConfig *rest.Config
	// Forbidden records what the API server refused the manager; Stop
	// fails the suite if it refused anything.
	Forbidden *testenv.Forbidden
	Manager   *manager.Manager
	// BaseURL is the manager's HTTP server, such as http://127.0.0.1:34567.
	BaseURL string

	cancel          context.CancelFunc
	stopped         chan struct{} // closed when the manager's Start returns
	opts            manager.Options
	limitsConfigMap types.NamespacedName
}

// Start starts a control plane (testenv.Start: the package's shared one
// under testenv.Main) and a manager with opts, on a free loopback port
// unless opts names one, and returns once its HTTP server answers. The
// manager runs as its ServiceAccount under the shipped RBAC (config/default),
// not as an administrator.
func Start(opts manager.Options) *Harness {
	return StartUnder(testenv.AsManager, opts)
}

// RBAC installs the manager's ServiceAccount and roles with an
// administrator's config, and returns the manager's config and the record
// of what the API server forbids it: testenv.AsManager (config/default), or
// a rendering of the chart (Chart).
type RBAC func(ctx context.Context, admin *rest.Config) (*rest.Config, *testenv.Forbidden, error)

// Chart is the RBAC of charts/vigil rendered with the helm arguments args,
// such as "--set", "watchNamespaces={team-a,team-b}" (testenv.AsChartManager).
func Chart(args ...string) RBAC {
	return func(ctx context.Context, admin *rest.Config) (*rest.Config, *testenv.Forbidden, error) {
		return testenv.AsChartManager(ctx, admin, args...)
	}
}

// StartUnder is Start with the manager under the roles rbac installs.
func StartUnder(rbac RBAC, opts manager.Options) *Harness {
	h := &Harness{}
	var err error
	h.Cluster, err = testenv.Start(context.Background())
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	h.Config = h.Cluster.Config
	// A failed assertion below panics out of Start, and the suite never
	// gets a Harness to Stop: stop the manager and the control plane
	// here, or the control plane stays held (or its kube-apiserver and
	// etcd run until the test process ends).
	started := false
	defer func() {
		if !started {
			h.stopManager()
			_ = h.Cluster.Stop()
		}
	}()
	h.Client, err = client.New(h.Config, client.Options{Scheme: h.Cluster.Scheme})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	h.ManagerConfig, h.Forbidden, err = rbac(context.Background(), h.Config)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())

	if opts.HTTPAddr == "" {
		opts.HTTPAddr, err = testenv.FreeAddr(context.Background())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	}
	if opts.BaseURL == "" {
		opts.BaseURL = "http://" + opts.HTTPAddr
	}
	if opts.Store == "" {
		opts.Store, err = testenv.StoreDSN(context.Background(), ginkgo.GinkgoT().TempDir())
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
	}
	if opts.LimitsConfigMap.Name == "" {
		opts.LimitsConfigMap = types.NamespacedName{Namespace: testenv.ManagerNamespace, Name: project.DefaultLimitsConfigMap}
	}
	if opts.MetricsAddr == "" {
		opts.MetricsAddr = "0"
	}
	if opts.ProbeAddr == "" {
		opts.ProbeAddr = "0"
	}
	// The address it serves: opts.BaseURL is what its answers name.
	h.BaseURL = "http://" + opts.HTTPAddr
	h.limitsConfigMap = opts.LimitsConfigMap
	h.opts = opts
	h.startManager()
	started = true
	return h
}

// startManager builds and starts a manager with the harness's options and
// waits until its HTTP server answers and, unless it has to be elected
// first, its deadline loop ticks: a spec that moves a fake clock right
// after a restart moves it on the loop's beats (deadline.Loop.Ticking).
func (h *Harness) startManager() {
	h.startManagerWith(h.ManagerConfig)
	gomega.Eventually(func() error {
		_, err := h.listChecks("")
		return err
	}).Should(gomega.Succeed())
	if !h.opts.LeaderElection {
		gomega.Eventually(h.Manager.Deadlines.Ticking()).Should(gomega.BeClosed())
	}
}

// startManagerWith builds and starts a manager with the harness's options,
// talking to the API server through cfg.
func (h *Harness) startManagerWith(cfg *rest.Config) {
	var ctx context.Context
	ctx, h.cancel = context.WithCancel(context.Background())
	var err error
	h.Manager, err = manager.New(ctx, cfg, h.opts)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	stopped := make(chan struct{})
	h.stopped = stopped
	go func(m *manager.Manager) {
		defer ginkgo.GinkgoRecover()
		defer close(stopped)
		gomega.Expect(m.Start(ctx)).To(gomega.Succeed())
	}(h.Manager)
}

// StoreDSN names the manager's ping store: another process opening it is
// another replica, on PostgreSQL.
func (h *Harness) StoreDSN() string { return h.opts.Store }

// Restart stops the manager, as a crash or a rollout would between two
// commits (what it holds in memory is lost; the ping store and the API
// server keep what was committed), and starts a new one with the same
// options and store. Each of meanwhile runs after the old one stopped,
// before the new one starts (time passing while no manager runs).
func (h *Harness) Restart(meanwhile ...func()) {
	h.stopManager()
	for _, f := range meanwhile {
		f()
	}
	// The stopped manager's controllers keep their names in this process.
	h.opts.SharedProcess = true
	h.startManager()
}

// RestartHoldingChecks restarts the manager as Restart does, behind an API
// server slow to list Checks: the new manager's lists and watches of
// Checks get no answer until release is closed (its other requests are
// answered as ever). It returns once the manager is started, without
// waiting for it to serve.
func (h *Harness) RestartHoldingChecks(release <-chan struct{}) {
	h.stopManager()
	h.opts.SharedProcess = true
	cfg := rest.CopyConfig(h.ManagerConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return holdChecks{next: rt, release: release} })
	h.startManagerWith(cfg)
}

// holdChecks holds the requests for the collection of Checks (a list or a
// watch, in any namespace) until release is closed.
type holdChecks struct {
	next    http.RoundTripper
	release <-chan struct{}
}

func (t holdChecks) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/apis/monitoring.vigil.dev/") && strings.HasSuffix(r.URL.Path, "/checks") {
		select {
		case <-t.release:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return t.next.RoundTrip(r)
}

// listChecks asks the API for the checks the key sees, for the answer's
// status code.
func (h *Harness) listChecks(key string) (int, error) {
	r, err := Request(http.DefaultClient, http.MethodGet, h.BaseURL+"/api/v3/checks/", "", testenv.APIKey(key))
	return r.Status, err
}

// Response is an answer of Vigil's HTTP server, its body read whole.
type Response struct {
	// Method is the request's: the answer to a HEAD has no body.
	Method string
	Status int
	Header http.Header
	Body   []byte
}

// JSON is the body as a JSON object; the spec fails when it is not one.
func (r Response) JSON() map[string]any {
	ginkgo.GinkgoHelper()
	var m map[string]any
	gomega.Expect(json.Unmarshal(r.Body, &m)).To(gomega.Succeed(), string(r.Body))
	return m
}

// Text is the body as a string.
func (r Response) Text() string { return string(r.Body) }

// String is the status and the body, for failure messages.
func (r Response) String() string { return fmt.Sprintf("%d %s", r.Status, r.Body) }

// Call makes a request to the manager's HTTP server: method on path (such as
// /api/v3/checks/), with body, and with the API key unless key is empty. A
// request that gets no answer fails the spec.
func (h *Harness) Call(method, path, key, body string) Response {
	ginkgo.GinkgoHelper()
	r, err := Request(http.DefaultClient, method, h.BaseURL+path, body, testenv.APIKey(key))
	gomega.Expect(err).NotTo(gomega.HaveOccurred(), "%s %s", method, path)
	return r
}

// Request makes a request on c with header's fields and returns the
// answer, or the error of a request that got none (or whose body could not
// be read): for requests Call does not make (another client, other
// headers, another server) and for goroutines, which must not fail the
// spec themselves.
func Request(c *http.Client, method, url, body string, header http.Header) (Response, error) {
	status, h, b, err := testenv.Do(context.Background(), c, method, url, body, header)
	if err != nil {
		return Response{}, err
	}
	return Response{Method: method, Status: status, Header: h, Body: b}, nil
}

// stopManager stops the manager, if one runs, and waits until it has: a
// manager still writing would race what comes next (a new manager, the
// control plane's reset for the next suite).
func (h *Harness) stopManager() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	if h.stopped != nil {
		gomega.Eventually(h.stopped).WithTimeout(time.Minute).Should(gomega.BeClosed())
	}
}

// Stop stops the manager and the control plane, and fails if the API
// server forbade the manager anything.
func (h *Harness) Stop() {
	if h == nil {
		return
	}
	h.stopManager()
	if h.Forbidden != nil {
		gomega.Expect(h.Forbidden.Requests()).To(gomega.BeEmpty(), "the manager made calls its RBAC does not allow")
	}
	if h.Cluster != nil {
		gomega.Expect(h.Cluster.Stop()).To(gomega.Succeed())
	}
	gomega.Expect(testenv.StopPostgres()).To(gomega.Succeed())
}

// Project is a namespace with a project: API keys and the ping key.
type Project struct {
	Namespace, ReadWrite, ReadOnly, PingKey string
}

// NewProject creates a namespace named from prefix with a project, and
// returns once the manager accepts its keys (its cache has the Secret).
func (h *Harness) NewProject(prefix string) Project {
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	gomega.Expect(h.Client.Create(context.Background(), n)).To(gomega.Succeed())
	p := h.CreateProject(n.Name)
	gomega.Eventually(func() (int, error) { return h.listChecks(p.ReadOnly) }).Should(gomega.Equal(http.StatusOK))
	return p
}

// CreateProject creates the project of an existing namespace (its keys),
// and returns at once: a manager that does not serve the namespace never
// accepts them.
func (h *Harness) CreateProject(namespace string) Project {
	ctx := context.Background()
	rw, err := project.CreateAPIKey(ctx, h.Client, namespace, project.ReadWrite)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	ro, err := project.CreateAPIKey(ctx, h.Client, namespace, project.ReadOnly)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	data, err := project.EnsureProjectSecret(ctx, h.Client, namespace)
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	return Project{Namespace: namespace, ReadWrite: rw, ReadOnly: ro, PingKey: string(data[project.DataPingKey])}
}

// Accepts says whether the manager answers an API request with key as
// allowed (200) rather than refused: whether it serves the key's project.
func (h *Harness) Accepts(key string) (bool, error) {
	code, err := h.listChecks(key)
	return code == http.StatusOK, err
}

// SetCheckLimit sets the project's check limit in the limits ConfigMap, as
// a cluster administrator would.
func (h *Harness) SetCheckLimit(namespace string, limit int) {
	h.setLimit(namespace+"."+project.LimitsKeyCheckLimit, fmt.Sprint(limit))
}

// SetBodyBytesLimit sets the ping body bytes the namespace's checks keep
// together in the limits ConfigMap, as a cluster administrator would, and
// returns once the manager applies it.
func (h *Harness) SetBodyBytesLimit(namespace string, limit int64) {
	h.setLimit(namespace+"."+project.LimitsKeyBodyBytesLimit, fmt.Sprint(limit))
	gomega.Eventually(func() int64 { return h.Manager.Limits.BodyBytesLimit(namespace) }).Should(gomega.Equal(limit))
}

// SetObjectLimit sets the namespace's limit of objects of the kind in the
// limits ConfigMap, as a cluster administrator would, and returns once the
// manager applies it.
func (h *Harness) SetObjectLimit(namespace string, kind project.ObjectKind, limit int) {
	h.setLimit(namespace+"."+string(kind), fmt.Sprint(limit))
	gomega.Eventually(func() int { return h.Manager.Limits.ObjectLimit(namespace, kind) }).Should(gomega.Equal(limit))
}

// AllowEgress lets the project's Channels reach allow (CIDRs, addresses,
// host names; egress.Loopback.String() for the tests' loopback receivers),
// through the limits ConfigMap, as a cluster administrator would. The
// manager runs with the default egress policy: without this, its Channels
// reach no loopback or private address.
func (h *Harness) AllowEgress(namespace, allow string) {
	h.setLimit(namespace+"."+project.LimitsKeyEgressAllow, allow)
}

// AllowEgressNow is AllowEgress, returning once the manager applies it:
// for tests whose clock does not move by itself, where a notification
// refused before would wait for a retry that never comes.
func (h *Harness) AllowEgressNow(namespace, allow string) {
	h.AllowEgress(namespace, allow)
	gomega.Eventually(func() string { return h.Manager.Limits.EgressAllow(namespace).String() }).Should(gomega.Equal(allow))
}

func (h *Harness) setLimit(key, value string) {
	ctx := context.Background()
	name := h.limitsConfigMap
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name}}
	_, err := controllerutil.CreateOrPatch(ctx, h.Client, cm, func() error {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[key] = value
		return nil
	})
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
}

// NamespaceCounter is the value of the manager's counter name for the
// namespace (its "namespace" label): 0 when it has not counted any.
// Managers of one process share the registry, as they share the series.
func NamespaceCounter(name, namespace string) float64 {
	families, err := ctrlmetrics.Registry.Gather()
	gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() == namespace {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
