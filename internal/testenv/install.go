package testenv

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// AsChartManager installs the ServiceAccount and RBAC of charts/vigil,
// rendered as release "vigil" in ManagerNamespace with the helm arguments
// args (such as "--set", "watchNamespaces={team-a,team-b}"), creating that
// namespace and every namespace the rendering puts a Role or RoleBinding
// in, as `helm install --create-namespace` and an administrator would. It
// returns a config that reaches the API server as the manager's
// ServiceAccount, and a record of what the API server forbids it, as
// AsManager does for config/default.
func AsChartManager(ctx context.Context, admin *rest.Config, args ...string) (*rest.Config, *Forbidden, error) {
	objs, err := HelmTemplate(ctx, "charts/vigil", "vigil", ManagerNamespace, args...)
	if err != nil {
		return nil, nil, err
	}
	c, err := client.New(admin, client.Options{})
	if err != nil {
		return nil, nil, err
	}
	namespaces := []string{ManagerNamespace}
	// Where the manager may list Checks: anywhere, or the first namespace
	// its Role is bound in.
	checksIn := ""
	for _, o := range objs {
		switch o.GetKind() {
		case "Role", "RoleBinding":
			namespaces = append(namespaces, o.GetNamespace())
			if o.GetKind() == "RoleBinding" && o.GetName() == "vigil-manager-rolebinding" && checksIn == "" {
				checksIn = o.GetNamespace()
			}
		}
	}
	for _, ns := range namespaces {
		n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := c.Create(ctx, n); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, nil, err
		}
	}
	rbacOnly := func(o *unstructured.Unstructured) bool {
		switch o.GetKind() {
		case "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding":
			return false
		}
		return true
	}
	if err := devenv.Apply(ctx, c, objs, rbacOnly); err != nil {
		return nil, nil, err
	}
	return serviceAccountConfig(ctx, admin, ManagerNamespace, ManagerServiceAccount, checksIn)
}

// ServiceAccountConfig returns a config that authenticates as the
// ServiceAccount namespace/name with a token minted by the TokenRequest
// API, once RBAC lets it list Checks, and a record of the requests the API
// server forbids it.
func ServiceAccountConfig(ctx context.Context, admin *rest.Config, namespace, name string) (*rest.Config, *Forbidden, error) {
	return serviceAccountConfig(ctx, admin, namespace, name, "")
}

// serviceAccountConfig is ServiceAccountConfig, waiting until the
// ServiceAccount may list Checks in checksIn ("": everywhere).
func serviceAccountConfig(ctx context.Context, admin *rest.Config, namespace, name, checksIn string) (*rest.Config, *Forbidden, error) {
	token, err := devenv.ServiceAccountToken(ctx, admin, namespace, name, 24*time.Hour)
	if err != nil {
		return nil, nil, err
	}
	cfg := devenv.AsUser(admin, token)
	if err := devenv.WaitAllowedIn(ctx, cfg, checksIn); err != nil {
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
