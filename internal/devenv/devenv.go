// Package devenv runs a local Kubernetes control plane for `make dev`: etcd,
// kube-apiserver and kube-controller-manager built from Go modules, with the
// data kept in a directory so that a restart loses nothing.
//
// It reuses controller-runtime's envtest machinery for etcd and the API server
// (certificates, flags, readiness) and adds kube-controller-manager, so that
// garbage collection and the CronJob and Job controllers work as in a real
// cluster.
package devenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vigil-operator/vigil/internal/controlplane"
	"github.com/vigil-operator/vigil/internal/scheme"
)

// Options configure the control plane.
type Options struct {
	// Dir keeps etcd's data, certificates, the kubeconfig and logs.
	Dir string
	// Assets holds kube-apiserver, etcd and kube-controller-manager.
	Assets string
	// CRDDir holds the CRDs to install.
	CRDDir string
	// APIServerPort is the kube-apiserver's port on 127.0.0.1.
	APIServerPort int
	// Namespace is the kubeconfig context's default namespace.
	Namespace string
	// Progress receives one line per step.
	Progress io.Writer
	// Kwok, when set, is the kwok binary: with kube-scheduler and the
	// stages in KwokStages it simulates a node, so pods run and Jobs end.
	Kwok string
	// KwokStages is kwok's stage configuration.
	KwokStages string
	// ControllerManagerArgs are added to kube-controller-manager's (a
	// benchmark's client budget, say).
	ControllerManagerArgs []string
}

// DevNode is the simulated node kwok manages in dev.
const DevNode = "vigil-dev-node"

// ExecNode is the node whose pods `vigil dev` runs as local processes
// (package execnode).
const ExecNode = "vigil-dev-exec"

// ControlPlane is a running local control plane.
type ControlPlane struct {
	// Config reaches the API server as a cluster administrator.
	Config *rest.Config
	// Kubeconfig is the path of the administrator kubeconfig.
	Kubeconfig string

	env   *envtest.Environment
	procs []*exec.Cmd // started in order; stopped in reverse
	lock  *os.File
	logs  []*os.File
}

// Start starts etcd, kube-apiserver and kube-controller-manager, installs the
// CRDs and writes the kubeconfig. Call Stop when done, even after an error.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	cp := &ControlPlane{}
	// Certificates are made afresh on every start: envtest hands out the
	// serving CA only when it generates it. The kubeconfig is rewritten to
	// match; etcd's data, the part worth keeping, stays.
	if err := os.RemoveAll(filepath.Join(opts.Dir, "pki")); err != nil {
		return cp, err
	}
	for _, dir := range []string{"etcd", "pki", "logs"} {
		if err := os.MkdirAll(filepath.Join(opts.Dir, dir), 0o700); err != nil {
			return cp, err
		}
	}
	if err := cp.takeLock(opts.Dir); err != nil {
		return cp, err
	}
	if err := portFree(ctx, opts.APIServerPort); err != nil {
		return cp, err
	}

	etcdLog, err := cp.logFile(opts.Dir, "etcd.log")
	if err != nil {
		return cp, err
	}
	apiLog, err := cp.logFile(opts.Dir, "kube-apiserver.log")
	if err != nil {
		return cp, err
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{opts.CRDDir},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: opts.Assets,
		Scheme:                scheme.New(),
	}
	etcd := &envtest.Etcd{DataDir: filepath.Join(opts.Dir, "etcd"), Out: etcdLog, Err: etcdLog, StartTimeout: controlplane.DefaultStartTimeout}
	// envtest turns fsync off for speed; dev data must survive a crash.
	etcd.Configure().Set("unsafe-no-fsync", "false")
	env.ControlPlane.Etcd = etcd
	api := &envtest.APIServer{CertDir: filepath.Join(opts.Dir, "pki"), Out: apiLog, Err: apiLog, StartTimeout: controlplane.DefaultStartTimeout}
	api.Address = "127.0.0.1"
	api.Port = strconv.Itoa(opts.APIServerPort)
	// The ServiceAccount admission plugin stays off as in envtest: nothing
	// in dev needs pod service-account tokens.
	env.ControlPlane.APIServer = api
	cp.env = env

	fmt.Fprintf(opts.Progress, "starting etcd (data in %s) and kube-apiserver on https://127.0.0.1:%d ...\n",
		filepath.Join(opts.Dir, "etcd"), opts.APIServerPort)
	if _, err := env.Start(); err != nil {
		return cp, fmt.Errorf("starting etcd and kube-apiserver (logs in %s): %w", filepath.Join(opts.Dir, "logs"), err)
	}
	fmt.Fprintln(opts.Progress, "installed the Check and Channel CRDs")

	admin, err := env.AddUser(envtest.User{Name: "vigil-dev-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return cp, fmt.Errorf("creating the admin user: %w", err)
	}
	cp.Config = admin.Config()
	cp.Kubeconfig = filepath.Join(opts.Dir, "kubeconfig")
	if err := writeKubeconfig(admin, cp.Kubeconfig, opts.Namespace); err != nil {
		return cp, err
	}

	caFile := filepath.Join(api.CertDir, "ca.crt")
	if err := os.WriteFile(caFile, api.CA, 0o600); err != nil {
		return cp, err
	}
	if err := cp.startControllerManager(ctx, opts, api.CertDir, caFile); err != nil {
		return cp, err
	}
	if opts.Kwok != "" {
		if err := cp.startNodeSimulation(ctx, opts); err != nil {
			return cp, err
		}
	}
	return cp, nil
}

// startControllerManager runs kube-controller-manager with the admin
// kubeconfig: garbage collection, namespaces, CronJobs, Jobs.
func (cp *ControlPlane) startControllerManager(ctx context.Context, opts Options, certDir, caFile string) error {
	args := append([]string{
		"--kubeconfig=" + cp.Kubeconfig,
		"--authentication-kubeconfig=" + cp.Kubeconfig,
		"--authorization-kubeconfig=" + cp.Kubeconfig,
		"--leader-elect=false",
		"--use-service-account-credentials=false",
		"--controllers=*",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
		"--service-account-private-key-file=" + filepath.Join(certDir, "sa-signer.key"),
		"--root-ca-file=" + caFile,
	}, opts.ControllerManagerArgs...)
	err := cp.startProcess(ctx, opts, "kube-controller-manager", filepath.Join(opts.Assets, "kube-controller-manager"), args...)
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.Progress, "started kube-controller-manager (garbage collector, CronJob and Job controllers)")
	return nil
}

// startNodeSimulation runs kube-scheduler and kwok, and registers the node
// kwok simulates, so that a CronJob's pods run and its Jobs complete or
// fail as kwok's stages say.
func (cp *ControlPlane) startNodeSimulation(ctx context.Context, opts Options) error {
	err := cp.startProcess(ctx, opts, "kube-scheduler", filepath.Join(opts.Assets, "kube-scheduler"),
		"--kubeconfig="+cp.Kubeconfig,
		"--authentication-kubeconfig="+cp.Kubeconfig,
		"--authorization-kubeconfig="+cp.Kubeconfig,
		"--leader-elect=false",
		"--bind-address=127.0.0.1",
		"--secure-port=0",
	)
	if err != nil {
		return err
	}
	err = cp.startProcess(ctx, opts, "kwok", opts.Kwok,
		"--kubeconfig="+cp.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--node-ip=10.244.0.1",
		"--cidr=10.244.0.0/16",
		"--config="+opts.KwokStages,
		"--server-address=",
	)
	if err != nil {
		return err
	}
	c, err := client.New(cp.Config, client.Options{})
	if err != nil {
		return err
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        DevNode,
		Labels:      map[string]string{"kubernetes.io/hostname": DevNode, "type": "kwok"},
		Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
	}}
	if err := c.Create(ctx, node); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering the simulated node: %w", err)
	}
	fmt.Fprintf(opts.Progress, "started kube-scheduler and kwok: node %s runs pods (a Job's pod succeeds after 3 s, or fails if labelled vigil.dev/simulate: fail)\n", DevNode)
	return nil
}

// startProcess runs a control-plane binary with its log in the logs
// directory; stopping ctx (Ctrl-C) sends it SIGTERM, then kills it.
func (cp *ControlPlane) startProcess(ctx context.Context, opts Options, name, bin string, args ...string) error {
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("%s not found at %s: run `make dev` to build it", name, bin)
	}
	logf, err := cp.logFile(opts.Dir, name+".log")
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	// Own process group: Ctrl-C reaches us, and we stop it in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	cp.procs = append(cp.procs, cmd)
	return nil
}

// Stop stops everything Start started, in reverse order.
func (cp *ControlPlane) Stop() error {
	var errs []error
	for i := len(cp.procs) - 1; i >= 0; i-- {
		if p := cp.procs[i]; p.Process != nil {
			_ = p.Process.Signal(syscall.SIGTERM)
			_ = p.Wait() // bounded by WaitDelay; an exit status after SIGTERM is expected
		}
	}
	if cp.env != nil {
		errs = append(errs, cp.env.Stop())
	}
	for _, f := range cp.logs {
		_ = f.Close()
	}
	if cp.lock != nil {
		_ = cp.lock.Close()
	}
	return errors.Join(errs...)
}

func (cp *ControlPlane) logFile(dir, name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "logs", name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cp.logs = append(cp.logs, f)
	return f, nil
}

// takeLock makes a second `make dev` on the same directory fail clearly
// instead of fighting over etcd's data.
func (cp *ControlPlane) takeLock(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return fmt.Errorf("another `make dev` is already running on %s; stop it first (Ctrl-C in its terminal)", dir)
	}
	cp.lock = f
	return nil
}

func portFree(ctx context.Context, port int) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("port %d on 127.0.0.1 is in use; stop what uses it or choose another port: %w", port, err)
	}
	return ln.Close()
}

// writeKubeconfig writes the admin kubeconfig with readable names and the
// demo namespace as the default, so `kubectl apply -f config/samples/` lands
// in the demo project.
func writeKubeconfig(admin *envtest.AuthenticatedUser, path, namespace string) error {
	raw, err := admin.KubeConfig()
	if err != nil {
		return fmt.Errorf("building kubeconfig: %w", err)
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return fmt.Errorf("parsing kubeconfig: %w", err)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil {
		return errors.New("kubeconfig has no current context")
	}
	cluster, user := cfg.Clusters[kctx.Cluster], cfg.AuthInfos[kctx.AuthInfo]
	kctx.Namespace = namespace
	kctx.Cluster, kctx.AuthInfo = "vigil-dev", "vigil-dev-admin"
	cfg.Clusters = map[string]*clientcmdapi.Cluster{"vigil-dev": cluster}
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"vigil-dev-admin": user}
	cfg.Contexts = map[string]*clientcmdapi.Context{"vigil-dev": kctx}
	cfg.CurrentContext = "vigil-dev"
	return clientcmd.WriteToFile(*cfg, path)
}
