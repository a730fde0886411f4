package testenv

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ControlPlane is a started envtest for a test that runs Vigil as a
// process of its own (the vigil binary, its image, Helm): an
// administrator's config and client for the test, and a kubeconfig file
// for the process.
type ControlPlane struct {
	Admin  *rest.Config
	Client client.Client
	// Kubeconfig is a file naming the identity the RBAC given to
	// StartControlPlane returned (the administrator's with none), readable
	// by any user (a container's too).
	Kubeconfig string
}

// StartControlPlane starts envtest, stopped when the test ends, and
// installs rbac (AsManager, a chart's with AsChartManager; nil: none, the
// kubeconfig is the administrator's).
func StartControlPlane(t testing.TB, ctx context.Context,
	rbac func(context.Context, *rest.Config) (*rest.Config, *Forbidden, error)) *ControlPlane {
	t.Helper()
	env, err := New()
	if err != nil {
		t.Fatal(err)
	}
	cp := &ControlPlane{}
	if cp.Admin, err = env.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	if cp.Client, err = client.New(cp.Admin, client.Options{Scheme: env.Scheme}); err != nil {
		t.Fatal(err)
	}
	identity := cp.Admin
	if rbac != nil {
		if identity, _, err = rbac(ctx, cp.Admin); err != nil {
			t.Fatal(err)
		}
	}
	cp.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(cp.Kubeconfig, identity); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cp.Kubeconfig, 0o644); err != nil {
		t.Fatal(err)
	}
	return cp
}
