package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vigil-operator/vigil/internal/controlplane"
	"github.com/vigil-operator/vigil/internal/devenv"
	"github.com/vigil-operator/vigil/internal/scheme"
)

// Cluster is a control plane for a test, with Vigil's CRDs installed
// (unless started WithoutCRDs): a kube-apiserver and etcd of its own, or
// the one its package's tests share (see Main).
type Cluster struct {
	// Config is a cluster administrator's.
	Config *rest.Config
	// Scheme is Vigil's: the API server's types and Vigil's CRDs.
	Scheme *runtime.Scheme
	// Kubectl is the kubectl built beside kube-apiserver.
	Kubectl string
	// EtcdURL is etcd's client URL, for its metrics; empty on a control
	// plane another process runs.
	EtcdURL string

	cp *controlplane.ControlPlane // nil on another process's
	// shared marks the package's control plane: Stop hands it back,
	// to be reset for the next test, instead of stopping it.
	shared bool
	// fresh is what the control plane held once started, for a reset.
	fresh *snapshot
}

// StartOption changes what Start installs.
type StartOption func(*startOptions)

type startOptions struct{ crds bool }

// WithoutCRDs starts a control plane without Vigil's CRDs, for a test
// that installs them as a user would. Such a control plane is the test's
// own, never the package's shared one.
func WithoutCRDs() StartOption { return func(o *startOptions) { o.crds = false } }

// Start returns a control plane with Vigil's CRDs: the package's shared
// one when Main runs the package's tests and no other test holds it
// (reset to what it held once started), else one of its own. Call Stop
// when done; Start stops what it started when it fails.
func Start(ctx context.Context, opts ...StartOption) (*Cluster, error) {
	o := startOptions{crds: true}
	for _, opt := range opts {
		opt(&o)
	}
	if o.crds {
		if c, ok, err := takeShared(ctx); ok || err != nil {
			return c, err
		}
	}
	return boot(ctx, o)
}

// boot starts a control plane of this process's own, one at a time per
// start slot (see WithStartLock), and counts it in the run's boot log.
func boot(ctx context.Context, o startOptions) (*Cluster, error) {
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	c := &Cluster{Scheme: scheme.New(), Kubectl: filepath.Join(assets, "kubectl")}
	var took time.Duration
	err = WithStartLock(ctx, func() error {
		began := time.Now()
		defer func() { took = time.Since(began) }()
		var err error
		if c.cp, err = controlplane.Start(ctx, controlplane.Options{Assets: assets}); err != nil {
			return err
		}
		c.EtcdURL = c.cp.EtcdURL
		if c.Config, err = c.cp.Config("admin", "system:masters"); err != nil {
			return err
		}
		if o.crds {
			return c.installCRDs()
		}
		return nil
	})
	if err != nil {
		if c.cp != nil {
			err = errors.Join(err, c.cp.Stop())
		}
		return nil, fmt.Errorf("testenv: starting a control plane: %w", err)
	}
	countStart("boot", took)
	return c, nil
}

// installCRDs installs Vigil's CRDs and waits until the API server serves
// them.
func (c *Cluster) installCRDs() error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	_, err = envtest.InstallCRDs(c.Config, envtest.CRDInstallOptions{
		Paths:              []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfPathMissing: true,
		Scheme:             c.Scheme,
		MaxTime:            controlplane.DefaultStartTimeout,
	})
	return err
}

// Stop stops a control plane of the test's own. The package's shared one
// is handed back instead, and one another process runs is left alone.
func (c *Cluster) Stop() error {
	switch {
	case c == nil:
		return nil
	case c.shared:
		giveBackShared(c)
		return nil
	case c.cp == nil:
		return nil
	}
	return c.cp.Stop()
}

// WriteKubeconfig writes a kubeconfig for the administrator to path.
func (c *Cluster) WriteKubeconfig(path string) error {
	return WriteKubeconfig(path, c.Config)
}

// attach returns the control plane of the kubeconfig at path, which
// another process runs.
func attach(path string) (*Cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("testenv: the control plane of %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	assets, err := Assets()
	if err != nil {
		return nil, err
	}
	return &Cluster{Config: cfg, Scheme: scheme.New(), Kubectl: filepath.Join(assets, "kubectl")}, nil
}

// StartDev starts a whole local cluster as `vigil dev` does (devenv.Start:
// kube-controller-manager, and kube-scheduler and kwok when opts name
// kwok), under the start lock and counted in the run's boot log. Call
// the control plane's Stop when done, even after an error.
func StartDev(ctx context.Context, opts devenv.Options) (*devenv.ControlPlane, error) {
	var cp *devenv.ControlPlane
	var took time.Duration
	err := WithStartLock(ctx, func() error {
		began := time.Now()
		defer func() { took = time.Since(began) }()
		var err error
		cp, err = devenv.Start(ctx, opts)
		return err
	})
	if err == nil {
		countStart("boot", took)
	}
	return cp, err
}

// countStart adds a line to the run's boot log, $VIGIL_TEST_BOOTS when
// set: `make test` reports how many control planes the run booted, and
// how many times one was reset for the next suite instead.
func countStart(kind string, took time.Duration) {
	path := os.Getenv("VIGIL_TEST_BOOTS")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	// One short write: O_APPEND keeps the lines of processes apart.
	_, _ = fmt.Fprintf(f, "%s %s %.1f\n", kind, filepath.Base(os.Args[0]), took.Seconds())
}
