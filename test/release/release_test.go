// Package release writes a release as `make release` does, checks what it
// holds, pushes its chart to an OCI registry on loopback and installs it
// from there with Helm into a real kube-apiserver.
package release

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vigil-operator/vigil/internal/testenv"
)

const version = "0.0.1-test"

func run(t *testing.T, ctx context.Context, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm, err := testenv.Tool("helm")
	if err != nil {
		t.Fatal(err)
	}
	kustomize, err := testenv.Tool("kustomize")
	if err != nil {
		t.Fatal(err)
	}
	// A signing key of the test's own, as a release step is given one.
	keys := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	signingKey, publicKey := filepath.Join(keys, "signing.pem"), filepath.Join(keys, "signing.pub")
	if err := os.WriteFile(signingKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(publicKey, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		t.Fatal(err)
	}

	out := filepath.Join(t.TempDir(), "release")
	// One platform: test/image checks that make image builds every platform,
	// and a second cross-compilation of the tree would only make this test
	// longer on a cold build cache.
	// The release builds the image: a build, so it holds a start slot,
	// and no control plane starts beside it.
	if err := testenv.WithStartLock(ctx, func() error {
		run(t, ctx, root, []string{"HELM=" + helm, "KUSTOMIZE=" + kustomize, "IMAGE_REPOSITORY=registry.example.com/vigil",
			"SIGNING_KEY=" + signingKey, "PLATFORMS=linux/amd64"}, "hack/release.sh", version, out)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	digest, err := os.ReadFile(filepath.Join(out, "image", "digest"))
	if err != nil {
		t.Fatal(err)
	}
	ref := "registry.example.com/vigil:" + version + "@" + strings.TrimSpace(string(digest))

	// What it wrote, and its checksums.
	run(t, ctx, out, nil, "sha256sum", "--check", "--strict", "SHA256SUMS")
	sums, err := os.ReadFile(filepath.Join(out, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"vigil-" + version + ".tgz", "install.yaml", "install-postgres.yaml", "vigil-" + version + ".sbom.cdx.json",
		"image.payload.json", "image.payload.json.sig", "vigil-" + version + ".sbom.cdx.json.sig"} {
		if !strings.Contains(string(sums), "  "+f+"\n") {
			t.Errorf("SHA256SUMS lacks %s:\n%s", f, sums)
		}
	}
	for _, f := range []string{"install.yaml", "install-postgres.yaml"} {
		manifest, err := os.ReadFile(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(manifest), "image: "+ref+"\n") || strings.Contains(string(manifest), "vigil:latest") {
			t.Errorf("%s does not pull %s by digest", f, ref)
		}
	}
	bad := exec.CommandContext(ctx, "hack/release.sh", "1.2", filepath.Join(t.TempDir(), "bad"))
	bad.Dir = root
	if said, err := bad.CombinedOutput(); err == nil || !strings.Contains(string(said), "not a semantic version") {
		t.Errorf("VERSION=1.2: %v, said %q; want it refused", err, said)
	}

	// The signatures verify with the public key, and name the image's
	// digest; a changed SBOM does not verify.
	sbom := "vigil-" + version + ".sbom.cdx.json"
	run(t, ctx, root, nil, "go", "run", "./hack/sign", "-verify", "-key", publicKey, "-dir", out, "image.payload.json", sbom)
	payload, err := os.ReadFile(filepath.Join(out, "image.payload.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(payload), `"docker-manifest-digest":"`+strings.TrimSpace(string(digest))+`"`) {
		t.Errorf("the signed payload %s does not name the image's digest", payload)
	}
	tampered, err := os.ReadFile(filepath.Join(out, sbom))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, sbom), append(tampered, ' '), 0o644); err != nil {
		t.Fatal(err)
	}
	verify := exec.CommandContext(ctx, "go", "run", "./hack/sign", "-verify", "-key", publicKey, "-dir", out, sbom)
	verify.Dir = root
	if said, err := verify.CombinedOutput(); err == nil {
		t.Errorf("a changed SBOM verified: %s", said)
	}

	// The chart, pushed to a registry on loopback and installed from it.
	reg := httptest.NewServer(registry.New())
	defer reg.Close()
	chartURL := "oci://" + strings.TrimPrefix(reg.URL, "http://") + "/charts"
	run(t, ctx, out, nil, helm, "push", "vigil-"+version+".tgz", chartURL, "--plain-http")

	cp := testenv.StartControlPlane(t, ctx, nil)
	kubeconfig := cp.Kubeconfig
	installed := run(t, ctx, out, nil, helm, "install", "vigil", chartURL+"/vigil", "--version", version, "--plain-http",
		"--kubeconfig", kubeconfig, "--namespace", "vigil-system", "--create-namespace")
	if !strings.Contains(installed, "STATUS: deployed") || !strings.Contains(installed, "The dashboard is at") {
		t.Errorf("helm install said:\n%s", installed)
	}
	cl := cp.Client
	var sts appsv1.StatefulSet
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "vigil-system", Name: "vigil-manager"}, &sts); err != nil {
		t.Fatal(err)
	}
	if got := sts.Spec.Template.Spec.Containers[0].Image; got != ref {
		t.Errorf("the installed manager runs %s, want %s", got, ref)
	}
	if got := sts.Labels["helm.sh/chart"]; got != fmt.Sprintf("vigil-%s", version) {
		t.Errorf("chart label %q, want vigil-%s", got, version)
	}
}
