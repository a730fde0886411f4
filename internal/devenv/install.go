package devenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The install's manager identity: config/default (and so dist/install.yaml)
// puts the ServiceAccount "manager" in namespace "system", both prefixed
// with "vigil-".
const (
	ManagerNamespace      = "vigil-system"
	ManagerServiceAccount = "vigil-manager"
)

// DecodeObjects decodes a multi-document YAML stream (a rendered install)
// into objects, skipping empty documents.
func DecodeObjects(data []byte) ([]unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []unstructured.Unstructured
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// IsWorkload reports whether obj is what runs the manager (a Deployment or
// StatefulSet), which `vigil dev` and the tests run themselves: there is no
// kubelet or container runtime here.
func IsWorkload(obj *unstructured.Unstructured) bool {
	k := obj.GetKind()
	return obj.GroupVersionKind().Group == "apps" && (k == "Deployment" || k == "StatefulSet")
}

// Apply applies objs with server-side apply, as `kubectl apply
// --server-side` does, in order, skipping those skip reports.
func Apply(ctx context.Context, c client.Client, objs []unstructured.Unstructured, skip func(*unstructured.Unstructured) bool) error {
	for i := range objs {
		obj := objs[i].DeepCopy()
		if skip != nil && skip(obj) {
			continue
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("vigil-install"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
	return nil
}

// ServiceAccountToken mints a token for the ServiceAccount namespace/name
// with the TokenRequest API, as the kubelet does for a pod.
func ServiceAccountToken(ctx context.Context, admin *rest.Config, namespace, name string, ttl time.Duration) (string, error) {
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return "", err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("minting a token for %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// ServiceAccountConfig returns a config that reaches admin's API server as
// the ServiceAccount namespace/name, with a token in a file under dir that
// is minted again well before it expires (client-go re-reads the file), as
// a pod's projected token. It returns once RBAC lets the account list
// Checks: the authorizer sees new bindings after a moment.
func ServiceAccountConfig(ctx context.Context, admin *rest.Config, namespace, name, dir string) (*rest.Config, error) {
	const ttl = 24 * time.Hour
	tokenFile := filepath.Join(dir, name+".token")
	mint := func() error {
		token, err := ServiceAccountToken(ctx, admin, namespace, name, ttl)
		if err != nil {
			return err
		}
		return os.WriteFile(tokenFile, []byte(token), 0o600)
	}
	if err := mint(); err != nil {
		return nil, err
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(ttl / 2):
				_ = mint() // the old token holds for another half
			}
		}
	}()
	cfg := AsUser(admin, "")
	cfg.BearerTokenFile = tokenFile
	return cfg, WaitAllowed(ctx, cfg)
}

// AsUser is admin's server and CA with the bearer token and no other
// credentials.
func AsUser(admin *rest.Config, token string) *rest.Config {
	return &rest.Config{
		Host:            admin.Host,
		APIPath:         admin.APIPath,
		TLSClientConfig: rest.TLSClientConfig{CAData: admin.CAData, CAFile: admin.CAFile, ServerName: admin.ServerName},
		BearerToken:     token,
		QPS:             admin.QPS,
		Burst:           admin.Burst,
	}
}

// WaitAllowed waits until the identity of cfg may list Checks.
func WaitAllowed(ctx context.Context, cfg *rest.Config) error {
	return WaitAllowedIn(ctx, cfg, "")
}

// WaitAllowedIn waits until the identity of cfg may list Checks in
// namespace ("": in every namespace).
func WaitAllowedIn(ctx context.Context, cfg *rest.Config, namespace string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Group: "monitoring.vigil.dev", Resource: "checks", Verb: "list"},
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err == nil && got.Status.Allowed {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the ServiceAccount may still not list checks after 30 s (last error: %w)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
