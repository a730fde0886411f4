package dashboardtest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

// check is a check of the project, as created through the API.
type check struct {
	name, slug, tags, fields string
	uuid, pingURL            string
}

// key is how a read-only session names the check: its unique key, as the
// API does, since its UUID is its ping URL.
func (c *check) key() string { return checks.UniqueKey(c.uuid) }

var _ = Describe("The dashboard", Ordered, func() {
	var (
		p                     managertest.Project
		backup, report, stage *check
	)
	const body = "backup done: 42 rows\nall good"

	BeforeAll(func() {
		p = harness.NewProject("dash-")
		backup = &check{name: "DB backup", slug: "db-backup", tags: "prod db", fields: `"timeout": 3600, "grace": 300`}
		report = &check{name: "Nightly report", slug: "nightly-report", tags: "prod",
			fields: `"schedule": "45 3 * * *", "tz": "Europe/Riga", "grace": 900`}
		stage = &check{name: "Staging sync", slug: "staging-sync", tags: "staging", fields: `"timeout": 60, "grace": 60`}
		for _, c := range []*check{backup, report, stage} {
			status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, fmt.Sprintf(
				`{"name": %q, "slug": %q, "tags": %q, %s}`, c.name, c.slug, c.tags, c.fields))
			Expect(status).To(Equal(http.StatusCreated), "%v", resp)
			c.uuid, c.pingURL = resp["uuid"].(string), resp["ping_url"].(string)
		}
		curl(backup.pingURL, body)
	})

	It("refuses a wrong key, and a sign-in form that did not come from the page", func() {
		ctx := newSession()
		do(ctx,
			chromedp.Navigate(harness.BaseURL+"/"),
			chromedp.WaitVisible(chromedp.ID("key")),
			chromedp.SendKeys(chromedp.ID("key"), strings.Repeat("x", 32)),
			chromedp.Click(chromedp.CSS(".signin-form button")),
			chromedp.WaitVisible(chromedp.ID("problem")),
		)
		Expect(text(ctx, "#problem")).To(ContainSubstring("Wrong API key"))
		Expect(js[bool](ctx, `document.querySelector(".summary") === null`)).To(BeTrue())

		// A request without the session cookie (a link followed from an email:
		// the SameSite=Strict cookie stays behind) gets the sign-in page and
		// leaves the browser's session alone.
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, harness.BaseURL+"/", nil)
		Expect(err).NotTo(HaveOccurred())
		resp, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		Expect(resp.StatusCode).To(Equal(http.StatusUnauthorized))
		for _, c := range resp.Cookies() {
			Expect(c.Name).NotTo(Equal("vigil_session"), "a request without a session must not clear one")
		}

		// A form posted from elsewhere carries no login cookie: refused,
		// even with a good key.
		status, page := post("/login", "key="+p.ReadWrite+"&csrf=forged")
		Expect(status).To(Equal(http.StatusForbidden))
		Expect(page).To(ContainSubstring("did not come from this page"))
	})

	It("shows a read-only key the board and the checks, without ping URLs, the ping log or bodies", func() {
		ctx := newSession()
		signIn(ctx, p.ReadOnly)
		Expect(text(ctx, ".access")).To(Equal("read-only key"))
		Expect(js[int](ctx, `document.querySelectorAll("table.board tbody tr").length`)).To(Equal(3))
		Expect(text(ctx, ".summary")).To(ContainSubstring("3 checks: 1 up, 0 late, 0 down, 0 paused"))
		Expect(text(ctx, fmt.Sprintf(`tr[data-id=%q] .status`, backup.key()))).To(ContainSubstring("up"))
		// No UUID anywhere: it is the ping URL.
		for _, c := range []*check{backup, report, stage} {
			Expect(js[string](ctx, `document.documentElement.outerHTML`)).NotTo(ContainSubstring(c.uuid))
		}

		do(ctx, chromedp.Click(chromedp.CSS(fmt.Sprintf(`tr[data-id=%q] .name a`, backup.key()))),
			chromedp.WaitVisible(chromedp.CSS(".state-line")))
		html := js[string](ctx, `document.documentElement.outerHTML`)
		Expect(html).To(ContainSubstring("/b/2/"), "badges are for every key")
		Expect(html).NotTo(ContainSubstring(backup.uuid))
		Expect(html).NotTo(ContainSubstring("/ping/"))
		Expect(html).NotTo(ContainSubstring("Ping log"))
		Expect(html).NotTo(ContainSubstring("backup done"))
		Expect(html).NotTo(ContainSubstring("Pause monitoring"))

		// Typing the body's URL does not help, by either name of the check.
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+backup.key()+"/pings/1/body"))
		Expect(text(ctx, "main")).To(ContainSubstring("needs a read-write API key"))
		Expect(js[string](ctx, `document.body.innerText`)).NotTo(ContainSubstring("backup done"))
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+backup.uuid+"/pings/1/body"))
		Expect(text(ctx, "main")).To(ContainSubstring("needs a read-write API key"))
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+backup.uuid))
		Expect(text(ctx, "main")).To(ContainSubstring("No such check in this project"))
	})

	It("shows a key its own project only", func() {
		other := harness.NewProject("dash-other-")
		status, resp := apiCall("POST", "/api/v3/checks/", other.ReadWrite, `{"name": "Theirs", "timeout": 3600}`)
		Expect(status).To(Equal(http.StatusCreated), "%v", resp)
		theirs := resp["uuid"].(string)

		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		Expect(js[string](ctx, `document.body.innerText`)).NotTo(ContainSubstring("Theirs"))
		for _, path := range []string{"/checks/" + theirs, "/checks/" + theirs + "/pings/1/body", "/checks/not-a-uuid"} {
			do(ctx, chromedp.Navigate(harness.BaseURL+path), chromedp.WaitVisible(chromedp.CSS("main")))
			Expect(text(ctx, "main")).To(ContainSubstring("No such check in this project"), path)
		}
		// Even with this session's CSRF token, another project's check cannot be paused.
		do(ctx, chromedp.Navigate(harness.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(".summary")))
		code := run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`fetch("/checks/%s/pause", {method: "POST", body: new URLSearchParams({csrf: document.querySelector("input[name=csrf]").value})}).then(r => r.status)`, theirs), chromedp.EvalAwaitPromise))
		Expect(code).To(BeNumerically("==", http.StatusNotFound))
		_, resp = apiCall("GET", "/api/v3/checks/"+theirs, other.ReadWrite, "")
		Expect(resp["status"]).To(Equal("new"))
	})

	It("shows a read-write key the ping URLs, snippets, the ping log and the full body", func() {
		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		Expect(text(ctx, ".access")).To(Equal("read-write key"))
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+backup.uuid), chromedp.WaitVisible(chromedp.ID("ping-url")))
		Expect(text(ctx, "#ping-url")).To(Equal(backup.pingURL))
		Expect(text(ctx, "#snippet-curl")).To(ContainSubstring("curl -fsS -m 10 --retry 5 -o /dev/null " + backup.pingURL))
		Expect(text(ctx, "#snippet-run")).To(HavePrefix("vigil run " + backup.pingURL))
		Expect(text(ctx, "#kubectl")).To(Equal("kubectl -n " + p.Namespace + " get check db-backup-" + backup.uuid[:8]))
		Expect(text(ctx, "table.pings tbody tr")).To(ContainSubstring("backup done: 42 rows"))
		Expect(text(ctx, ".why")).To(ContainSubstring("Last ping at"))

		do(ctx, chromedp.Click(chromedp.CSS("table.pings .body a")))
		// The click starts a navigation: the old page's body, or the new
		// one's still empty, may answer first.
		Eventually(func() string {
			c, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			v, _ := chromedp.Run(c, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
			return v
		}).Should(Equal(body))
		screenshotAfter(ctx, "/checks/"+backup.uuid, "check")
	})

	It("shows the alert policy and where the check stands against it", func() {
		status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, `{"name": "Flaky import", "slug": "flaky-import", "timeout": 3600, "grace": 300}`)
		Expect(status).To(Equal(http.StatusCreated), "%v", resp)
		uuid, pingURL := resp["uuid"].(string), resp["ping_url"].(string)
		// The policy is the Check's, set as kubectl or a GitOps tool would.
		c := &v1.Check{}
		key := client.ObjectKey{Namespace: p.Namespace, Name: "flaky-import-" + uuid[:8]}
		Expect(harness.Client.Get(context.Background(), key, c)).To(Succeed())
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.AlertPolicy = v1.AlertPolicy{FailureThreshold: 3, MaxRuntime: &metav1.Duration{Duration: 2 * time.Hour},
			RealertInterval: &metav1.Duration{Duration: time.Hour}, SLA: &v1.CheckSLA{MinSuccessRate: "99.5"}}
		Expect(harness.Client.Patch(context.Background(), c, patch)).To(Succeed())
		Eventually(func(g Gomega) int64 {
			g.Expect(harness.Client.Get(context.Background(), key, c)).To(Succeed())
			return c.Status.ObservedGeneration
		}).Should(Equal(c.Generation))
		curl(pingURL+"/fail", "import failed: connection refused")

		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		Eventually(func() string {
			do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+uuid), chromedp.WaitVisible(chromedp.CSS(".why")))
			return text(ctx, ".why")
		}).Should(ContainSubstring("1 of 3 failures in a row"))
		policy := text(ctx, ".policy")
		Expect(policy).To(ContainSubstring("Down after 3 failed runs in a row (now 1 of 3)."))
		Expect(policy).To(ContainSubstring("A run may take at most 2 hours"))
		Expect(policy).To(ContainSubstring("While down, announced again every 1 hour."))
		Expect(policy).To(ContainSubstring("SLA over the last 7 days: at least 99.5% of runs succeed."))
		screenshot(ctx, "check-policy")
		do(ctx, chromedp.Navigate(harness.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(".summary")))
		Expect(text(ctx, `tr[data-id="`+uuid+`"] .failures`)).To(Equal("1 of 3 failures"))

		// At phone width the policy's lines wrap; nothing overflows sideways.
		do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(harness.BaseURL+"/checks/"+uuid),
			chromedp.WaitVisible(chromedp.CSS(".policy")))
		Expect(js[bool](ctx, `document.querySelector(".policy").scrollWidth <= window.innerWidth`)).To(BeTrue())
		screenshot(ctx, "check-policy-phone")
	})

	It("shows a ping sent with curl on the open board, without a reload", func() {
		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		status := fmt.Sprintf(`tr[data-id=%q] .status`, stage.uuid)
		Expect(text(ctx, status)).To(ContainSubstring("new"))
		js[bool](ctx, `window.notReloaded = true`)

		curl(stage.pingURL, "")
		Eventually(func() string { return liveText(ctx, status) }).Should(ContainSubstring("up"))
		Expect(js[bool](ctx, `window.notReloaded === true`)).To(BeTrue(), "the page was reloaded")
		Expect(text(ctx, ".updated")).To(MatchRegexp(`Updated (just now|\d+s ago)\.`))
	})

	It("shows a check that missed its deadline as down, live", func() {
		ctx := newSession()
		signIn(ctx, p.ReadOnly)
		status := fmt.Sprintf(`tr[data-id=%q] .status`, stage.key())
		Expect(text(ctx, status)).To(ContainSubstring("up"))
		clk.Step(3 * time.Minute) // timeout 60 s, grace 60 s
		Eventually(func() string { return liveText(ctx, status) }).Should(ContainSubstring("down"))
		Expect(text(ctx, ".summary")).To(ContainSubstring("1 down"))

		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+stage.key()), chromedp.WaitVisible(chromedp.CSS(".why")))
		Expect(text(ctx, ".why")).To(MatchRegexp(`^Expected a ping by .* UTC, none came; down since .* UTC\.$`))
	})

	It("filters by tag and by search, and keeps both in the URL", func() {
		ctx := newSession()
		signIn(ctx, p.ReadOnly)
		rows := `document.querySelectorAll("table.board tbody tr").length`
		do(ctx, chromedp.Click(chromedp.CSS(`nav.chips a[href="/?tag=staging"]`)),
			chromedp.WaitVisible(chromedp.CSS(`nav.chips a.on`)))
		Expect(run(ctx, chromedp.Location())).To(HaveSuffix("/?tag=staging"))
		Expect(js[int](ctx, rows)).To(Equal(1))
		Expect(text(ctx, "table.board tbody tr .name a")).To(Equal("Staging sync"))

		// The search box filters as one types, and the URL follows.
		do(ctx, chromedp.Navigate(harness.BaseURL+"/"), chromedp.WaitVisible(chromedp.ID("q")),
			chromedp.SendKeys(chromedp.ID("q"), "night"))
		Eventually(func() int { return js[int](ctx, rows) }).Should(Equal(1))
		Expect(text(ctx, "table.board tbody tr .name a")).To(Equal("Nightly report"))
		Expect(run(ctx, chromedp.Location())).To(HaveSuffix("/?q=night"))

		// A shared link opens the same view.
		do(ctx, chromedp.Navigate(harness.BaseURL+"/?q=back&tag=prod"), chromedp.WaitVisible(chromedp.CSS(".summary")))
		Expect(js[int](ctx, rows)).To(Equal(1))
		Expect(text(ctx, "table.board tbody tr .name a")).To(Equal("DB backup"))
	})

	It("pauses and resumes with a read-write key, and refuses a form without the session's CSRF token", func() {
		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+report.uuid), chromedp.WaitVisible(chromedp.CSS(".pause-form")))

		// A form posted by a script without the token is refused.
		code := run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`fetch("/checks/%s/pause", {method: "POST", body: new URLSearchParams({csrf: "guess"})}).then(r => r.status)`, report.uuid), chromedp.EvalAwaitPromise))
		Expect(code).To(BeNumerically("==", http.StatusForbidden))
		_, resp := apiCall("GET", "/api/v3/checks/"+report.uuid, p.ReadWrite, "")
		Expect(resp["status"]).To(Equal("new"))

		do(ctx, chromedp.Click(chromedp.CSS(".pause-form button")), chromedp.WaitVisible(chromedp.CSS(".status.big.paused")))
		Expect(text(ctx, ".pause-form button")).To(Equal("Resume monitoring"))
		_, resp = apiCall("GET", "/api/v3/checks/"+report.uuid, p.ReadWrite, "")
		Expect(resp["status"]).To(Equal("paused"))

		do(ctx, chromedp.Click(chromedp.CSS(".pause-form button")), chromedp.WaitVisible(chromedp.CSS(".status.big.new")))
		Expect(text(ctx, ".pause-form button")).To(Equal("Pause monitoring"))
	})

	It("snoozes a check from its page, shows the window on the page and the board, and ends the snooze", func() {
		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+backup.uuid), chromedp.WaitVisible(chromedp.CSS(".snooze-form select")))
		do(ctx, chromedp.SetValue(chromedp.CSS(".snooze-form select"), "4h"), chromedp.Click(chromedp.CSS(".snooze-form button")),
			chromedp.WaitVisible(chromedp.CSS(".policy.maintenance")))
		Expect(text(ctx, ".policy.maintenance")).To(MatchRegexp(`Maintenance window snooze-db-backup-\w+ holds notifications until .* UTC; pings and flips are still recorded\.`))
		Expect(text(ctx, ".snooze-form button")).To(Equal("End snooze"))
		var list v1.MaintenanceWindowList
		Expect(harness.Client.List(context.Background(), &list, client.InNamespace(p.Namespace))).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
		Expect(list.Items[0].Spec.To.Sub(list.Items[0].Spec.From.Time)).To(Equal(4 * time.Hour))

		// A failure inside the snooze is recorded, and the page says it was
		// not announced.
		curl(backup.pingURL+"/fail", "")
		Eventually(func() string {
			do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+backup.uuid), chromedp.WaitVisible(chromedp.CSS(".policy.maintenance")))
			return text(ctx, ".policy.maintenance")
		}).Should(ContainSubstring("was not announced: window snooze-db-backup"))
		// Why each notification was sent or held.
		notes := text(ctx, ".notifications")
		Expect(notes).To(MatchRegexp(`Down: a failure ping\s+Held by maintenance window snooze-db-backup-\w+ until .* UTC\.`))
		screenshot(ctx, "check-snoozed")
		do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".policy.maintenance")))
		Expect(js[bool](ctx, `document.querySelector(".policy.maintenance").scrollWidth <= window.innerWidth`)).To(BeTrue())
		Expect(js[bool](ctx, `document.querySelector(".snooze-form").scrollWidth <= window.innerWidth`)).To(BeTrue())
		screenshot(ctx, "check-snoozed-phone")
		do(ctx, chromedp.EmulateViewport(1280, 900))

		Eventually(func() string {
			do(ctx, chromedp.Navigate(harness.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(".summary")))
			return js[string](ctx, `document.querySelector('tr[data-id="`+backup.uuid+`"] .maintenance')?.textContent ?? ""`)
		}).Should(Equal("maintenance"))

		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+backup.uuid), chromedp.WaitVisible(chromedp.CSS(".snooze-form button")),
			chromedp.Click(chromedp.CSS(".snooze-form button")), chromedp.WaitVisible(chromedp.CSS(".snooze-form select")))
		Expect(harness.Client.List(context.Background(), &list, client.InNamespace(p.Namespace))).To(Succeed())
		Expect(list.Items).To(BeEmpty())
		curl(backup.pingURL, body) // up again, for the specs that follow
		Eventually(func() string {
			do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+backup.uuid), chromedp.WaitVisible(chromedp.CSS(".notifications")))
			return text(ctx, ".notifications")
		}).Should(MatchRegexp(`Up\s+Not sent: no Channel of this check takes it\.[\s\S]*Down: a failure ping\s+Held by maintenance window snooze-db-backup-\w+; no Channel of this check takes it anyway\.`))
	})

	It("explains a schedule in words, with its next instants in its zone and the viewer's", func() {
		ctx := newSession()
		signIn(ctx, p.ReadOnly)
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+report.key()), chromedp.WaitVisible(chromedp.CSS("table.upcoming")))
		Expect(text(ctx, "main")).To(ContainSubstring("Expects a ping every day at 03:45, Riga time"))
		Expect(js[int](ctx, `document.querySelectorAll("table.upcoming tbody tr").length`)).To(Equal(5))
		Expect(text(ctx, "table.upcoming tbody tr td")).To(MatchRegexp(`^\w{3} \d+ \w{3} 03:45$`))
	})

	It("reads at phone width, can be used from the keyboard, and has a wall mode", func() {
		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		screenshotAfter(ctx, "/", "board")
		screenshotAfter(ctx, "/?wall=1", "wall")
		Expect(js[string](ctx, `getComputedStyle(document.body).backgroundColor`)).To(Equal("rgb(13, 17, 23)"))
		// Down first on the wall.
		Expect(text(ctx, "table.board tbody tr .status")).To(ContainSubstring("down"))

		// The first Tab reaches the skip link, which leads to the content.
		do(ctx, chromedp.Navigate(harness.BaseURL+"/"), chromedp.WaitVisible(chromedp.CSS(".summary")),
			chromedp.KeyEvent("\t"))
		Expect(js[string](ctx, `document.activeElement.textContent`)).To(Equal("Skip to content"))

		// At phone width nothing overflows sideways.
		do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(harness.BaseURL+"/"),
			chromedp.WaitVisible(chromedp.CSS(".summary")))
		Expect(js[bool](ctx, `document.documentElement.scrollWidth <= window.innerWidth`)).To(BeTrue())
		screenshot(ctx, "board-phone")
	})

	It("signs out, and ends a session when it expires", func() {
		ctx := newSession()
		signIn(ctx, p.ReadOnly)
		do(ctx, chromedp.Click(chromedp.CSS(".signout button")), chromedp.WaitVisible(chromedp.ID("key")))
		do(ctx, chromedp.Navigate(harness.BaseURL+"/"), chromedp.WaitVisible(chromedp.ID("key")))

		signIn(ctx, p.ReadOnly)
		// A link followed from another site (a notification) does not carry
		// the SameSite=Strict cookie; the page opens itself again and the
		// session is there.
		link := fmt.Sprintf(`data:text/html,<a id="go" href="%s/checks/%s">open</a>`, harness.BaseURL, report.key())
		do(ctx, chromedp.Navigate(link), chromedp.Click(chromedp.ID("go")), chromedp.WaitVisible(chromedp.CSS(".state-line")))
		Expect(text(ctx, "h1")).To(Equal("Nightly report"))

		clk.Step(13 * time.Hour) // past the 12-hour session
		do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("problem")))
		Expect(text(ctx, "#problem")).To(ContainSubstring("Your session expired"))
	})

	It("says which policy made a CronJob's check, and from which fields", func() {
		bg := context.Background()
		Expect(harness.Client.Create(bg, &v1.CronJobPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "team-data"},
			Spec: v1.CronJobPolicySpec{CronJobDefaults: v1.CronJobDefaults{Grace: &metav1.Duration{Duration: 10 * time.Minute}, Tags: "data"}}})).To(Succeed())
		Expect(harness.Client.Create(bg, &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "nightly-etl", Annotations: map[string]string{"monitoring.vigil.dev/tags": "etl"}},
			Spec: batchv1.CronJobSpec{Schedule: "0 2 29 2 *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "etl", Image: "busybox"}}}}}}},
		})).To(Succeed())
		c := &v1.Check{}
		Eventually(func(g Gomega) string {
			g.Expect(harness.Client.Get(bg, client.ObjectKey{Namespace: p.Namespace, Name: "cronjob-nightly-etl"}, c)).To(Succeed())
			return c.Status.UUID
		}).ShouldNot(BeEmpty())

		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		Eventually(func() string {
			do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+c.Status.UUID), chromedp.WaitVisible(chromedp.CSS(".state-line")))
			return liveText(ctx, ".coverage")
		}).Should(Equal("Made for CronJob nightly-etl by CronJobPolicy/team-data, which sets grace. The CronJob's annotations set tags."))
		screenshot(ctx, "check-cronjob-policy")
		do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(harness.BaseURL+"/checks/"+c.Status.UUID),
			chromedp.WaitVisible(chromedp.CSS(".coverage")))
		screenshot(ctx, "check-cronjob-policy-phone")
	})

	It("sends a test notification through a Channel of the check, and through each member of a group", func() {
		bg := context.Background()
		var mu sync.Mutex
		var bodies []string
		receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			bodies = append(bodies, r.URL.Path+" "+string(b))
			mu.Unlock()
		}))
		DeferCleanup(receiver.Close)
		received := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return append([]string(nil), bodies...)
		}
		harness.AllowEgressNow(p.Namespace, egress.Loopback.String())
		Expect(harness.Client.Create(bg, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "chat"},
			StringData: map[string]string{"slack": receiver.URL + "/slack/hook", "mattermost": receiver.URL + "/mattermost/hook"}})).To(Succeed())
		for _, ch := range []*v1.Channel{
			{ObjectMeta: metav1.ObjectMeta{Name: "ops-slack"}, Spec: v1.ChannelSpec{Kind: v1.ChannelSlack,
				Slack: &v1.IncomingWebhookChannel{URLSecretRef: v1.SecretKeyRef{Name: "chat", Key: "slack"}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "ops-mattermost"}, Spec: v1.ChannelSpec{Kind: v1.ChannelMattermost,
				Mattermost: &v1.IncomingWebhookChannel{URLSecretRef: v1.SecretKeyRef{Name: "chat", Key: "mattermost"}}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "oncall"}, Spec: v1.ChannelSpec{Kind: v1.ChannelGroup,
				Group: &v1.GroupChannel{Channels: []string{"ops-slack", "ops-mattermost"}}}},
		} {
			ch.Namespace = p.Namespace
			Expect(harness.Client.Create(bg, ch)).To(Succeed())
		}
		obj := &v1.Check{}
		Expect(harness.Client.Get(bg, client.ObjectKey{Namespace: p.Namespace, Name: "staging-sync-" + stage.uuid[:8]}, obj)).To(Succeed())
		patched := obj.DeepCopy()
		patched.Spec.Channels = []string{"oncall", "ops-slack"}
		Expect(harness.Client.Patch(bg, patched, client.MergeFrom(obj))).To(Succeed())

		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		Eventually(func() string {
			do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+stage.uuid), chromedp.WaitVisible(chromedp.CSS(".state-line")))
			return text(ctx, "ul.channels")
		}).Should(And(ContainSubstring("oncall (group: ops-slack, ops-mattermost)"), ContainSubstring("ops-slack (slack)")))

		// The group's button tests each member, about this check.
		do(ctx, chromedp.Click(chromedp.CSS(`form[action$="/channels/oncall/test"] button`)), chromedp.WaitVisible(chromedp.CSS(".notice")))
		Expect(text(ctx, ".notice")).To(Equal("A test notification went through oncall."))
		Expect(received()).To(ConsistOf(
			And(HavePrefix("/slack/hook "), ContainSubstring(`[Test] “Staging sync”`), ContainSubstring(harness.BaseURL+"/checks/"+stage.uuid)),
			And(HavePrefix("/mattermost/hook "), ContainSubstring(`[Test] “Staging sync”`))))
		screenshot(ctx, "check-channel-tested")

		// A second test right away is refused, of any Channel of the
		// project; a few seconds later another goes.
		code := run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`fetch("/checks/%s/channels/oncall/test", {method: "POST", body: new URLSearchParams({csrf: document.querySelector("input[name=csrf]").value})}).then(r => r.status)`, stage.uuid), chromedp.EvalAwaitPromise))
		Expect(code).To(BeNumerically("==", http.StatusTooManyRequests))
		code = run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`fetch("/checks/%s/channels/ops-slack/test", {method: "POST", body: new URLSearchParams({csrf: document.querySelector("input[name=csrf]").value})}).then(r => r.status)`, stage.uuid), chromedp.EvalAwaitPromise))
		Expect(code).To(BeNumerically("==", http.StatusTooManyRequests))
		Expect(received()).To(HaveLen(2))
		clk.Step(11 * time.Second)
		// The page still shows the last test's notice: wait for the
		// delivery, then for the page the redirect leads to.
		do(ctx, chromedp.Click(chromedp.CSS(`form[action$="/channels/ops-slack/test"] button`)))
		Eventually(received).Should(HaveLen(3))
		Eventually(func() string { return liveText(ctx, ".notice") }).Should(Equal("A test notification went through ops-slack."))

		// A Channel the check does not name cannot be tested from its page,
		// and a form without the session's token is refused.
		code = run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(`fetch("/checks/%s/channels/ops-mattermost/test", {method: "POST", body: new URLSearchParams({csrf: document.querySelector("input[name=csrf]").value})}).then(r => r.status)`, stage.uuid), chromedp.EvalAwaitPromise))
		Expect(code).To(BeNumerically("==", http.StatusNotFound))
		status, _ := post("/checks/"+stage.uuid+"/channels/ops-slack/test", "csrf=guess")
		Expect(status).NotTo(Equal(http.StatusSeeOther))
		Expect(received()).To(HaveLen(3))

		do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(harness.BaseURL+"/checks/"+stage.uuid), chromedp.WaitVisible(chromedp.CSS("ul.channels")))
		Expect(js[bool](ctx, `document.querySelector("ul.channels").scrollWidth <= window.innerWidth`)).To(BeTrue())
		screenshot(ctx, "check-channels-phone")
	})

	// Last: it moves the clock on by a week.
	It("charts a check's runs, its success rate and its days, and the board sorts by them", func() {
		status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, `{"name": "Warehouse load", "slug": "warehouse-load", "timeout": 86400, "grace": 3600}`)
		Expect(status).To(Equal(http.StatusCreated), "%v", resp)
		uuid, pingURL := resp["uuid"].(string), resp["ping_url"].(string)
		// Two runs a day for a week, slower as the week goes on, every
		// fifth one failing, and one run without a start.
		timed := 0
		for i := range 14 {
			curl(pingURL+"/start", "")
			took := time.Duration(90+10*i) * time.Second
			clk.Step(took)
			end := pingURL
			if i%5 == 4 {
				end += "/fail"
			}
			curl(end, "")
			timed++
			clk.Step(12*time.Hour - took)
		}
		curl(pingURL, "")

		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+uuid), chromedp.WaitVisible(chromedp.CSS("svg.durations")))
		screenshot(ctx, "check-runs")
		summary := liveText(ctx, ".run-summary")
		Expect(summary).To(ContainSubstring("succeeded"))
		Expect(summary).To(MatchRegexp(`\d+ runs in the last 7 days: \d+ succeeded, \d+ failed\.`))
		Expect(summary).To(ContainSubstring("Duration p50"))
		Expect(js[int](ctx, `document.querySelectorAll("svg.durations circle.run").length`)).To(BeNumerically(">=", timed-2))
		Expect(js[int](ctx, `document.querySelectorAll("svg.durations circle.run.fail").length`)).To(BeNumerically(">=", 2))
		Expect(js[int](ctx, `document.querySelectorAll("svg.durations line.untimed").length`)).To(Equal(1))
		Expect(js[int](ctx, `document.querySelectorAll("svg.durations line.p95, svg.durations line.p50").length`)).To(Equal(2))
		Expect(js[int](ctx, `document.querySelectorAll("svg.rate circle").length`)).To(BeNumerically(">", 3))
		Expect(js[int](ctx, `document.querySelectorAll("svg.calendar rect").length`)).To(Equal(91))
		// A day a run failed on is partly down (the check is down until
		// the next success); before the first flip the state is unknown.
		days := js[[]string](ctx, `[...document.querySelectorAll("svg.calendar rect")].map(r => r.getAttribute("class"))`)
		Expect(days).To(ContainElement("day-some"))
		Expect(days[len(days)-1]).To(Equal("day-up"), "today")
		Expect(js[string](ctx, `document.querySelector("svg.durations title").textContent`)).To(HavePrefix("Run durations from"))
		screenshotOf(ctx, "section.runs", "check-runs-section")

		By("another window, picked by a link: no script needed")
		do(ctx, chromedp.Click(chromedp.CSS(`nav.windows a[href*="window=1d"]`)), chromedp.WaitVisible(chromedp.CSS(`nav.windows a.on[href*="window=1d"]`)))
		Expect(liveText(ctx, ".run-summary")).To(ContainSubstring("in the last day"))

		By("at phone width the charts shrink to fit")
		do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(harness.BaseURL+"/checks/"+uuid), chromedp.WaitVisible(chromedp.CSS("svg.durations")))
		Expect(js[[]string](ctx, `[...document.querySelectorAll("section.runs, section.runs *")].filter(e => e.getBoundingClientRect().right > window.innerWidth).map(e => e.tagName + "." + e.getAttribute("class"))`)).To(BeEmpty(), "nothing of the runs overflows sideways")
		Expect(js[bool](ctx, `document.querySelector("svg.durations").getBoundingClientRect().width <= window.innerWidth`)).To(BeTrue())
		screenshot(ctx, "check-runs-phone")
		screenshotOf(ctx, "section.runs", "check-runs-section-phone")

		By("the board draws each check's recent durations, and sorts by p95 and by success rate")
		// A second check with a run this week, a failed one. The board
		// shares a project's figures for a few seconds: it shows the run
		// within them.
		curl(stage.pingURL+"/fail", "")
		var rates []string
		var seen []float64
		Eventually(func() int {
			do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(harness.BaseURL+"/?sort=rate"), chromedp.WaitVisible(chromedp.CSS("table.board")))
			rates = js[[]string](ctx, `[...document.querySelectorAll("table.board tbody .run-figures")].map(e => e.textContent.trim())`)
			seen = nil
			for _, r := range rates {
				var f float64
				if _, err := fmt.Sscanf(r, "%f%%", &f); err == nil {
					seen = append(seen, f)
				}
			}
			return len(seen)
		}).Should(BeNumerically(">=", 2))
		Expect(seen).To(BeEquivalentTo(sorted(seen)), "the worst success rate first: %v", rates)
		Expect(seen[0]).To(BeZero(), "the check whose only run failed first: %v", rates)
		do(ctx, chromedp.Navigate(harness.BaseURL+"/?sort=p95"), chromedp.WaitVisible(chromedp.CSS("table.board")))
		Expect(js[string](ctx, `document.querySelector("table.board tbody tr").dataset.id`)).To(Equal(uuid), "the slowest p95 first")
		Expect(js[int](ctx, fmt.Sprintf(`document.querySelectorAll('tr[data-id=%q] svg.spark polyline').length`, uuid))).To(Equal(1))
		Expect(text(ctx, fmt.Sprintf(`tr[data-id=%q] .run-figures`, uuid))).To(MatchRegexp(`^\d+(\.\d+)?% · p95 \d`))
		screenshot(ctx, "board-runs")
	})

	It("acknowledges a down from its page, in the key's name, and forgets it when the check recovers", func() {
		status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, `{"name": "Paged job", "timeout": 3600}`)
		Expect(status).To(Equal(http.StatusCreated), "%v", resp)
		uuid, pingURL := resp["uuid"].(string), resp["ping_url"].(string)
		DeferCleanup(func() { apiCall("DELETE", "/api/v3/checks/"+uuid, p.ReadWrite, "") })
		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+uuid), chromedp.WaitVisible(chromedp.CSS(".pause-form")))
		Expect(js[bool](ctx, `document.querySelector(".ack-form") === null`)).To(BeTrue(), "a check that is not down")

		curl(pingURL+"/fail", "")
		do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".ack-form button")))
		Expect(js[bool](ctx, `document.querySelector(".ack-form").scrollWidth <= window.innerWidth`)).To(BeTrue(), "the form fits a phone")
		screenshot(ctx, "check-acknowledge-phone")
		do(ctx, chromedp.EmulateViewport(1280, 900), chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".ack-form button")))
		Expect(text(ctx, ".ack-form button")).To(Equal("Acknowledge"))
		do(ctx, chromedp.Click(chromedp.CSS(".ack-form button")), chromedp.WaitVisible(chromedp.CSS(".policy.ack")))
		Expect(text(ctx, ".policy.ack")).To(Equal("Acknowledged by dashboard, key " + p.ReadWrite[:12] +
			", just now: its re-alerts and escalation stop until it recovers."))
		Expect(js[bool](ctx, `document.querySelector(".ack-form") === null`)).To(BeTrue(), "acknowledged once")
		Expect(text(ctx, ".notifications")).To(ContainSubstring("Acknowledged by dashboard, key " + p.ReadWrite[:12]))
		screenshot(ctx, "check-acknowledged")
		_, resp = apiCall("GET", "/api/v3/checks/"+uuid+"/ack", p.ReadWrite, "")
		Expect(resp["ack"]).To(HaveKeyWithValue("by", "dashboard, key "+p.ReadWrite[:12]))

		// A read-only session sees who acknowledged it, and no button.
		ro := newSession()
		signIn(ro, p.ReadOnly)
		do(ro, chromedp.Navigate(harness.BaseURL+"/checks/"+checks.UniqueKey(uuid)), chromedp.WaitVisible(chromedp.CSS(".policy.ack")))
		Expect(js[bool](ro, `document.querySelector(".ack-form") === null`)).To(BeTrue())

		curl(pingURL, "")
		do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".status.big.up")))
		Expect(js[bool](ctx, `document.querySelector(".policy.ack") === null && document.querySelector(".ack-form") === null`)).To(BeTrue())
	})

	It("shows what a check depends on and, while that check is down, that it holds the check's notifications", func() {
		status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, `{"name": "Backup host", "slug": "backup-host", "timeout": 3600}`)
		Expect(status).To(Equal(http.StatusCreated), "%v", resp)
		hostUUID, hostPing := resp["uuid"].(string), resp["ping_url"].(string)
		DeferCleanup(func() { apiCall("DELETE", "/api/v3/checks/"+hostUUID, p.ReadWrite, "") })
		hostName := "backup-host-" + hostUUID[:8]
		status, resp = apiCall("POST", "/api/v3/checks/", p.ReadWrite, `{"name": "Nightly dump", "slug": "nightly-dump", "timeout": 3600}`)
		Expect(status).To(Equal(http.StatusCreated), "%v", resp)
		uuid, pingURL := resp["uuid"].(string), resp["ping_url"].(string)
		DeferCleanup(func() { apiCall("DELETE", "/api/v3/checks/"+uuid, p.ReadWrite, "") })
		c := &v1.Check{}
		key := client.ObjectKey{Namespace: p.Namespace, Name: "nightly-dump-" + uuid[:8]}
		Expect(harness.Client.Get(context.Background(), key, c)).To(Succeed())
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.DependsOn = &v1.DependsOn{Checks: []string{hostName}}
		Expect(harness.Client.Patch(context.Background(), c, patch)).To(Succeed())
		Eventually(func(g Gomega) int64 {
			g.Expect(harness.Client.Get(context.Background(), key, c)).To(Succeed())
			return c.Status.ObservedGeneration
		}).Should(Equal(c.Generation))

		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+uuid), chromedp.WaitVisible(chromedp.CSS(".policy.depends")))
		Expect(text(ctx, ".policy.depends")).To(MatchRegexp(`^Depends on ` + hostName + ` \((new|unknown)\): while one of them is down, its downs notify nobody\.$`))
		Expect(js[string](ctx, `document.querySelector(".policy.depends a").getAttribute("href")`)).To(Equal("/checks/" + hostUUID))

		curl(hostPing+"/fail", "")
		curl(pingURL+"/fail", "")
		Eventually(func() string {
			do(ctx, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(".policy.depends")))
			return js[string](ctx, `(document.querySelector(".policy.depends .held") || {}).textContent || ""`)
		}).Should(MatchRegexp(`^Held: depends on ` + hostName + `, which is down since .+ \(just now\)\. Its downs notify nobody until ` +
			hostName + ` is back; then the Channels hear once if it is still down\.$`))
		Expect(text(ctx, ".policy.depends a")).To(Equal(hostName))
		screenshot(ctx, "check-depends-held")
		Expect(text(ctx, ".notifications")).To(ContainSubstring(hostName))

		// A read-only session sees the relation, linked by unique key.
		ro := newSession()
		signIn(ro, p.ReadOnly)
		do(ro, chromedp.Navigate(harness.BaseURL+"/checks/"+checks.UniqueKey(uuid)), chromedp.WaitVisible(chromedp.CSS(".policy.depends .held")))
		Expect(js[string](ro, `document.querySelector(".policy.depends a").getAttribute("href")`)).To(Equal("/checks/" + checks.UniqueKey(hostUUID)))
	})

	It("draws a check's usual run time, learned from its runs, as a band on its duration chart", func() {
		status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, `{"name": "Usual runs", "slug": "usual-runs", "timeout": 3600}`)
		Expect(status).To(Equal(http.StatusCreated), "%v", resp)
		uuid, pingURL := resp["uuid"].(string), resp["ping_url"].(string)
		DeferCleanup(func() { apiCall("DELETE", "/api/v3/checks/"+uuid, p.ReadWrite, "") })
		c := &v1.Check{}
		key := client.ObjectKey{Namespace: p.Namespace, Name: "usual-runs-" + uuid[:8]}
		Expect(harness.Client.Get(context.Background(), key, c)).To(Succeed())
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.AlertPolicy = v1.AlertPolicy{Anomaly: &v1.AnomalyPolicy{MinRuns: 5}}
		Expect(harness.Client.Patch(context.Background(), c, patch)).To(Succeed())
		Eventually(func(g Gomega) int64 {
			g.Expect(harness.Client.Get(context.Background(), key, c)).To(Succeed())
			return c.Status.ObservedGeneration
		}).Should(Equal(c.Generation))
		for range 6 {
			curl(pingURL+"/start", "")
			curl(pingURL, "")
		}
		ctx := newSession()
		signIn(ctx, p.ReadWrite)
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+uuid), chromedp.WaitVisible(chromedp.CSS("svg.durations rect.usual")))
		Expect(js[string](ctx, `document.querySelector("svg.durations rect.usual title").textContent`)).To(MatchRegexp(`^usual 0 ms to [\d.]+ s$`))
		Expect(js[string](ctx, `document.querySelector("svg.durations > title").textContent`)).To(
			MatchRegexp(`Its usual range, learned from its last 6 runs, is [\d.]+ (milli)?seconds? to [\d.]+ (milli)?seconds?\.`))
		Expect(text(ctx, ".runs figcaption")).To(ContainSubstring("the usual range (anomaly)"))
		screenshotOf(ctx, "svg.durations", "chart-usual-range")
	})
})

// screenshotAfter opens path in the session and saves a screenshot of it.
func screenshotAfter(ctx context.Context, path, name string) {
	GinkgoHelper()
	do(ctx, chromedp.Navigate(harness.BaseURL+path), chromedp.WaitVisible(chromedp.CSS("main")))
	screenshot(ctx, name)
}

func sorted(xs []float64) []float64 {
	out := append([]float64(nil), xs...)
	slices.Sort(out)
	return out
}
