package reporttest

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/report"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/testenv/mailtest"
)

// stepTo moves the manager's clock to at.
func stepTo(at time.Time) {
	GinkgoHelper()
	Expect(at.After(clk.Now())).To(BeTrue(), "the clock only moves forward")
	clk.Step(at.Sub(clk.Now()))
}

var _ = Describe("Weekly reports to an email Channel", func() {
	It("are sent once per week, across a restart, and again after a refused attempt", func() {
		p := harness.NewProject("report-")
		harness.AllowEgressNow(p.Namespace, egress.Loopback.String())
		mails := mailtest.Start()

		// The week must end after the check below has missed its deadline
		// (7.5 min from now). In Sunday's last minutes, wait for the real
		// week to end (the Channel's creation time, which decides its
		// first report, is the API server's, not the fake clock's), then
		// bring the fake clock to the real time.
		if next, _ := report.Last(v1.ReportWeekly, clk.Now().AddDate(0, 0, 7)); next.To.Sub(clk.Now()) < 10*time.Minute {
			time.Sleep(time.Until(next.To) + time.Second)
			stepTo(time.Now())
		}

		// A check that runs every minute: a run of 90 s (within its grace,
		// which also bounds a started run), a failure (down), a success
		// (up), then silence, so it goes down for lack of a ping.
		r := harness.Call("POST", "/api/v3/checks/", p.ReadWrite, `{"name": "nightly backup", "timeout": 60, "grace": 120}`)
		Expect(r.Status).To(Equal(201), r.String())
		created := r.JSON()
		_, ping, found := strings.Cut(created["ping_url"].(string), "/ping/")
		Expect(found).To(BeTrue())
		ping = "/ping/" + ping
		for _, kind := range []string{"/start", "", "/fail", ""} {
			Expect(harness.Call("GET", ping+kind, "", "").Status).To(Equal(200))
			clk.Step(90 * time.Second) // the timed run took 90 s
		}

		ch := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: "weekly"}, Spec: v1.ChannelSpec{
			Kind: v1.ChannelEmail, Email: &v1.EmailChannel{To: []string{"ops@example.com"}, From: "vigil@example.com",
				Host: "127.0.0.1", Port: mails.Port, Security: v1.SMTPNone, Reports: v1.ReportWeekly}}}
		Expect(harness.Client.Create(ctx, ch)).To(Succeed())
		// Another project's Channel names the same loopback server, which
		// the egress guard refuses it: no administrator allowed it there.
		walled := harness.NewProject("report-walled-")
		refused := ch.DeepCopy()
		refused.ObjectMeta = metav1.ObjectMeta{Namespace: walled.Namespace, Name: "weekly"}
		Expect(harness.Client.Create(ctx, refused)).To(Succeed())
		// The Channels are in the manager's cache before their first week ends.
		for _, c := range []*v1.Channel{ch, refused} {
			Eventually(func() error {
				return harness.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(c), &v1.Channel{})
			}).Should(Succeed())
		}
		// Nothing for the week before the Channel existed.
		Consistently(mails.Received, "1s").Should(BeEmpty())

		// The week ends (Monday 00:00 UTC), with the check down for lack
		// of a ping; its report is sent once the deadlines are in.
		first, _ := report.Last(v1.ReportWeekly, clk.Now().AddDate(0, 0, 7))
		stepTo(first.To.Add(30 * time.Second))
		Eventually(func() any {
			return harness.Call("GET", "/api/v3/checks/"+created["uuid"].(string), p.ReadWrite, "").JSON()["status"]
		}).Should(Equal("down"))
		Consistently(mails.Received, "1s").Should(BeEmpty())
		stepTo(first.To.Add(report.Settle))
		Eventually(mails.Received).Should(HaveLen(1))
		e := mailtest.Parse(mails.Received()[0])
		Expect(e.Subject).To(Equal("Vigil report for " + p.Namespace + ": " + first.Name()))
		Expect(e.Text).To(ContainSubstring("nightly backup"))
		Expect(e.Text).To(ContainSubstring("runs 3, failed 1, missed 1, success 50%"))
		Expect(e.Text).To(ContainSubstring("duration p95 1 minute 30 seconds, slowest 1 minute 30 seconds"))
		Expect(e.Text).To(MatchRegexp(`uptime \d+(\.\d\d?)?%, downs 2 \(`))
		Expect(e.Text).To(ContainSubstring("1 minute 30 seconds  nightly backup, ended "))
		Expect(e.Text).To(ContainSubstring(harness.BaseURL + "/"))
		Expect(e.HTML).To(ContainSubstring("<td>nightly backup"))
		Expect(e.HTML).To(ContainSubstring(`<a href="` + harness.BaseURL + `/">`))
		// The walled project's report was tried, refused by the guard (not
		// by the server, which saw one message), and waits to be tried again.
		Eventually(func() (bool, error) {
			return harness.Manager.Store.ReportOwed(ctx, store.ReportKey{Namespace: walled.Namespace, Channel: "weekly", Period: first.ID}, clk.Now())
		}).Should(BeFalse())
		Expect(mails.Received()).To(HaveLen(1))

		// Later looks, and a restart, send it no more.
		clk.Step(5 * time.Minute)
		Consistently(mails.Received, "1s").Should(HaveLen(1))
		harness.Restart()
		clk.Step(5 * time.Minute)
		Consistently(mails.Received, "2s").Should(HaveLen(1))

		// The next week's report is refused once, tried again after its
		// backoff, and sent once.
		mails.Refuse(1)
		stepTo(first.To.AddDate(0, 0, 7).Add(report.Settle))
		Eventually(mails.Refused).Should(Equal(1))
		Consistently(mails.Received, "1s").Should(HaveLen(1))
		clk.Step(5 * time.Minute)
		Eventually(mails.Received).Should(HaveLen(2))
		second, _ := report.Last(v1.ReportWeekly, clk.Now())
		Expect(second.From).To(Equal(first.To))
		Expect(mailtest.Parse(mails.Received()[1]).Subject).To(HaveSuffix(second.Name()))
		clk.Step(10 * time.Minute)
		Consistently(mails.Received, "1s").Should(HaveLen(2))
	})
})
