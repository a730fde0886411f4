package dashboardtest

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/statuspage"
)

// get fetches a URL without a session.
func get(url string) (int, http.Header, string) {
	GinkgoHelper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	Expect(err).NotTo(HaveOccurred())
	resp, err := http.DefaultClient.Do(req)
	Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, resp.Header, string(b)
}

var _ = Describe("A status page", func() {
	It("shows the checks it selects, their state and uptime, as HTML, JSON and RSS, and never a UUID, a ping URL, a slug or a body", func() {
		bg := context.Background()
		// A check's creation time is the API server's (the real time); its
		// pings are at the manager's fake clock, which may be behind when
		// this spec runs first. Uptime counts from the creation: bring the
		// clock past the real time, so that no ping comes before its check.
		if behind := time.Since(clk.Now()); behind > -2*time.Second {
			clk.Step(behind + 2*time.Second)
		}
		p := harness.NewProject("status-")
		type made struct{ uuid, pingURL, slug, name string }
		create := func(name, slug, tags string) made {
			status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, fmt.Sprintf(
				`{"name": %q, "slug": %q, "tags": %q, "timeout": 3600, "grace": 300}`, name, slug, tags))
			Expect(status).To(Equal(http.StatusCreated), "%v", resp)
			return made{resp["uuid"].(string), resp["ping_url"].(string), slug, name}
		}
		api := create("Public API", "public-api-probe", "public")
		site := create("Marketing site", "marketing-site-probe", "public web")
		nameless := create("", "nameless-probe", "public")
		hidden := create("Secret payroll export", "payroll-export", "internal")
		curl(api.pingURL, "SECRET-BODY-42 rows exported")
		// The site is up for 40 s, then down: its uptime is its own life's,
		// not 0% over a grey bar.
		curl(site.pingURL, "")
		clk.Step(40 * time.Second)
		curl(site.pingURL+"/fail", "SECRET-FAILURE-DETAIL")
		curl(nameless.pingURL, "")
		curl(hidden.pingURL, "SECRET-PAYROLL")
		clk.Step(10 * time.Minute) // some known time since the down

		sp := &v1.StatusPage{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "public"},
			Spec: v1.StatusPageSpec{CheckSelection: v1.CheckSelection{Tags: []string{"public"}}, Title: "Example Inc. status", Description: "What our customers rely on."}}
		Expect(harness.Client.Create(bg, sp)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(harness.Client.Get(bg, client.ObjectKeyFromObject(sp), sp)).To(Succeed())
			g.Expect(sp.Status.URL).To(HavePrefix(harness.BaseURL + "/status/"))
			g.Expect(sp.Status.Checks).To(BeEquivalentTo(3))
			g.Expect(sp.Status.Conditions).To(ContainElement(And(HaveField("Type", v1.ConditionReady),
				HaveField("Status", metav1.ConditionTrue), HaveField("ObservedGeneration", sp.Generation))))
		}).Should(Succeed())

		status, header, page := get(sp.Status.URL)
		Expect(status).To(Equal(http.StatusOK))
		Expect(header.Get("X-Robots-Tag")).To(ContainSubstring("noindex"))
		Expect(header.Get("Referrer-Policy")).To(Equal("no-referrer"))
		for _, want := range []string{"Example Inc. status", "What our customers rely on.", "Public API", "Marketing site",
			"Unnamed check", "1 check is down.", "uptime over 90 days"} {
			Expect(page).To(ContainSubstring(want))
		}
		status, header, jsonBody := get(sp.Status.URL + ".json")
		Expect(status).To(Equal(http.StatusOK))
		Expect(header.Get("Content-Type")).To(Equal("application/json"))
		var doc struct {
			Title  string
			Down   int
			Checks []struct {
				Name   string
				Status string
				Uptime *float64 `json:"uptime_90d"`
			}
			Events []struct{ Check, Status string }
		}
		Expect(json.Unmarshal([]byte(jsonBody), &doc)).To(Succeed())
		Expect(doc.Title).To(Equal("Example Inc. status"))
		Expect(doc.Down).To(Equal(1))
		Expect(doc.Checks).To(HaveLen(3))
		Expect(doc.Checks[0].Name).To(Equal("Marketing site"))
		Expect(doc.Checks[0].Status).To(Equal("down"))
		Expect(doc.Checks[1].Name).To(Equal("Public API"))
		Expect(doc.Checks[1].Status).To(Equal("up"))
		Expect(doc.Checks[0].Uptime).NotTo(BeNil())
		Expect(*doc.Checks[0].Uptime).To(And(BeNumerically(">", 0), BeNumerically("<", 100)), "up, then down for 10 minutes")
		Expect(doc.Checks[1].Uptime).To(HaveValue(BeNumerically("==", 100)), "up since it was created")
		Expect(doc.Events).To(ContainElement(And(HaveField("Check", "Marketing site"), HaveField("Status", "down"))))

		status, header, feed := get(sp.Status.URL + ".rss")
		Expect(status).To(Equal(http.StatusOK))
		Expect(header.Get("Content-Type")).To(HavePrefix("application/rss+xml"))
		var rss struct {
			Channel struct {
				Title string `xml:"title"`
				Items []struct {
					Title string `xml:"title"`
					GUID  string `xml:"guid"`
				} `xml:"item"`
			} `xml:"channel"`
		}
		Expect(xml.Unmarshal([]byte(feed), &rss)).To(Succeed())
		Expect(rss.Channel.Title).To(Equal("Example Inc. status"))
		Expect(rss.Channel.Items).To(ContainElement(HaveField("Title", "Marketing site is down")))

		By("nothing that opens a check, or tells of one it does not select")
		uniqueKey := func(m made) string { return checks.UniqueKey(m.uuid) }
		for _, body := range []string{page, jsonBody, feed} {
			for _, m := range []made{api, site, nameless, hidden} {
				Expect(body).NotTo(ContainSubstring(m.uuid))
				Expect(body).NotTo(ContainSubstring(m.uuid[:8]))
				Expect(body).NotTo(ContainSubstring(m.pingURL))
				Expect(body).NotTo(ContainSubstring(m.slug))
				Expect(body).NotTo(ContainSubstring(uniqueKey(m)))
			}
			for _, secret := range []string{"SECRET", "Secret payroll", p.ReadOnly, p.ReadWrite, p.PingKey, p.Namespace,
				project.UUID(p.Namespace), "/ping/", "internal", "127.0.0.1:"} {
				if secret == "127.0.0.1:" && body == feed {
					continue // the feed's link is the page's own address
				}
				Expect(body).NotTo(ContainSubstring(secret))
			}
		}

		By("a page another address would be: none")
		for _, path := range []string{"/status/00000000-0000-0000-0000-000000000000", "/status/" + api.uuid, "/status/nope",
			"/status/" + strings.TrimPrefix(sp.Status.URL, harness.BaseURL+"/status/") + ".xml"} {
			status, _, _ := get(harness.BaseURL + path)
			Expect(status).To(Equal(http.StatusNotFound), path)
		}

		By("in a browser, at desktop and phone width")
		ctx := newSession()
		do(ctx, chromedp.Navigate(sp.Status.URL), chromedp.WaitVisible(chromedp.CSS(".status-checks")))
		Expect(js[bool](ctx, `document.documentElement.scrollWidth <= window.innerWidth`)).To(BeTrue())
		// A day a mark, in order: no data only before the check existed.
		marks := js[[][]string](ctx, `[...document.querySelectorAll(".status-checks li")].map(li =>
			[...li.querySelectorAll("svg.days rect")].map(r => r.getAttribute("class")))`)
		Expect(marks).To(HaveLen(3))
		for _, row := range marks {
			Expect(row[0]).To(Equal("day-unknown"), "90 days ago, before the check existed")
		}
		site0, api1 := marks[0], marks[1]
		Expect(api1[len(api1)-1]).To(Equal("day-up"))
		Expect(api1).To(HaveEach(BeElementOf("day-unknown", "day-up")))
		// Today: up, then down (all down if the down began in the last
		// minutes before the clock's midnight).
		Expect(site0[len(site0)-1]).To(BeElementOf("day-some", "day-mostly", "day-down"))
		screenshot(ctx, "status-page")
		do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(sp.Status.URL), chromedp.WaitVisible(chromedp.CSS(".status-checks")))
		Expect(js[bool](ctx, `document.documentElement.scrollWidth <= window.innerWidth`)).To(BeTrue())
		screenshot(ctx, "status-page-phone")

		By("a page that selects nothing is refused; one whose selector does not parse is not served, and says why")
		err := harness.Client.Create(bg, &v1.StatusPage{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "empty"},
			Spec: v1.StatusPageSpec{Title: "Nothing"}})
		Expect(err).To(MatchError(ContainSubstring("select checks with at least one of selector, tags and checks")))
		bad := &v1.StatusPage{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "bad"}, Spec: v1.StatusPageSpec{
			CheckSelection: v1.CheckSelection{Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}}, Title: "Bad"}}
		Expect(harness.Client.Create(bg, bad)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(harness.Client.Get(bg, client.ObjectKeyFromObject(bad), bad)).To(Succeed())
			g.Expect(bad.Status.Conditions).To(ContainElement(And(HaveField("Type", v1.ConditionReady),
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1.ReasonInvalidSpec),
				HaveField("Message", ContainSubstring("spec.selector")))))
			g.Expect(bad.Status.URL).To(BeEmpty())
		}).Should(Succeed())
		badStatus, _, _ := get(statuspage.URL(harness.BaseURL, bad))
		Expect(badStatus).To(Equal(http.StatusNotFound))

		By("deleted, it is gone")
		Expect(harness.Client.Delete(bg, sp)).To(Succeed())
		Eventually(func() int { s, _, _ := get(sp.Status.URL); return s }).WithTimeout(40 * time.Second).Should(Equal(http.StatusNotFound))
	})

	It("says which check a down check depends on, naming it only when the page shows it", func() {
		bg := context.Background()
		p := harness.NewProject("status-deps-")
		// create returns the check's ping URL and object name.
		create := func(name, slug, tags string) (pingURL, object string) {
			status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, fmt.Sprintf(
				`{"name": %q, "slug": %q, "tags": %q, "timeout": 3600, "grace": 300}`, name, slug, tags))
			Expect(status).To(Equal(http.StatusCreated), "%v", resp)
			return resp["ping_url"].(string), slug + "-" + resp["uuid"].(string)[:8]
		}
		dbPing, db := create("Database", "database", "public")
		reportsPing, reports := create("Reports", "reports", "public")
		vaultPing, vault := create("Secret vault", "vault", "internal")
		exportsPing, exports := create("Exports", "exports", "public")
		for child, parent := range map[string]string{reports: db, exports: vault} {
			c := &v1.Check{}
			Expect(harness.Client.Get(bg, client.ObjectKey{Namespace: p.Namespace, Name: child}, c)).To(Succeed())
			patch := client.MergeFrom(c.DeepCopy())
			c.Spec.DependsOn = &v1.DependsOn{Checks: []string{parent}}
			Expect(harness.Client.Patch(bg, c, patch)).To(Succeed())
			Eventually(func(g Gomega) int64 {
				g.Expect(harness.Client.Get(bg, client.ObjectKeyFromObject(c), c)).To(Succeed())
				return c.Status.ObservedGeneration
			}).Should(Equal(c.Generation))
		}
		for _, u := range []string{dbPing, vaultPing, reportsPing, exportsPing} {
			curl(u+"/fail", "")
		}
		sp := &v1.StatusPage{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "public"},
			Spec: v1.StatusPageSpec{CheckSelection: v1.CheckSelection{Tags: []string{"public"}}, Title: "Example Inc. status"}}
		Expect(harness.Client.Create(bg, sp)).To(Succeed())
		Eventually(func(g Gomega) string {
			g.Expect(harness.Client.Get(bg, client.ObjectKeyFromObject(sp), sp)).To(Succeed())
			return sp.Status.URL
		}).ShouldNot(BeEmpty())

		var doc struct {
			Checks []struct {
				Name   string
				Status string
				HeldBy string `json:"held_by"`
			}
		}
		status, _, body := get(sp.Status.URL + ".json")
		Expect(status).To(Equal(http.StatusOK))
		Expect(json.Unmarshal([]byte(body), &doc)).To(Succeed())
		Expect(doc.Checks).To(ConsistOf(
			And(HaveField("Name", "Database"), HaveField("Status", "down"), HaveField("HeldBy", "")),
			And(HaveField("Name", "Exports"), HaveField("Status", "down"), HaveField("HeldBy", "another check")),
			And(HaveField("Name", "Reports"), HaveField("Status", "down"), HaveField("HeldBy", "Database"))))
		_, _, page := get(sp.Status.URL)
		Expect(page).To(ContainSubstring("Depends on Database, which is down."))
		Expect(page).To(ContainSubstring("Depends on another check, which is down."))
		Expect(page).NotTo(ContainSubstring("vault"))
		Expect(page).NotTo(ContainSubstring("Secret"))
	})

	It("draws a flapping check as at most one shape a day, and gives every visitor the same bytes, cached for 30 s", func() {
		bg := context.Background()
		p := harness.NewProject("flaps-")
		status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, `{"name": "Flappy", "tags": "public", "timeout": 3600, "grace": 300}`)
		Expect(status).To(Equal(http.StatusCreated), "%v", resp)
		pingURL := resp["ping_url"].(string)
		ping := func(url string) {
			GinkgoHelper()
			r, err := http.Post(url, "text/plain", nil)
			Expect(err).NotTo(HaveOccurred())
			_ = r.Body.Close()
			Expect(r.StatusCode).To(Equal(http.StatusOK))
		}
		const flaps = 100
		for range flaps {
			ping(pingURL + "/fail")
			clk.Step(time.Second)
			ping(pingURL)
			clk.Step(time.Second)
		}
		Eventually(func(g Gomega) {
			_, c := apiCall("GET", "/api/v3/checks/"+resp["uuid"].(string), p.ReadOnly, "")
			g.Expect(c["n_pings"]).To(BeEquivalentTo(2 * flaps))
		}).Should(Succeed())

		sp := &v1.StatusPage{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "flaps"},
			Spec: v1.StatusPageSpec{CheckSelection: v1.CheckSelection{Tags: []string{"public"}}, Title: "Flaps"}}
		Expect(harness.Client.Create(bg, sp)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(harness.Client.Get(bg, client.ObjectKeyFromObject(sp), sp)).To(Succeed())
			g.Expect(sp.Status.URL).NotTo(BeEmpty())
		}).Should(Succeed())

		status, header, page := get(sp.Status.URL)
		Expect(status).To(Equal(http.StatusOK))
		Expect(header.Get("Cache-Control")).To(Equal("public, max-age=30"))
		// No data before today, and today (and yesterday, had the flaps
		// crossed midnight): a shape a day, not one per flip.
		Expect(strings.Count(page, "<rect")).To(BeNumerically("<=", 3), "%d flips", 2*flaps)
		Expect(page).To(ContainSubstring("Flappy"))

		By("50 visitors at once get the same page; one who has it already gets nothing again")
		pages := make(chan string, 50)
		for range 50 {
			go func() {
				defer GinkgoRecover()
				_, _, body := get(sp.Status.URL)
				pages <- body
			}()
		}
		for range 50 {
			Expect(<-pages).To(Equal(page))
		}
		etag := header.Get("ETag")
		Expect(etag).NotTo(BeEmpty())
		req, err := http.NewRequestWithContext(bg, http.MethodGet, sp.Status.URL, nil)
		Expect(err).NotTo(HaveOccurred())
		req.Header.Set("If-None-Match", etag)
		r, err := http.DefaultClient.Do(req)
		Expect(err).NotTo(HaveOccurred())
		_ = r.Body.Close()
		Expect(r.StatusCode).To(Equal(http.StatusNotModified))
		_, jsonHeader, _ := get(sp.Status.URL + ".json")
		Expect(jsonHeader.Get("ETag")).NotTo(Equal(etag), "each format is its own entity")
	})
})
