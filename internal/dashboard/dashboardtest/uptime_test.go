package dashboardtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/report"
	"github.com/vigil-operator/vigil/internal/testenv/mailtest"
)

// moveClockTo moves the manager's clock forward to at.
func moveClockTo(at time.Time) {
	GinkgoHelper()
	Expect(at.After(clk.Now())).To(BeTrue(), "the clock only moves forward: from %s to %s", clk.Now(), at)
	clk.Step(at.Sub(clk.Now()))
}

// reportPeriodOf is the report period of kind that holds t.
func reportPeriodOf(kind v1.ReportPeriod, t time.Time) report.Period {
	GinkgoHelper()
	t = t.UTC()
	next := t.AddDate(0, 0, 7)
	if kind == v1.ReportMonthly {
		next = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	}
	p, ok := report.Last(kind, next)
	Expect(ok).To(BeTrue())
	Expect(!p.From.After(t) && t.Before(p.To)).To(BeTrue(), "%s holds %s", p.ID, t)
	return p
}

// Issue #49: the one uptime rule (package uptime) gives the same figure
// for the same check on its three surfaces: the public status page, the
// check's page and the report email.
//
// A check's creation time is the API server's (the real time), while its
// pings and the report periods follow the manager's fake clock: the
// checks must be created inside the period the report covers, so that
// the report's period and the pages' 90 days hold the same up and down
// time (before its creation there is no data, which counts neither way).
// The dashboard's Ordered specs move the clock on by a week: this spec
// runs before them, while the clock is near the real time.
var _ = Describe("A check's uptime", SpecPriority(1), func() {
	It("is the same figure on the status page, the check page and the report email, at the end of the report's period", func() {
		bg := context.Background()
		// Nightly backup is down for 1/40 of its life, and up the rest:
		// 97.5%. Billing export is up all the period, and misses its
		// deadline 2 minutes after the period's end, before the report is
		// written: 100%. Worked out here, not read from the code under test.
		const backup, export = "Nightly backup", "Billing export"
		want := map[string]string{backup: "97.5%", export: "100%"}

		p := harness.NewProject("uptime-")
		harness.AllowEgressNow(p.Namespace, egress.Loopback.String())
		mails := mailtest.Start()

		// The fake clock at a whole second (so that every instant below
		// is one, as the store keeps them to the microsecond), and not
		// behind the API server's, so that no ping comes before its check.
		syncClock := func() {
			GinkgoHelper()
			if at := time.Now().UTC().Truncate(time.Second).Add(2 * time.Second); clk.Now().Before(at) {
				moveClockTo(at)
			} else if now := clk.Now(); !now.Truncate(time.Second).Equal(now) {
				moveClockTo(now.Truncate(time.Second).Add(time.Second))
			}
		}
		// The period: the week (or, failing that, the month) that holds
		// both the checks' creation, now, and the fake clock's now, with
		// room left for a deadline, a down and a recovery.
		const room = 10 * time.Minute
		choose := func() (v1.ReportPeriod, report.Period, bool) {
			GinkgoHelper()
			created := time.Now().UTC().Truncate(time.Second) // at the latest
			for _, kind := range []v1.ReportPeriod{v1.ReportWeekly, v1.ReportMonthly} {
				if period := reportPeriodOf(kind, clk.Now()); !period.From.After(created) && period.To.Sub(clk.Now()) >= room {
					return kind, period, true
				}
			}
			return "", report.Period{}, false
		}
		syncClock()
		kind, period, ok := choose()
		if !ok {
			// The last minutes of a week that ends a month: wait for the
			// real week to end, as the API server's clock decides when the
			// checks are created.
			week := reportPeriodOf(v1.ReportWeekly, time.Now())
			Expect(time.Until(week.To)).To(BeNumerically("<", room+time.Minute),
				"the fake clock (%s) is too far ahead of the API server's (%s) for a period to hold both", clk.Now(), time.Now())
			time.Sleep(time.Until(week.To) + time.Second)
			syncClock()
			kind, period, ok = choose()
			Expect(ok).To(BeTrue())
		}
		end := period.To

		// create makes a check that expects a ping every wait (timeout
		// plus grace), and returns its UUID, ping URL and creation time.
		const grace = time.Minute
		create := func(name, slug string, wait time.Duration) (string, string, time.Time) {
			GinkgoHelper()
			status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, fmt.Sprintf(
				`{"name": %q, "slug": %q, "tags": "public", "timeout": %d, "grace": %d}`,
				name, slug, int((wait-grace).Seconds()), int(grace.Seconds())))
			Expect(status).To(Equal(http.StatusCreated), "%v", resp)
			uuid := resp["uuid"].(string)
			var made *v1.Check
			Eventually(func(g Gomega) {
				var list v1.CheckList
				g.Expect(harness.Client.List(bg, &list, client.InNamespace(p.Namespace))).To(Succeed())
				made = nil
				for i := range list.Items {
					if checks.UUIDOf(&list.Items[i]) == uuid {
						made = &list.Items[i]
					}
				}
				g.Expect(made).NotTo(BeNil())
			}).Should(Succeed())
			created := made.CreationTimestamp.UTC()
			Expect(created).NotTo(BeTemporally("<", period.From), "created in the report's period")
			Expect(created).To(BeTemporally(">", end.Add(-90*24*time.Hour)), "created in the pages' 90 days")
			return uuid, resp["ping_url"].(string), created
		}

		// Nightly backup's deadline falls about half way to the period's
		// end, and its next one, after it recovers, after the report is
		// written.
		backupWait := (end.Sub(clk.Now())/2 + 4*time.Minute).Truncate(time.Second)
		backupUUID, backupPing, created := create(backup, "nightly-backup", backupWait)
		if !clk.Now().After(created) {
			moveClockTo(created.Add(time.Second))
		}
		// The windows, by hand: up from its creation (new, then up, then
		// in its grace) until the deadline, down for 1/40 of its life
		// until the next ping, up again until the period's end.
		life := end.Sub(created) // whole seconds: downFor is whole milliseconds
		downFor := life / 40
		firstPing := clk.Now()
		deadline := firstPing.Add(backupWait)
		recovered := deadline.Add(downFor)
		Expect(recovered).To(BeTemporally("<", end), "up again before the period ends")
		Expect(recovered.Add(backupWait)).To(BeTemporally(">", end.Add(report.Settle+time.Minute)), "no other down until the report is written")
		up := deadline.Sub(created) + end.Sub(recovered)
		Expect(up + downFor).To(Equal(life))
		Expect(float64(up) / float64(up+downFor)).To(Equal(0.975))

		// Billing export is pinged once, at the backup's deadline, and
		// misses its next deadline 2 minutes after the period's end.
		exportPinged := deadline.Add(time.Second)
		exportDeadline := end.Add(2 * time.Minute)
		exportUUID, exportPing, exportCreated := create(export, "billing-export", exportDeadline.Sub(exportPinged))
		Expect(exportCreated).To(BeTemporally("<", exportPinged))

		// The three surfaces: a status page of the checks, and an email
		// Channel that asks for the period's report.
		sp := &v1.StatusPage{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "public"},
			Spec: v1.StatusPageSpec{CheckSelection: v1.CheckSelection{Tags: []string{"public"}}, Title: "Example Inc. status"}}
		Expect(harness.Client.Create(bg, sp)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(harness.Client.Get(bg, client.ObjectKeyFromObject(sp), sp)).To(Succeed())
			g.Expect(sp.Status.URL).To(HavePrefix(harness.BaseURL + "/status/"))
			g.Expect(sp.Status.Checks).To(BeEquivalentTo(2))
		}).Should(Succeed())
		ch := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "reports"}, Spec: v1.ChannelSpec{
			Kind: v1.ChannelEmail, Email: &v1.EmailChannel{To: []string{"ops@example.com"}, From: "vigil@example.com",
				Host: "127.0.0.1", Port: mails.Port, Security: v1.SMTPNone, Reports: kind}}}
		Expect(harness.Client.Create(bg, ch)).To(Succeed())
		Eventually(func() error {
			return harness.Manager.GetClient().Get(bg, client.ObjectKeyFromObject(ch), &v1.Channel{})
		}).Should(Succeed())

		statusOf := func(uuid string) func() any {
			return func() any {
				_, c := apiCall("GET", "/api/v3/checks/"+uuid, p.ReadOnly, "")
				return c["status"]
			}
		}
		By("the backup up, then down from its deadline, then up again at the next ping")
		curl(backupPing, "")
		Expect(statusOf(backupUUID)()).To(Equal("up"))
		moveClockTo(exportPinged) // the down is the deadline's, however late it is noticed
		Eventually(statusOf(backupUUID)).Should(Equal("down"))
		curl(exportPing, "")
		moveClockTo(recovered)
		curl(backupPing, "")
		Eventually(statusOf(backupUUID)).Should(Equal("up"))
		// Its two flips, at those instants (the API's to the second).
		iso := func(t time.Time) string {
			return t.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05") + "+00:00"
		}
		flipsOf := func(uuid string) func(Gomega) []map[string]any {
			return func(g Gomega) []map[string]any {
				r := harness.Call("GET", "/api/v3/checks/"+uuid+"/flips/", p.ReadOnly, "")
				g.Expect(r.Status).To(Equal(http.StatusOK), r.String())
				var flips []map[string]any
				g.Expect(json.Unmarshal(r.Body, &flips)).To(Succeed())
				return flips
			}
		}
		Eventually(flipsOf(backupUUID)).Should(Equal([]map[string]any{{"timestamp": iso(recovered), "up": 1.0}, {"timestamp": iso(deadline), "up": 0.0}}))

		By("at the period's end, the status page and the check pages")
		moveClockTo(end)
		Expect(statusOf(backupUUID)()).To(Equal("up"))
		Expect(statusOf(exportUUID)()).To(Equal("up"))
		ctx := newSession()
		do(ctx, chromedp.Navigate(sp.Status.URL), chromedp.WaitVisible(chromedp.CSS(".status-checks")))
		onStatusPage := js[map[string]string](ctx, `Object.fromEntries([...document.querySelectorAll(".status-checks li")].map(li =>
			[li.querySelector(".name").innerText.trim(), li.querySelector(".uptime").innerText.trim()]))`)
		Expect(onStatusPage).To(HaveLen(2))
		statusFigures := map[string]string{}
		for check, words := range onStatusPage {
			Expect(words).To(HaveSuffix(" uptime over 90 days"), check)
			statusFigures[check] = strings.TrimSuffix(words, " uptime over 90 days")
		}
		screenshot(ctx, "uptime-status-page")
		_, _, jsonBody := get(sp.Status.URL + ".json")
		var doc struct {
			Checks []struct {
				Name   string
				Uptime *float64 `json:"uptime_90d"`
			}
		}
		Expect(json.Unmarshal([]byte(jsonBody), &doc)).To(Succeed())
		Expect(doc.Checks).To(ConsistOf(And(HaveField("Name", backup), HaveField("Uptime", HaveValue(BeNumerically("==", 97.5)))),
			And(HaveField("Name", export), HaveField("Uptime", HaveValue(BeNumerically("==", 100))))))

		signIn(ctx, p.ReadWrite)
		checkFigures, onCheckPage := map[string]string{}, map[string]string{}
		for check, page := range map[string]struct {
			uuid  string
			downs string
		}{backup: {backupUUID, "1 time"}, export: {exportUUID, "0 times"}} {
			do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+page.uuid), chromedp.WaitVisible(chromedp.ID("flips-summary")))
			onCheckPage[check] = liveText(ctx, "#flips-summary")
			m := regexp.MustCompile(fmt.Sprintf(`^Up (\S+) of the last 90 days; down %s[,.]`, page.downs)).FindStringSubmatch(onCheckPage[check])
			Expect(m).NotTo(BeNil(), "%s's page says: %q", check, onCheckPage[check])
			checkFigures[check] = m[1]
		}
		do(ctx, chromedp.Navigate(harness.BaseURL+"/checks/"+backupUUID), chromedp.WaitVisible(chromedp.ID("flips-summary")))
		screenshot(ctx, "uptime-check-page")

		By("the report the manager sends once the period has settled, with the export down since 2 minutes after its end")
		moveClockTo(exportDeadline.Add(time.Minute))
		Eventually(statusOf(exportUUID)).Should(Equal("down"))
		// Recorded as a flip, as it is in the minutes the report waits for.
		Eventually(flipsOf(exportUUID)).Should(Equal([]map[string]any{{"timestamp": iso(exportDeadline), "up": 0.0}}))
		moveClockTo(end.Add(report.Settle))
		wantSubject := "Vigil report for " + p.Namespace + ": " + period.Name()
		var html string
		Eventually(func() string {
			for _, raw := range mails.Received() {
				if m := mailtest.Parse(raw); m.Subject == wantSubject && m.HTML != "" {
					html = m.HTML
					return m.Subject
				}
			}
			return ""
		}).Should(Equal(wantSubject))
		file := filepath.Join(GinkgoT().TempDir(), "report.html")
		Expect(os.WriteFile(file, []byte(html), 0o644)).To(Succeed())
		do(ctx, chromedp.Navigate("file://"+file), chromedp.WaitVisible(chromedp.CSS("table")))
		// Each check's row: its uptime and downs cells.
		rows := js[map[string][]string](ctx, `(() => {
			const rows = [...document.querySelectorAll("table tr")];
			const head = [...rows[0].cells].map(c => c.innerText.trim());
			return Object.fromEntries(rows.slice(1).map(r => [r.cells[0].firstChild.textContent.trim(),
				[r.cells[head.indexOf("Uptime")].innerText.trim(), r.cells[head.indexOf("Downs")].innerText.trim()]]));
		})()`)
		Expect(rows).To(HaveLen(2))
		Expect(rows[backup]).To(HaveLen(2))
		Expect(rows[backup][1]).To(HavePrefix("1 ("), "one down in the period")
		Expect(rows[export]).To(Equal([]string{want[export], "0"}), "up all the period: its down came after it")
		reportFigures := map[string]string{backup: rows[backup][0], export: rows[export][0]}
		screenshot(ctx, "uptime-report")

		By("one figure a check, the one worked out by hand")
		Expect(statusFigures).To(Equal(want), "the status page says %q", onStatusPage)
		Expect(checkFigures).To(Equal(want), "the check pages say %q", onCheckPage)
		Expect(reportFigures).To(Equal(want), "the report says %q", rows)
	})
})
