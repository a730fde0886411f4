// Package image builds Vigil's container image as `make image` does, checks
// that it is reproducible and what it holds, and runs it with a real
// container runtime (podman with runc, from Debian's packages) as `vigil
// manager` against a real kube-apiserver: a ping and an API call are
// answered through it.
package image

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// run runs a command in dir and returns its output, failing the test
// with the output when it fails.
func run(t *testing.T, ctx context.Context, dir string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// build builds the image into dir and returns its index's digest. It links
// Vigil for both platforms (make test compiled them): a build, so it holds
// a start slot, and no control plane starts beside it.
func build(t *testing.T, ctx context.Context, root, dir string) string {
	t.Helper()
	var out string
	if err := testenv.WithStartLock(ctx, func() error {
		out = run(t, ctx, root, "go", "run", "./hack/image", "-out", dir, "-version", "0.0.0-test")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fields := strings.Fields(strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]))
	if len(fields) != 2 || !strings.HasPrefix(fields[1], "sha256:") {
		t.Fatalf("hack/image said %q", out)
	}
	return fields[1]
}

func TestImage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	podman, err := exec.LookPath("podman")
	if err != nil {
		t.Fatal("podman is not installed: hack/ensure-packages.sh podman installs it (make test does)")
	}

	// Reproducible: two builds of one tree are one image.
	// podman names what it pulls from a layout after its path, which must
	// be lowercase (t.TempDir's is not).
	tmp, err := os.MkdirTemp("", "vigil-image-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	dir := filepath.Join(tmp, "image")
	digest := build(t, ctx, root, dir)
	if again := build(t, ctx, root, filepath.Join(t.TempDir(), "again")); again != digest {
		t.Fatalf("two builds of the same source: %s and %s", digest, again)
	}
	index := readJSON[struct {
		Manifests []struct {
			Platform struct{ OS, Architecture string }
		}
	}](t, filepath.Join(dir, "oci", "blobs", "sha256", strings.TrimPrefix(digest, "sha256:")))
	var platforms []string
	for _, m := range index.Manifests {
		platforms = append(platforms, m.Platform.OS+"/"+m.Platform.Architecture)
	}
	if strings.Join(platforms, ",") != "linux/amd64,linux/arm64" {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}
	sbom := readJSON[struct {
		BOMFormat  string
		Components []struct{ Name, Version, Purl string }
	}](t, filepath.Join(dir, "sbom.cdx.json"))
	names := map[string]string{}
	for _, c := range sbom.Components {
		names[c.Name] = c.Version
	}
	if sbom.BOMFormat != "CycloneDX" || names["github.com/vigil-operator/vigil"] != "0.0.0-test" ||
		names["sigs.k8s.io/controller-runtime"] == "" || names["stdlib"] == "" {
		t.Errorf("SBOM %s with %d components: want vigil, controller-runtime and the Go toolchain", sbom.BOMFormat, len(sbom.Components))
	}

	// The image as podman sees it: non-root, /vigil, the labels.
	pulled := run(t, ctx, root, podman, "pull", "oci:"+filepath.Join(dir, "oci")+":0.0.0-test")
	lines := strings.Fields(pulled)
	id := lines[len(lines)-1]
	t.Cleanup(func() { _ = exec.CommandContext(context.Background(), podman, "rmi", "-f", id).Run() })
	inspect := run(t, ctx, root, podman, "image", "inspect", "--format",
		`{{.User}} {{index .Config.Entrypoint 0}} {{index .Config.Labels "org.opencontainers.image.version"}} {{.Os}}/{{.Architecture}}`, id)
	if got := strings.TrimSpace(inspect); got != "65532:65532 /vigil 0.0.0-test linux/"+runtime.GOARCH {
		t.Errorf("image %q", got)
	}
	// No shell to exec into.
	if out, err := exec.CommandContext(ctx, podman, "run", "--rm", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"--entrypoint", "/bin/sh", id, "-c", "true").CombinedOutput(); err == nil || !strings.Contains(string(out), "no such file or directory") {
		t.Errorf("/bin/sh in the image: %v, %s; want none", err, out)
	}

	// `vigil manager` in the container, against envtest, as the shipped
	// RBAC's ServiceAccount.
	cp := testenv.StartControlPlane(t, ctx, testenv.AsManager)
	kubeconfig := cp.Kubeconfig
	httpAddr, err := testenv.FreeAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The store's volume, owned by the image's user as a PersistentVolume
	// is through fsGroup.
	data := filepath.Join(tmp, "data")
	if err := os.Mkdir(data, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(data, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	name := fmt.Sprintf("vigil-image-test-%d", time.Now().UnixNano())
	run(t, ctx, root, podman, "run", "-d", "--name", name, "--network", "host", "--read-only",
		// runc on these machines needs explicit limits (docs/install.md).
		"--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024",
		"-v", kubeconfig+":/etc/vigil/kubeconfig:ro", "-e", "KUBECONFIG=/etc/vigil/kubeconfig",
		"-e", "POD_NAMESPACE="+testenv.ManagerNamespace,
		"-v", data+":/var/lib/vigil",
		id, "manager", "--leader-elect=false", "--http-bind-address="+httpAddr, "--metrics-bind-address=0",
		"--health-probe-bind-address=0", "--base-url=http://"+httpAddr, "--store=sqlite:/var/lib/vigil/vigil.db",
		"--limits-configmap="+testenv.ManagerNamespace+"/"+project.DefaultLimitsConfigMap)
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.CommandContext(context.Background(), podman, "logs", name).CombinedOutput()
			t.Logf("the container's log:\n%s", logs)
		}
		_ = exec.CommandContext(context.Background(), podman, "rm", "-f", name).Run()
	})

	cl := cp.Client
	ns := "image-test"
	if err := createNamespace(ctx, cl, ns); err != nil {
		t.Fatal(err)
	}
	key, err := project.CreateAPIKey(ctx, cl, ns, project.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + httpAddr
	// The container answers once its manager has started.
	var body string
	gomega.NewWithT(t).Eventually(func() int {
		var status int
		status, body = testenv.Call(ctx, "POST", base+"/api/v3/checks/", key, `{"name": "backup", "timeout": 3600}`)
		return status
	}).WithTimeout(2*time.Minute).WithPolling(250*time.Millisecond).Should(gomega.Equal(http.StatusCreated),
		func() string { return "creating a check through the container: " + body })
	var check struct {
		UUID    string `json:"uuid"`
		PingURL string `json:"ping_url"`
	}
	if err := json.Unmarshal([]byte(body), &check); err != nil {
		t.Fatal(err)
	}
	if status, body := testenv.Call(ctx, "POST", check.PingURL, "", "backed up 3 GB"); status != http.StatusOK || body != "OK" {
		t.Fatalf("a ping through the container: %d %q", status, body)
	}
	status, body := testenv.Call(ctx, "GET", base+"/api/v3/checks/"+check.UUID, key, "")
	if status != http.StatusOK || !strings.Contains(body, `"n_pings":1`) || !strings.Contains(body, `"status":"up"`) {
		t.Fatalf("the check after its ping: %d %s", status, body)
	}
}

func createNamespace(ctx context.Context, cl client.Client, name string) error {
	return cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

func readJSON[T any](t *testing.T, path string) T {
	t.Helper()
	var v T
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}
