package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vigil-operator/vigil/internal/devenv"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/scheme"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// cluster is a control plane with Vigil installed from rendered manifests
// and its manager running as a process.
type cluster struct {
	cp    *testenv.Cluster
	admin *rest.Config
	// c is a cluster administrator's client, for what users do.
	c client.Client
	// adminKubeconfig is for kubectl and `vigil keys`, run as the user.
	adminKubeconfig string
	kubectlBin      string
	dir             string

	// The manager: its workload, the replicas running it, and the Service
	// in front of their HTTP servers.
	workload *unstructured.Unstructured
	// extraArgs are added to the manifest's arguments (fault tests only).
	extraArgs []string
	// apiProxy, when set, stands between the manager and the API server.
	apiProxy *tcpProxy
	// replicas are the workload's pods, by ordinal; nil while one is down.
	replicas []*replica
	// service spreads connections over the running replicas, as
	// kube-proxy does for the install's Service; httpURL is its address,
	// the same across restarts.
	service *service
	httpURL string
}

// replica is one pod of the workload: the manager process and its
// addresses.
type replica struct {
	*managerProcess
	httpAddr, metricsURL, probeURL string
}

// startCluster starts a control plane without Vigil's CRDs, creates
// namespace unless it is empty (as `helm install --create-namespace` does),
// applies objs (the rendered install) except the workload, and returns the
// cluster. The CRDs come from the install, as they would in a cluster.
func startCluster(namespace string, objs []unstructured.Unstructured) *cluster {
	cl := &cluster{dir: GinkgoT().TempDir()}
	var err error
	cl.cp, err = testenv.Start(context.Background(), testenv.WithoutCRDs())
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(cl.cp.Stop)
	cl.admin, cl.kubectlBin = cl.cp.Config, cl.cp.Kubectl
	cl.c, err = client.New(cl.admin, client.Options{Scheme: e2eScheme()})
	Expect(err).NotTo(HaveOccurred())
	cl.adminKubeconfig = filepath.Join(cl.dir, "admin.kubeconfig")
	Expect(testenv.WriteKubeconfig(cl.adminKubeconfig, cl.admin)).To(Succeed())

	ctx := context.Background()
	if namespace != "" {
		Expect(cl.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})).To(Succeed())
	}
	Expect(devenv.Apply(ctx, cl.c, objs, devenv.IsWorkload)).To(Succeed())
	var workloads int
	for i := range objs {
		if devenv.IsWorkload(&objs[i]) {
			cl.workload = &objs[i]
			workloads++
		}
	}
	Expect(workloads).To(Equal(1), "the install runs the manager in one workload")
	// Wait until the API server serves the CRDs the install applied.
	Eventually(func(g Gomega) {
		for _, name := range []string{"checks.monitoring.vigil.dev", "channels.monitoring.vigil.dev"} {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(cl.c.Get(ctx, client.ObjectKey{Name: name}, crd)).To(Succeed())
			established := false
			for _, cond := range crd.Status.Conditions {
				established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
			}
			g.Expect(established).To(BeTrue(), name)
		}
	}).Should(Succeed())
	// A new client, so that its REST mapper knows the CRDs.
	cl.c, err = client.New(cl.admin, client.Options{Scheme: e2eScheme()})
	Expect(err).NotTo(HaveOccurred())
	cl.service = newService()
	cl.httpURL = "http://" + cl.service.addr
	return cl
}

// e2eScheme is Vigil's scheme and CRDs, to watch the install's CRDs arrive.
func e2eScheme() *runtime.Scheme {
	s := scheme.New()
	Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
	return s
}

// managerContainer is the workload's manager container.
func (cl *cluster) managerContainer() corev1.Container {
	var spec corev1.PodTemplateSpec
	raw, found, err := unstructured.NestedMap(cl.workload.Object, "spec", "template")
	Expect(err).NotTo(HaveOccurred())
	Expect(found).To(BeTrue())
	Expect(fromUnstructured(raw, &spec)).To(Succeed())
	for _, c := range spec.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	Fail("the workload has no container named manager")
	return corev1.Container{}
}

// serviceAccount is the workload's ServiceAccount.
func (cl *cluster) serviceAccount() string {
	sa, _, err := unstructured.NestedString(cl.workload.Object, "spec", "template", "spec", "serviceAccountName")
	Expect(err).NotTo(HaveOccurred())
	Expect(sa).NotTo(BeEmpty(), "the manager must run as its own ServiceAccount")
	return sa
}

// replicaCount is the workload's spec.replicas (1 when unset).
func (cl *cluster) replicaCount() int {
	n, found, err := unstructured.NestedFieldNoCopy(cl.workload.Object, "spec", "replicas")
	Expect(err).NotTo(HaveOccurred())
	if !found {
		return 1
	}
	// YAML decodes to float64, JSON objects built in Go to int64.
	switch n := n.(type) {
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	Fail(fmt.Sprintf("spec.replicas is %T", n))
	return 0
}

// allowEgress lets the Channels of namespace reach allow (the tests'
// receivers are on loopback, which the manager refuses by default), in the
// limits ConfigMap the manager reads, as the cluster administrator would.
func (cl *cluster) allowEgress(namespace, allow string) {
	GinkgoHelper()
	key := types.NamespacedName{Namespace: cl.workload.GetNamespace(), Name: project.DefaultLimitsConfigMap}
	for _, a := range cl.managerContainer().Args {
		if v, ok := strings.CutPrefix(a, "--limits-configmap="); ok {
			ns, name, _ := strings.Cut(v, "/")
			key = types.NamespacedName{Namespace: ns, Name: name}
		}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	_, err := controllerutil.CreateOrPatch(context.Background(), cl.c, cm, func() error {
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[namespace+"."+project.LimitsKeyEgressAllow] = allow
		return nil
	})
	Expect(err).NotTo(HaveOccurred())
}

// startManager starts every replica of the workload.
func (cl *cluster) startManager() {
	for i := range cl.replicaCount() {
		cl.startReplica(i)
	}
}

// startReplica runs `vigil` with the manager container's arguments and
// environment, as the workload's ServiceAccount, as pod i of the workload,
// and adds it to the Service once it is ready. Listen addresses become free
// loopback ports (there is one machine, not a pod network) and --base-url
// the Service's; every other flag is the manifest's.
func (cl *cluster) startReplica(i int) {
	ctx := context.Background()
	container := cl.managerContainer()
	Expect(container.Command).To(Or(BeEmpty(), Equal([]string{"/vigil"})), "the image's entrypoint is /vigil")

	addr := func() string {
		a, err := testenv.FreeAddr(ctx)
		Expect(err).NotTo(HaveOccurred())
		return a
	}
	r := &replica{httpAddr: addr()}
	metricsAddr, probeAddr := addr(), addr()
	r.metricsURL, r.probeURL = "https://"+metricsAddr, "http://"+probeAddr
	overrides := map[string]string{
		"--http-bind-address":         r.httpAddr,
		"--metrics-bind-address":      metricsAddr,
		"--health-probe-bind-address": probeAddr,
		"--base-url":                  cl.httpURL,
	}
	args := append(rewriteFlags(container.Args, overrides), cl.extraArgs...)
	// Volumes are directories of the test, at the same place across
	// restarts, as a PersistentVolume is to its pod.
	for _, vm := range container.VolumeMounts {
		dir := filepath.Join(cl.dir, "volumes", fmt.Sprint(i), vm.Name)
		Expect(os.MkdirAll(dir, 0o750)).To(Succeed())
		for i := range args {
			args[i] = strings.ReplaceAll(args[i], vm.MountPath, dir)
		}
	}

	ns := cl.workload.GetNamespace()
	saConfig, _, err := testenv.ServiceAccountConfig(ctx, cl.admin, ns, cl.serviceAccount())
	Expect(err).NotTo(HaveOccurred())
	if cl.apiProxy != nil {
		saConfig.Host = "https://" + cl.apiProxy.addr
	}
	kubeconfig := filepath.Join(cl.dir, fmt.Sprintf("manager-%d.kubeconfig", i))
	Expect(testenv.WriteKubeconfig(kubeconfig, saConfig)).To(Succeed())

	env := []string{"KUBECONFIG=" + kubeconfig, "PATH=" + os.Getenv("PATH"), "HOME=" + cl.dir}
	for _, e := range container.Env {
		env = append(env, e.Name+"="+cl.envValue(ns, e))
	}
	r.managerProcess = startProcess(vigilBin, args, env, filepath.Join(cl.dir, fmt.Sprintf("manager-%d.log", i)))
	for len(cl.replicas) <= i {
		cl.replicas = append(cl.replicas, nil)
	}
	cl.replicas[i] = r
	Eventually(func() (int, error) { return httpStatus(r.probeURL + "/readyz") }).
		WithTimeout(60*time.Second).Should(Equal(http.StatusOK), "replica %d never became ready:\n%s", i, r.output())
	cl.service.add(r.httpAddr)
}

// killReplica kills replica i at once (SIGKILL), as an OOM kill or a node
// failure does; the Service stops sending it connections.
func (cl *cluster) killReplica(i int) {
	r := cl.replicas[i]
	cl.service.remove(r.httpAddr)
	r.kill()
	cl.replicas[i] = nil
}

// leader is the replica that leads: the one running that logged it
// acquired the lease (a replica logs it once per process), or -1.
func (cl *cluster) leader() int {
	for i, r := range cl.replicas {
		if r != nil && strings.Contains(strings.ToLower(r.output()), "successfully acquired lease") {
			return i
		}
	}
	return -1
}

// first is the first running replica, for what any replica answers.
func (cl *cluster) first() *replica {
	GinkgoHelper()
	for _, r := range cl.replicas {
		if r != nil {
			return r
		}
	}
	Fail("no replica is running")
	return nil
}

// envValue resolves an environment variable of the manager container as
// the kubelet would.
func (cl *cluster) envValue(ns string, e corev1.EnvVar) string {
	switch {
	case e.ValueFrom == nil:
		return e.Value
	case e.ValueFrom.FieldRef != nil:
		switch e.ValueFrom.FieldRef.FieldPath {
		case "metadata.namespace":
			return ns
		case "metadata.name":
			return "vigil-manager-e2e" // one name for every replica: leader election must not need distinct ones
		}
	case e.ValueFrom.SecretKeyRef != nil:
		s := &corev1.Secret{}
		Expect(cl.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: e.ValueFrom.SecretKeyRef.Name}, s)).To(Succeed())
		return string(s.Data[e.ValueFrom.SecretKeyRef.Key])
	}
	Fail(fmt.Sprintf("environment variable %s: this suite cannot resolve %+v", e.Name, e.ValueFrom))
	return ""
}

// stopManager stops every replica as the kubelet does (SIGTERM) and
// expects clean exits.
func (cl *cluster) stopManager() {
	cl.expectHealthyManager()
	for i, r := range cl.replicas {
		if r == nil {
			continue
		}
		cl.service.remove(r.httpAddr)
		Expect(r.stop()).To(Succeed(), "replica %d did not stop cleanly:\n%s", i, r.output())
		cl.replicas[i] = nil
	}
}

// expectHealthyManager fails when a running replica exited or logged a
// request the API server forbade.
func (cl *cluster) expectHealthyManager() {
	GinkgoHelper()
	if cl == nil {
		return // it did not start: the failure that stopped it is reported
	}
	for i, r := range cl.replicas {
		if r == nil {
			continue
		}
		Expect(r.exited()).To(BeFalse(), "replica %d exited (%v); the end of its output:\n%s", i, r.err, r.tail())
		for _, line := range strings.Split(r.output(), "\n") {
			Expect(strings.ToLower(line)).NotTo(ContainSubstring("forbidden"), "replica %d was refused a call by its RBAC", i)
		}
	}
}

// replicaReport says, for each replica, whether it runs or how it exited,
// and the last lines of its output.
func (cl *cluster) replicaReport() string {
	var b strings.Builder
	for i, r := range cl.replicas {
		switch {
		case r == nil:
			fmt.Fprintf(&b, "replica %d: stopped by the test\n", i)
			continue
		case r.exited():
			fmt.Fprintf(&b, "replica %d: EXITED (%v); its output ends:\n", i, r.err)
		default:
			fmt.Fprintf(&b, "replica %d: running; its output ends:\n", i)
		}
		lines := strings.Split(strings.TrimRight(r.output(), "\n"), "\n")
		for _, l := range lines[max(0, len(lines)-20):] {
			b.WriteString("  " + l + "\n")
		}
	}
	return b.String()
}

// rewriteFlags returns args with the flags in overrides set to their
// values, added when missing.
func rewriteFlags(args []string, overrides map[string]string) []string {
	out := make([]string, 0, len(args)+len(overrides))
	seen := map[string]bool{}
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(args[i], "=")
		v, ok := overrides[name]
		if !ok {
			out = append(out, args[i])
			continue
		}
		seen[name] = true
		out = append(out, name+"="+v)
		if !hasValue && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			i++ // the value was the next argument
		}
	}
	for name, v := range overrides {
		if !seen[name] {
			out = append(out, name+"="+v)
		}
	}
	return out
}

// managerProcess is the running manager binary, its output kept.
type managerProcess struct {
	cmd  *exec.Cmd
	out  *testenv.Output
	done chan struct{}
	err  error
}

func startProcess(bin string, args, env []string, logPath string) *managerProcess {
	logf, err := os.Create(logPath)
	Expect(err).NotTo(HaveOccurred())
	p := &managerProcess{out: &testenv.Output{}, done: make(chan struct{})}
	p.cmd = exec.CommandContext(context.Background(), bin, args...)
	p.cmd.Env = env
	w := io.MultiWriter(p.out, logf, GinkgoWriter)
	p.cmd.Stdout, p.cmd.Stderr = w, w
	Expect(p.cmd.Start()).To(Succeed())
	go func() {
		p.err = p.cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	return p
}

func (p *managerProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *managerProcess) output() string { return p.out.String() }

// tail is the end of the output, where a process that exited says why.
func (p *managerProcess) tail() string {
	out := p.output()
	return out[max(0, len(out)-16<<10):]
}

// kill kills the process at once (SIGKILL), as an OOM kill or a node
// failure does, and waits until it is gone.
func (p *managerProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// rss is the process's resident memory.
func (p *managerProcess) rss() int64 {
	GinkgoHelper()
	Expect(p.exited()).To(BeFalse(), "the manager exited (%v); the end of its output:\n%s", p.err, p.tail())
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			_, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb)
			Expect(err).NotTo(HaveOccurred())
			return kb << 10
		}
	}
	Fail("no VmRSS in /proc status")
	return 0
}

// stop sends SIGTERM and waits for a clean exit.
func (p *managerProcess) stop() error {
	if p.exited() {
		return fmt.Errorf("it had already exited: %w", p.err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("still running 30 s after SIGTERM")
	}
}

// insecureHTTP reaches the manager's metrics endpoint, whose certificate
// the manager generates itself.
var insecureHTTP = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
	TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed, loopback
}}

func httpStatus(url string) (int, error) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

// tcpProxy forwards TCP connections to upstream until it is blocked: then
// it cuts every connection and refuses new ones, as an unreachable API
// server does to its clients.
type tcpProxy struct {
	addr, upstream string
	ln             net.Listener

	mu      sync.Mutex
	blocked bool
	conns   map[net.Conn]bool
}

func newTCPProxy(upstream string) *tcpProxy {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	p := &tcpProxy{addr: ln.Addr().String(), upstream: upstream, ln: ln, conns: map[net.Conn]bool{}}
	DeferCleanup(ln.Close)
	go p.serve()
	return p
}

func (p *tcpProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		blocked := p.blocked
		p.mu.Unlock()
		if blocked {
			_ = c.Close()
			continue
		}
		up, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", p.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.track(c, up)
		go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
		go func() { _, _ = io.Copy(c, up); _ = c.Close() }()
	}
}

func (p *tcpProxy) track(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		p.conns[c] = true
	}
}

// block cuts every connection and refuses new ones until unblock.
func (p *tcpProxy) block() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *tcpProxy) unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = false
}

// service is a Service's virtual IP as kube-proxy makes it: each new
// connection goes to the next endpoint, round robin; an endpoint is added
// when its replica is ready and removed when it goes.
type service struct {
	addr string
	ln   net.Listener

	mu        sync.Mutex
	endpoints []string
	next      int
}

func newService() *service {
	ln, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	s := &service{addr: ln.Addr().String(), ln: ln}
	DeferCleanup(ln.Close)
	go s.serve()
	return s
}

func (s *service) add(endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endpoints = append(s.endpoints, endpoint)
}

func (s *service) remove(endpoint string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.endpoints = slices.DeleteFunc(s.endpoints, func(e string) bool { return e == endpoint })
}

func (s *service) pick() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.endpoints) == 0 {
		return ""
	}
	s.next++
	return s.endpoints[s.next%len(s.endpoints)]
}

func (s *service) serve() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			endpoint := s.pick()
			if endpoint == "" {
				_ = c.Close() // no ready endpoint: the connection is refused
				return
			}
			up, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", endpoint)
			if err != nil {
				_ = c.Close()
				return
			}
			go func() { _, _ = io.Copy(up, c); _ = up.Close() }()
			_, _ = io.Copy(c, up)
			_ = c.Close()
		}()
	}
}
