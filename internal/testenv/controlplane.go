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
	status, _, b, err := Do(ctx, http.DefaultClient, method, url, body, APIKey(key))
	if status == 0 {
		return 0, err.Error()
	}
	return status, string(b)
}

// Do makes an HTTP request on c with header's fields, and returns the
// answer's status, header and body, read whole. The status is 0 when no
// answer came, and err says why; with an answer, err is the body's read
// error (the body then is what arrived).
func Do(ctx context.Context, c *http.Client, method, url, body string, header http.Header) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b, err
}

// APIKey is the header of a Management API request with key, none when key
// is empty.
func APIKey(key string) http.Header {
	if key == "" {
		return nil
	}
	return http.Header{"X-Api-Key": {key}}
}
