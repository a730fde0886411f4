package testenv

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vigil-operator/vigil/internal/devenv"
)

// The install's manager identity.
const (
	ManagerNamespace      = devenv.ManagerNamespace
	ManagerServiceAccount = devenv.ManagerServiceAccount
)

// AsManager installs config/default's ServiceAccount and RBAC (everything
// but the workload) with the administrator config admin, and returns a
// config that reaches the API server as the manager's ServiceAccount, with a
// token from the TokenRequest API, as a pod would have. Every request the
// API server forbids is recorded in the returned Forbidden.
func AsManager(ctx context.Context, admin *rest.Config) (*rest.Config, *Forbidden, error) {
	objs, err := KustomizeBuild(ctx, "config/default")
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(admin, client.Options{})
	if err != nil {
		return nil, nil, err
	}
	rbacOnly := func(o *unstructured.Unstructured) bool {
		switch o.GetKind() {
		case "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			return false
		}
		return true
	}
	if err := devenv.Apply(ctx, c, objs, rbacOnly); err != nil {
		return nil, nil, err
	}
	return ServiceAccountConfig(ctx, admin, ManagerNamespace, ManagerServiceAccount)
}

// ServiceAccountConfig returns a config that authenticates as the
// ServiceAccount namespace/name with a token minted by the TokenRequest
// API, once RBAC lets it list Checks, and a record of the requests the API
// server forbids it.
func ServiceAccountConfig(ctx context.Context, admin *rest.Config, namespace, name string) (*rest.Config, *Forbidden, error) {
	token, err := devenv.ServiceAccountToken(ctx, admin, namespace, name, 24*time.Hour)
	if err != nil {
		return nil, nil, err
	}
	cfg := devenv.AsUser(admin, token)
	if err := devenv.WaitAllowed(ctx, cfg); err != nil {
		return nil, nil, err
	}
	forbidden := &Forbidden{}
	cfg.WrapTransport = forbidden.wrap
	return cfg, forbidden, nil
}

// Forbidden records the requests the API server answered with 403
// Forbidden: a manager running under the shipped RBAC must make none, so a
// call the roles do not allow fails the suite.
type Forbidden struct {
	mu       sync.Mutex
	requests []string
	allowed  []string
}

// Allow excludes requests with this method whose path starts with prefix:
// those a test provokes on purpose.
func (f *Forbidden) Allow(method, pathPrefix string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allowed = append(f.allowed, method+" "+pathPrefix)
}

// Requests are the forbidden requests, as "METHOD path", except those
// allowed.
func (f *Forbidden) Requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, r := range f.requests {
		if !f.isAllowed(r) {
			out = append(out, r)
		}
	}
	return out
}

func (f *Forbidden) isAllowed(request string) bool {
	for _, a := range f.allowed {
		if strings.HasPrefix(request, a) {
			return true
		}
	}
	return false
}

func (f *Forbidden) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		if err == nil && resp.StatusCode == http.StatusForbidden {
			f.mu.Lock()
			f.requests = append(f.requests, req.Method+" "+req.URL.Path)
			f.mu.Unlock()
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
