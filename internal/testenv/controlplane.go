package testenv

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ControlPlane is a started control plane for a test that runs Vigil as a
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

// StartControlPlane starts a control plane (Start), stopped when the test
// ends, and installs rbac (AsManager, a chart's with AsChartManager; nil:
// none, the kubeconfig is the administrator's).
func StartControlPlane(t testing.TB, ctx context.Context,
	rbac func(context.Context, *rest.Config) (*rest.Config, *Forbidden, error)) *ControlPlane {
	t.Helper()
	cl, err := Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cl.Stop(); err != nil {
			t.Error(err)
		}
	})
	cp := &ControlPlane{Admin: cl.Config}
	if cp.Client, err = client.New(cp.Admin, client.Options{Scheme: cl.Scheme}); err != nil {
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

// Call makes an HTTP request to Vigil, with the API key when one is given,
// and returns the status and the body (status 0 and the error's text when
// no answer came: a manager that is down).
func Call(ctx context.Context, method, url, key, body string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
