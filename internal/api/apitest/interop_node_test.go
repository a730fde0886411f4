package apitest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// nodeModules installs testdata/node's locked dependencies once per lock
// file under bin/interop (npm ci from the npm registry) and returns the
// node_modules directory. make test runs this suite twice at once (SQLite
// and PostgreSQL), so each installs into a directory of its own and renames
// it into place; the first rename wins, and the other uses its install.
func nodeModules() string {
	for _, tool := range []string{"node", "npm"} {
		_, err := exec.LookPath(tool)
		Expect(err).NotTo(HaveOccurred(), "the interop test runs the npm client with Node.js: install Debian's nodejs and npm")
	}
	lock, err := os.ReadFile(filepath.Join("testdata", "node", "package-lock.json"))
	Expect(err).NotTo(HaveOccurred())
	sum := sha256.Sum256(lock)
	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	dir := filepath.Join(root, "bin", "interop", "node-"+hex.EncodeToString(sum[:6]))
	modules := filepath.Join(dir, "node_modules")
	installed := func() bool {
		_, err := os.Stat(filepath.Join(modules, "healthchecks-io-client"))
		return err == nil
	}
	if installed() {
		return modules
	}
	Expect(os.MkdirAll(filepath.Dir(dir), 0o755)).To(Succeed())
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".node-")
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = os.RemoveAll(tmp) }()
	for _, f := range []string{"package.json", "package-lock.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "node", f))
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(tmp, f), data, 0o644)).To(Succeed())
	}
	cmd := exec.CommandContext(context.Background(), "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	out, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), string(out))
	if err := os.Rename(tmp, dir); err != nil {
		Expect(installed()).To(BeTrue(), "installing %s: %v", dir, err)
	}
	return modules
}

// The npm package healthchecks-io-client 1.0.4, unchanged, with Node.js.
var _ = Describe("healthchecks-io-client (npm) as a client", func() {
	It("manages checks, sends pings and reads pings, flips and channels through API v3", func() {
		modules := nodeModules()
		p := newProject()
		ch := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "ops"}, Spec: v1.ChannelSpec{
			Kind: v1.ChannelWebhook, DisplayName: "Ops", Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "http://127.0.0.1:1/hook"}}}}
		Expect(k8sClient.Create(context.Background(), ch)).To(Succeed())
		Eventually(func() []any { return call("GET", "/api/v3/channels/", p.rw, "").JSON()["channels"].([]any) }).Should(HaveLen(1))

		cmd := exec.CommandContext(context.Background(), "node", filepath.Join("testdata", "node", "interop.js"))
		cmd.Env = append(os.Environ(), "NODE_PATH="+modules, "VIGIL_URL="+baseURL, "VIGIL_API_KEY="+p.rw)
		var stderr []byte
		out, err := cmd.Output()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			stderr = ee.Stderr
		}
		Expect(err).NotTo(HaveOccurred(), string(stderr))

		var seen map[string]any
		Expect(json.Unmarshal(out, &seen)).To(Succeed(), string(out))
		Expect(seen["created"]).To(HaveKeyWithValue("name", "node job"))
		Expect(seen["list"].(map[string]any)["checks"]).To(HaveLen(1))
		Expect(seen["listOther"].(map[string]any)["checks"]).To(BeEmpty())
		Expect(seen["updated"]).To(And(HaveKeyWithValue("desc", "updated by node"), HaveKeyWithValue("schedule", "*/5 * * * *")))

		pings := seen["pings"].(map[string]any)["pings"].([]any)
		Expect(pings).To(HaveLen(3))
		Expect(pings[0]).To(HaveKeyWithValue("type", "fail"))
		Expect(pings[1]).To(And(HaveKeyWithValue("type", "success"), HaveKey("duration")))
		Expect(pings[2]).To(HaveKeyWithValue("type", "start"))
		Expect(seen["flips"]).To(ConsistOf(HaveKeyWithValue("up", BeEquivalentTo(0))))
		Expect(seen["flipsSince"]).To(HaveLen(1))
		Expect(seen["channels"].(map[string]any)["channels"]).To(ConsistOf(HaveKeyWithValue("name", "Ops")))
		Expect(seen["paused"]).To(HaveKeyWithValue("status", "paused"))
		Expect(seen["deleted"]).To(HaveKeyWithValue("name", "node job"))
		Expect(seen["afterDelete"]).To(BeEquivalentTo(404))
	})
})
