// Package dashboardtest drives the dashboard of a whole manager, on envtest
// and a real ping store, with a real headless Chromium (Debian's chromium,
// which hack/ensure-packages.sh chromium installs) over the DevTools protocol. The
// manager runs on a fake clock, so that a check can go down, and a session
// expire, without the test waiting for it. Screenshots of the board, the
// wall mode and a check's page are written under bin/screenshots/.
package dashboardtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	testingclock "k8s.io/utils/clock/testing"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/signin"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
	"github.com/vigil-operator/vigil/internal/testenv/oidcprovider"
)

var (
	harness *managertest.Harness
	// clk is the manager's clock: pings are recorded at its time, statuses
	// computed and sessions expired at it.
	clk = testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	// browser is one Chromium; each session opens its own browser context
	// (its own cookies) in it.
	browser       context.Context
	stopBrowser   context.CancelFunc
	screenshotDir string
	// provider is a real OpenID Connect provider the manager lets people
	// sign in through (signin_test.go); people holds its users.
	provider *oidcprovider.Provider
)

// The provider's users: what Kubernetes lets them do is up to the specs'
// RoleBindings.
var people = []oidcprovider.User{
	{Username: "alice", Password: "alice-pass-1", Email: "alice@example.com", Groups: []string{"team-b-ops", "everyone"}},
	{Username: "bob", Password: "bob-pass-2", Email: "bob@example.com", Groups: []string{"everyone"}},
}

// TestMain runs the package's tests on each ping store, one pass after the
// other on one control plane.
func TestMain(m *testing.M) { testenv.MainOnEachStore(m) }

func TestDashboard(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "Dashboard in a real browser")
}

// chromiumPath is Debian's chromium, or $VIGIL_CHROMIUM.
func chromiumPath() string {
	if p := os.Getenv("VIGIL_CHROMIUM"); p != "" {
		return p
	}
	p, err := exec.LookPath("chromium")
	Expect(err).NotTo(HaveOccurred(), "chromium is missing: run hack/ensure-packages.sh chromium (make test does)")
	return p
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))
	SetDefaultEventuallyTimeout(30 * time.Second)
	SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	// The manager's address is chosen first: the provider must know the
	// redirect URL before the manager starts.
	addr, err := testenv.FreeAddr(context.Background())
	Expect(err).NotTo(HaveOccurred())
	const clientSecret = "vigil-client-secret-for-tests"
	provider, err = oidcprovider.Start(context.Background(), people, []oidcprovider.Client{
		{ID: "vigil", Secret: clientSecret, RedirectURIs: []string{"http://" + addr + "/auth/callback"}}})
	Expect(err).NotTo(HaveOccurred())
	// The manager runs under the chart's RBAC as installed with a provider
	// (dashboard.oidc): it may read RoleBindings, so a person's board asks
	// about the projects where one names them.
	harness = managertest.StartUnder(managertest.Chart("--set", "dashboard.oidc.issuerURL="+provider.Issuer,
		"--set", "dashboard.oidc.clientID=vigil", "--set", "dashboard.oidc.clientSecret.existingSecret=vigil-oidc"),
		manager.Options{Clock: clk, HTTPAddr: addr, SignIn: signin.Config{
			IssuerURL: provider.Issuer, ClientID: "vigil", ClientSecret: clientSecret,
			Scopes: []string{"email", "profile", oidcprovider.ScopeGroups},
		}})

	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	screenshotDir = filepath.Join(root, "bin", "screenshots")
	Expect(os.MkdirAll(screenshotDir, 0o755)).To(Succeed())

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath()),
		chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck, chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU,
		// Nothing but the manager: no updates, no sync, no QUIC probes.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.UserDataDir(GinkgoT().TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	alloc, stopAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	var stopCtx context.CancelFunc
	browser, stopCtx = chromedp.NewContext(alloc)
	stopBrowser = func() { stopCtx(); stopAlloc() }
	// The first Run starts the browser; it lives as long as this context.
	Expect(chromedp.Do(browser)).To(Succeed())
})

var _ = AfterSuite(func() {
	if stopBrowser != nil {
		stopBrowser()
	}
	harness.Stop()
	if provider != nil {
		provider.Close()
	}
})

// newSession opens a tab with its own cookies, closed when the spec ends.
func newSession() context.Context {
	ctx, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	DeferCleanup(cancel)
	Expect(chromedp.Do(ctx)).To(Succeed())
	return ctx
}

// do runs browser steps, each run bounded.
func do(ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	GinkgoHelper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	Expect(chromedp.Do(c, steps...)).To(Succeed())
}

// run runs one browser action and returns its value.
func run[T any](ctx context.Context, a chromedp.Action[T]) T {
	GinkgoHelper()
	c, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, a)
	Expect(err).NotTo(HaveOccurred())
	return v
}

// js evaluates an expression in the page.
func js[T any](ctx context.Context, expr string) T {
	GinkgoHelper()
	return run(ctx, chromedp.Evaluate[T](expr))
}

// text is the visible text of the first element matching a CSS selector.
func text(ctx context.Context, sel string) string {
	GinkgoHelper()
	return run(ctx, chromedp.Text(chromedp.CSS(sel)))
}

// liveText is the text of the first element matching a CSS selector in a
// part of the page the live refresh replaces, read in one step: text finds
// the node, then reads it, and a refresh in between leaves it asking for a
// node that is gone. "" when nothing matches.
func liveText(ctx context.Context, sel string) string {
	GinkgoHelper()
	return js[string](ctx, fmt.Sprintf(`(document.querySelector(%q) || {innerText: ""}).innerText`, sel))
}

// signIn signs in on the sign-in page with key and waits for the board.
func signIn(ctx context.Context, key string) {
	GinkgoHelper()
	do(ctx,
		chromedp.Navigate(harness.BaseURL+"/"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), key),
		chromedp.Click(chromedp.CSS(".signin-form button")),
		chromedp.WaitVisible(chromedp.CSS(".summary")),
	)
}

// screenshot saves the whole page as bin/screenshots/<name>.png.
func screenshot(ctx context.Context, name string) {
	GinkgoHelper()
	png := run(ctx, chromedp.FullScreenshot(100))
	Expect(os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644)).To(Succeed())
}

// screenshotOf saves the element sel selects as bin/screenshots/<name>.png.
func screenshotOf(ctx context.Context, sel, name string) {
	GinkgoHelper()
	png := run(ctx, chromedp.Screenshot(chromedp.CSS(sel)))
	Expect(os.WriteFile(filepath.Join(screenshotDir, name+".png"), png, 0o644)).To(Succeed())
}

// apiCall makes a Management API request and decodes its JSON answer.
func apiCall(method, path, key, body string) (int, map[string]any) {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(context.Background(), method, harness.BaseURL+path, bytes.NewBufferString(body))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("X-Api-Key", key)
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	var m map[string]any
	Expect(json.NewDecoder(resp.Body).Decode(&m)).To(Succeed())
	return resp.StatusCode, m
}

// curl pings a URL with curl, as a job would, with an optional body.
func curl(url, body string) {
	GinkgoHelper()
	args := []string{"-fsS", "-m", "10", "-o", "/dev/null", url}
	if body != "" {
		args = append(args, "--data-raw", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "curl", args...).CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "curl: %s", out)
}

// post posts a form without a browser: no cookies, no JavaScript.
func post(path, form string) (int, string) {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, harness.BaseURL+path, strings.NewReader(form))
	Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(b)
}
