package dashboardtest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/vigil-operator/vigil/internal/access"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
	"github.com/vigil-operator/vigil/internal/testenv/oidcprovider"
)

// signInAs signs in through the OpenID Connect provider's own login page,
// as a person would, and waits for the board.
func signInAs(ctx context.Context, u oidcprovider.User) {
	GinkgoHelper()
	do(ctx,
		chromedp.Navigate(harness.BaseURL+"/"),
		chromedp.WaitVisible(chromedp.ID("oidc-signin")),
		chromedp.Click(chromedp.ID("oidc-signin")),
		chromedp.WaitVisible(chromedp.ID(oidcprovider.FieldUsername)),
		chromedp.SendKeys(chromedp.ID(oidcprovider.FieldUsername), u.Username),
		chromedp.SendKeys(chromedp.ID(oidcprovider.FieldPassword), u.Password),
		chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(".summary")),
	)
}

// fetchStatus makes a request from the page, with its cookies (and, for a
// POST, the page's CSRF token), and returns the answer's status.
func fetchStatus(ctx context.Context, method, path string) int {
	GinkgoHelper()
	body := ""
	if method == "POST" {
		body = `, body: new URLSearchParams({csrf: document.querySelector("input[name=csrf]").value})`
	}
	return int(run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`fetch(%q, {method: %q%s}).then(r => r.status)`, path, method, body), chromedp.EvalAwaitPromise)))
}

// applyDashboardRoles applies the ready ClusterRoles the docs give.
func applyDashboardRoles() {
	GinkgoHelper()
	root, err := testenv.RepoRoot()
	Expect(err).NotTo(HaveOccurred())
	raw, err := os.ReadFile(filepath.Join(root, "config", "samples", "rbac", "dashboard-roles.yaml"))
	Expect(err).NotTo(HaveOccurred())
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var role rbacv1.ClusterRole
		Expect(yaml.Unmarshal([]byte(doc), &role)).To(Succeed())
		err := harness.Client.Create(context.Background(), &role)
		Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "%v", err)
	}
}

func bind(namespace, role string, subject rbacv1.Subject) {
	GinkgoHelper()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{subject}}
	Expect(harness.Client.Create(context.Background(), rb)).To(Succeed())
}

var _ = Describe("Signing in with an account", Ordered, func() {
	var (
		viewed, operated managertest.Project // alice views one, operates the other
		hidden           managertest.Project // she is bound in neither
		view, operate    *check
	)
	alice, bob := people[0], people[1]

	BeforeAll(func() {
		applyDashboardRoles()
		viewed, operated, hidden = harness.NewProject("view-"), harness.NewProject("operate-"), harness.NewProject("hidden-")
		view = &check{name: "Viewed backup"}
		operate = &check{name: "Operated import"}
		for _, c := range []struct {
			p  managertest.Project
			ck *check
		}{{viewed, view}, {operated, operate}, {hidden, &check{name: "Hidden report"}}} {
			status, resp := apiCall("POST", "/api/v3/checks/", c.p.ReadWrite, fmt.Sprintf(`{"name": %q, "timeout": 3600}`, c.ck.name))
			Expect(status).To(Equal(http.StatusCreated), "%v", resp)
			c.ck.uuid, c.ck.pingURL = resp["uuid"].(string), resp["ping_url"].(string)
		}
		// Alice by name in one project, by a group of hers in the other.
		bind(viewed.Namespace, "vigil-dashboard-viewer", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: alice.Email})
		bind(operated.Namespace, "vigil-dashboard-operator", rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "team-b-ops"})
	})

	It("shows a person every project Kubernetes lets them see, on one board, and lets them change only where it lets them", func() {
		ctx := newSession()
		signInAs(ctx, alice)
		Expect(text(ctx, ".person")).To(Equal(alice.Email))
		projects := js[[]string](ctx, `[...document.querySelectorAll("nav.projects .chip")].map(a => a.textContent.trim())`)
		Expect(projects).To(ContainElements(viewed.Namespace, operated.Namespace))
		Expect(projects).NotTo(ContainElement(hidden.Namespace))
		names := js[[]string](ctx, `[...document.querySelectorAll("table.board tbody .name a")].map(a => a.textContent.trim())`)
		Expect(names).To(ContainElements(view.name, operate.name))
		Expect(names).NotTo(ContainElement("Hidden report"))
		html := js[string](ctx, `document.documentElement.outerHTML`)
		Expect(html).NotTo(ContainSubstring(view.uuid), "a viewer does not learn the ping URL")
		Expect(html).To(ContainSubstring(operate.uuid))
		screenshot(ctx, "board-signed-in")
		// At phone width the project chips and the nav wrap; the page does
		// not scroll sideways (the table scrolls in its own box).
		do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".summary")))
		Expect(js[bool](ctx, `document.documentElement.scrollWidth <= window.innerWidth`)).To(BeTrue())
		screenshot(ctx, "board-signed-in-phone")
		do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".summary")))

		// The project filter narrows the board to one.
		chipURL := js[string](ctx, fmt.Sprintf(`[...document.querySelectorAll("nav.projects .chip")].find(a => a.textContent.trim() === %q).href`, viewed.Namespace))
		do(ctx, chromedp.Navigate(chipURL), chromedp.WaitVisible(chromedp.CSS("nav.projects .chip.on")))
		Expect(js[[]string](ctx, `[...document.querySelectorAll("table.board tbody .name a")].map(a => a.textContent.trim())`)).To(Equal([]string{view.name}))

		// The viewed project: read-only, no pause, and a pause posted
		// anyway is refused.
		do(ctx, chromedp.Click(chromedp.CSS("table.board tbody .name a")), chromedp.WaitVisible(chromedp.CSS(".state-line")))
		Expect(text(ctx, ".access")).To(Equal("read-only"))
		Expect(js[bool](ctx, `document.querySelector("form[action$='/pause'] button") === null`)).To(BeTrue())
		Expect(fetchStatus(ctx, "POST", "/checks/"+view.uuid+"/pause")).To(Equal(http.StatusForbidden))

		// The operated project: pause works, and is the person's.
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+operate.uuid), chromedp.WaitVisible(chromedp.CSS(".state-line")))
		Expect(text(ctx, ".access")).To(Equal("you may change its checks"))
		do(ctx, chromedp.Click(chromedp.CSS("form[action$='/pause'] button")), chromedp.WaitVisible(chromedp.CSS(".state-line")))
		Eventually(func() any {
			_, resp := apiCall("GET", "/api/v3/checks/"+operate.uuid, operated.ReadWrite, "")
			return resp["status"]
		}).Should(Equal("paused"))

		// Another project's check, by its UUID: as if it did not exist.
		hiddenUUID := func() string {
			_, resp := apiCall("GET", "/api/v3/checks/", hidden.ReadWrite, "")
			return resp["checks"].([]any)[0].(map[string]any)["uuid"].(string)
		}()
		Expect(fetchStatus(ctx, "GET", "/checks/"+hiddenUUID)).To(Equal(http.StatusNotFound))
	})

	It("takes a project away once its binding is deleted, and ends sessions on sign-out everywhere", func() {
		ctx := newSession()
		signInAs(ctx, alice)
		Expect(js[string](ctx, `document.querySelector("nav.projects").textContent`)).To(ContainSubstring(operated.Namespace))
		got, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{})
		Expect(err).NotTo(HaveOccurred())
		cookies := got.Cookies
		var token string
		for _, c := range cookies {
			if c.Name == "vigil_person" {
				token = c.Value
			}
		}
		Expect(token).NotTo(BeEmpty())
		Expect(cookies).To(ContainElement(And(HaveField("Name", "vigil_person"), HaveField("HTTPOnly", true),
			HaveField("SameSite", network.CookieSameSiteStrict))))

		// The group's binding goes: within the time a yes is kept, the
		// project is gone from her board and its checks from her reach.
		Expect(harness.Client.Delete(context.Background(), &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: operated.Namespace, Name: "vigil-dashboard-operator"}})).To(Succeed())
		Eventually(func() string {
			// Each look comes after the time a yes is kept: the API
			// server's RBAC follows the delete within a moment.
			clk.Step(access.DefaultAllowed + time.Second)
			do(ctx, chromedp.Navigate(harness.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(".summary")))
			return js[string](ctx, `document.querySelector("nav.projects").textContent`)
		}).ShouldNot(ContainSubstring(operated.Namespace))
		Expect(fetchStatus(ctx, "GET", "/checks/"+operate.uuid)).To(Equal(http.StatusNotFound))

		// Sign out everywhere: the session is gone from the store, so the
		// cookie a thief copied opens nothing either.
		do(ctx, chromedp.Click(chromedp.CSS(`.signout button[name=everywhere]`)), chromedp.WaitVisible(chromedp.ID("oidc-signin")))
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, harness.BaseURL+"/", nil)
		Expect(err).NotTo(HaveOccurred())
		req.AddCookie(&http.Cookie{Name: "vigil_person", Value: token})
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
	})

	It("shows a person Kubernetes lets see nothing an empty board that says why", func() {
		ctx := newSession()
		do(ctx, chromedp.Navigate(harness.BaseURL+"/"), chromedp.WaitVisible(chromedp.ID("oidc-signin")))
		screenshot(ctx, "signin-account")
		do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("oidc-signin")))
		Expect(js[bool](ctx, `document.documentElement.scrollWidth <= window.innerWidth`)).To(BeTrue())
		screenshot(ctx, "signin-account-phone")
		signInAs(ctx, bob)
		Expect(text(ctx, ".person")).To(Equal(bob.Email))
		Expect(text(ctx, "p.empty")).To(ContainSubstring("Kubernetes lets you list checks in no project yet"))
		Expect(js[int](ctx, `document.querySelectorAll("table.board tbody tr").length`)).To(Equal(0))
	})

	It("refuses a wrong password at the provider, and an answer that does not belong to this browser's sign-in", func() {
		ctx := newSession()
		do(ctx,
			chromedp.Navigate(harness.BaseURL+"/"),
			chromedp.Click(chromedp.ID("oidc-signin")),
			chromedp.WaitVisible(chromedp.ID(oidcprovider.FieldUsername)),
			chromedp.SendKeys(chromedp.ID(oidcprovider.FieldUsername), alice.Username),
			chromedp.SendKeys(chromedp.ID(oidcprovider.FieldPassword), "wrong"),
			chromedp.Click(chromedp.CSS(`button[type=submit]`)),
		)
		// The provider's answer is a new page: while it loads there is no
		// body to read yet.
		Eventually(func() string { return js[string](ctx, `document.body ? document.body.innerText : ""`) }).Should(ContainSubstring("wrong"))
		Expect(js[bool](ctx, `document.querySelector(".summary") === null`)).To(BeTrue())

		// A code and state sent to the callback by someone else (login
		// CSRF): they are not this browser's sign-in's, so nothing starts;
		// and once that sign-in is over, there is none to answer at all.
		do(ctx, chromedp.Navigate(harness.BaseURL+"/auth/callback?code=stolen&state=forged"), chromedp.WaitVisible(chromedp.ID("problem")))
		Expect(text(ctx, "#problem")).To(ContainSubstring("does not belong to the sign-in this browser started"))
		do(ctx, chromedp.Navigate(harness.BaseURL+"/auth/callback?code=stolen&state=forged"), chromedp.WaitVisible(chromedp.ID("problem")))
		Expect(text(ctx, "#problem")).To(ContainSubstring("not started in this browser"))
		Expect(js[bool](ctx, `document.querySelector(".summary") === null`)).To(BeTrue())
	})
})
