package metricstest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"

	vigilchecks "github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

// tricky is a check name with everything a label value must escape.
const tricky = `Say "hi" \ there` + "\nsecond line"

// check is one check of the project and what its series must say.
type check struct {
	name, slug, tags string
	create           string // the JSON fields besides name, slug and tags
	uuid             string
	up, started      int
	grace, paused    int
	// What its pings make of its runs.
	succeeded, failed int
	lastSuccess       time.Time
	lastDuration      string
}

var _ = Describe("The Prometheus endpoint", Ordered, func() {
	var (
		p, other managertest.Project
		code     string
		checks   []*check
	)

	BeforeAll(func() {
		p = harness.NewProject("metrics-")
		other = harness.NewProject("metrics-other-")
		code = project.UUID(p.Namespace)
		// Created one after the other, and named (by their slugs) in the
		// same order, so that they list in it: oldest first, and by name
		// within the same second.
		checks = []*check{
			{name: tricky, slug: "a-new", tags: "prod", create: `"timeout": 3600`, up: 1},
			{name: "Up", slug: "b-up", tags: "prod db", create: `"timeout": 3600`, up: 1},
			{name: "Grace", slug: "c-grace", tags: "db", create: `"timeout": 60, "grace": 60`, up: 1, grace: 1},
			{name: "Down", slug: "d-down", tags: "db batch", create: `"timeout": 3600`, up: 0},
			{name: "Paused", slug: "e-paused", create: `"timeout": 3600`, up: 1, paused: 1},
			{name: "Started", slug: "f-started", tags: "batch", create: `"timeout": 86400`, up: 1, started: 1},
		}
		for _, c := range checks {
			status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, fmt.Sprintf(
				`{"name": %q, "slug": %q, "tags": %q, %s}`, c.name, c.slug, c.tags, c.create))
			Expect(status).To(Equal(http.StatusCreated), "%v", resp)
			c.uuid = resp["uuid"].(string)
		}
		ping := func(c *check, kind string) {
			Eventually(func() int { return request("GET", "/ping/"+c.uuid+kind).status }).Should(Equal(http.StatusOK))
			switch kind {
			case "":
				c.succeeded++
				c.lastSuccess = clk.Now()
			case "/fail":
				c.failed++
			}
		}
		// A run of 2.5 s, timed from its start.
		ping(checks[1], "/start")
		clk.Step(2500 * time.Millisecond)
		checks[1].lastDuration = "2.5"
		ping(checks[1], "")
		ping(checks[2], "")
		ping(checks[3], "/fail")
		ping(checks[4], "")
		status, resp := apiCall("POST", "/api/v3/checks/"+checks[4].uuid+"/pause", p.ReadWrite, "")
		Expect(status).To(Equal(http.StatusOK), "%v", resp)
		ping(checks[5], "")
		ping(checks[5], "/start")
		// Past the grace check's timeout, within its grace; every other
		// check's timeout is an hour or more.
		clk.Step(90 * time.Second)
	})

	metricsPath := func(key string) string { return "/projects/" + code + "/metrics/" + key }

	It("shows every check's state, the tags and the totals, escaped, in the reference's exposition", func() {
		var b strings.Builder
		labels := func(c *check) string {
			return `{name="` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(c.name) + `", tags="` +
				c.tags + `", unique_key="` + vigilchecks.UniqueKey(c.uuid) + `"}`
		}
		gauge := func(name, help string, value func(*check) int) {
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
			for _, c := range checks {
				fmt.Fprintf(&b, "%s%s %d\n", name, labels(c), value(c))
			}
		}
		gauge("hc_check_up", "Whether the check is currently up (1 for yes, 0 for no).", func(c *check) int { return c.up })
		b.WriteString("\n")
		gauge("hc_check_started", "Whether the check is currently started (1 for yes, 0 for no).", func(c *check) int { return c.started })
		b.WriteString("\n")
		gauge("hc_check_grace", "Whether the check is currently in the grace period (1 for yes, 0 for no).", func(c *check) int { return c.grace })
		b.WriteString("\n")
		gauge("hc_check_paused", "Whether the check is currently paused (1 for yes, 0 for no).", func(c *check) int { return c.paused })
		b.WriteString(`
# HELP hc_tag_up Whether all checks with this tag are up (1 for yes, 0 for no).
# TYPE hc_tag_up gauge
hc_tag_up{tag="batch"} 0
hc_tag_up{tag="db"} 0
hc_tag_up{tag="prod"} 1

# HELP hc_checks_total The total number of checks.
# TYPE hc_checks_total gauge
hc_checks_total 6

# HELP hc_checks_down_total The number of checks currently down.
# TYPE hc_checks_down_total gauge
hc_checks_down_total 1
`)
		b.WriteString("\n# HELP vigil_check_last_duration_seconds How long the check's last run took, from its start signal to its end (Vigil).\n" +
			"# TYPE vigil_check_last_duration_seconds gauge\n")
		for _, c := range checks {
			if c.lastDuration != "" {
				fmt.Fprintf(&b, "vigil_check_last_duration_seconds%s %s\n", labels(c), c.lastDuration)
			}
		}
		b.WriteString("\n# HELP vigil_check_last_success_timestamp_seconds When the check's last successful run ended, in Unix seconds (Vigil).\n" +
			"# TYPE vigil_check_last_success_timestamp_seconds gauge\n")
		for _, c := range checks {
			if !c.lastSuccess.IsZero() {
				fmt.Fprintf(&b, "vigil_check_last_success_timestamp_seconds%s %s\n", labels(c),
					strconv.FormatFloat(float64(c.lastSuccess.UnixMicro())/1e6, 'f', -1, 64))
			}
		}
		b.WriteString("\n# HELP vigil_check_runs_total The check's runs by how they ended: success, fail, or missed (its deadline passed without a ping) (Vigil).\n" +
			"# TYPE vigil_check_runs_total counter\n")
		for _, c := range checks {
			l := strings.TrimSuffix(labels(c), "}")
			fmt.Fprintf(&b, "vigil_check_runs_total%s, outcome=\"success\"} %d\n", l, c.succeeded)
			fmt.Fprintf(&b, "vigil_check_runs_total%s, outcome=\"fail\"} %d\n", l, c.failed)
			fmt.Fprintf(&b, "vigil_check_runs_total%s, outcome=\"missed\"} 0\n", l)
		}
		Expect(b.String()).To(ContainSubstring(`name="Say \"hi\" \\ there\nsecond line"`))

		r := request("GET", metricsPath(p.ReadOnly))
		Expect(r.status).To(Equal(http.StatusOK), r.body)
		Expect(r.header.Get("Content-Type")).To(Equal("text/plain"))
		Expect(r.body).To(Equal(b.String()))

		By("the bearer form and the older /checks/metrics/ path answer the same")
		r2 := request("GET", metricsPath(""), "Authorization", "Bearer "+p.ReadOnly)
		Expect(r2.status).To(Equal(http.StatusOK), r2.body)
		Expect(r2.body).To(Equal(b.String()))
		r3 := request("GET", "/projects/"+code+"/checks/metrics/"+p.ReadOnly)
		Expect(r3.status).To(Equal(http.StatusOK), r3.body)
		Expect(r3.body).To(Equal(b.String()))
	})

	It("answers a project without checks with the headers and zero totals", func() {
		empty := harness.NewProject("metrics-empty-")
		r := request("GET", "/projects/"+project.UUID(empty.Namespace)+"/metrics/"+empty.ReadOnly)
		Expect(r.status).To(Equal(http.StatusOK), r.body)
		Expect(r.body).To(HavePrefix("# HELP hc_check_up "))
		Expect(r.body).To(ContainSubstring("\nhc_checks_total 0\n\n" +
			"# HELP hc_checks_down_total The number of checks currently down.\n# TYPE hc_checks_down_total gauge\nhc_checks_down_total 0\n\n"))
		Expect(r.body).To(HaveSuffix("\n# TYPE vigil_check_runs_total counter\n"))
		Expect(r.body).NotTo(ContainSubstring("{"))
	})

	DescribeTable("refuses what the reference refuses",
		func(path func() string, header func() string, want int) {
			var r response
			if h := header(); h != "" {
				r = request("GET", path(), "Authorization", h)
			} else {
				r = request("GET", path())
			}
			Expect(r.status).To(Equal(want), r.body)
			if r.status != http.StatusNotFound {
				Expect(r.body).To(MatchRegexp(`^\{"error":".+"\}$`))
			}
		},
		Entry("a read-write key: 403", func() string { return metricsPath(p.ReadWrite) }, none, http.StatusForbidden),
		Entry("an unknown key: 403", func() string { return metricsPath("hcr_" + strings.Repeat("x", 28)) }, none, http.StatusForbidden),
		Entry("another project's read-only key: 403", func() string { return metricsPath(other.ReadOnly) }, none, http.StatusForbidden),
		Entry("the key with another project's UUID: 403",
			func() string { return "/projects/" + project.UUID(other.Namespace) + "/metrics/" + p.ReadOnly }, none, http.StatusForbidden),
		Entry("a key of the wrong length: 400", func() string { return metricsPath(p.ReadOnly + "x") }, none, http.StatusBadRequest),
		Entry("a short key: 400", func() string { return metricsPath("short") }, none, http.StatusBadRequest),
		Entry("no Authorization header: 401", func() string { return metricsPath("") }, none, http.StatusUnauthorized),
		Entry("not a bearer token: 401", func() string { return metricsPath("") },
			func() string { return "Token " + p.ReadOnly }, http.StatusUnauthorized),
		Entry("a read-write bearer key: 403", func() string { return metricsPath("") },
			func() string { return "Bearer " + p.ReadWrite }, http.StatusForbidden),
		Entry("a bearer key of the wrong length: 400", func() string { return metricsPath("") },
			func() string { return "Bearer x" }, http.StatusBadRequest),
		Entry("an uppercase UUID: 404", func() string { return "/projects/" + strings.ToUpper(code) + "/metrics/" + p.ReadOnly },
			none, http.StatusNotFound),
		Entry("a trailing slash after the key: 404", func() string { return metricsPath(p.ReadOnly) + "/" }, none, http.StatusNotFound),
	)

	It("is read with GET (and HEAD) only", func() {
		r := request("POST", metricsPath(p.ReadOnly))
		Expect(r.status).To(Equal(http.StatusMethodNotAllowed), r.body)
		Expect(r.header.Get("Allow")).To(Equal("GET, HEAD"))
		Expect(request("HEAD", metricsPath(p.ReadOnly)).status).To(Equal(http.StatusOK))
	})

	It("is scraped by a real Prometheus, with the key in the path and as a bearer token", func(ctx SpecContext) {
		target := strings.TrimPrefix(harness.BaseURL, "http://")
		prom, err := testenv.StartPrometheus(ctx,
			testenv.ScrapeJob{Name: "in-path", Target: target, MetricsPath: metricsPath(p.ReadOnly)},
			testenv.ScrapeJob{Name: "bearer", Target: target, MetricsPath: metricsPath(""), BearerToken: p.ReadOnly},
		)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(prom.Stop)

		query := func(q string) func() ([]testenv.Sample, error) {
			return func() ([]testenv.Sample, error) { return prom.Query(context.Background(), q) }
		}
		targets := func() string { t, _ := prom.Targets(context.Background()); return fmt.Sprint(t) }
		for _, job := range []string{"in-path", "bearer"} {
			var want []any
			for _, c := range checks {
				labels := Keys{"__name__": Equal("hc_check_up"), "job": Equal(job), "instance": Equal(target),
					"name": Equal(c.name), "unique_key": Equal(vigilchecks.UniqueKey(c.uuid))}
				// Prometheus drops labels whose value is empty.
				if c.tags != "" {
					labels["tags"] = Equal(c.tags)
				}
				want = append(want, MatchAllFields(Fields{"Labels": MatchAllKeys(labels), "Value": Equal(fmt.Sprint(c.up))}))
			}
			Eventually(query(`hc_check_up{job="`+job+`"}`)).WithTimeout(30*time.Second).
				Should(ConsistOf(want...), targets)
			Expect(query(`hc_checks_down_total{job="` + job + `"}`)()).To(ConsistOf(
				MatchFields(IgnoreExtras, Fields{"Value": Equal("1")})))
			Expect(query(`hc_tag_up{job="` + job + `"} == 0`)()).To(ConsistOf(
				MatchFields(IgnoreExtras, Fields{"Labels": HaveKeyWithValue("tag", "batch")}),
				MatchFields(IgnoreExtras, Fields{"Labels": HaveKeyWithValue("tag", "db")})))
			Expect(query(`hc_check_grace{job="` + job + `"} == 1`)()).To(ConsistOf(
				MatchFields(IgnoreExtras, Fields{"Labels": HaveKeyWithValue("name", "Grace")})))
			By("Vigil's series, beside the reference's")
			Expect(query(`vigil_check_runs_total{job="` + job + `", outcome="fail"} == 1`)()).To(ConsistOf(
				MatchFields(IgnoreExtras, Fields{"Labels": HaveKeyWithValue("name", "Down")})))
			Expect(query(`vigil_check_last_duration_seconds{job="` + job + `"}`)()).To(ConsistOf(
				MatchFields(IgnoreExtras, Fields{"Labels": HaveKeyWithValue("name", "Up"), "Value": Equal("2.5")})))
			Expect(query(`count(vigil_check_last_success_timestamp_seconds{job="` + job + `"})`)()).To(ConsistOf(
				MatchFields(IgnoreExtras, Fields{"Value": Equal("4")})))
		}
	}, SpecTimeout(time.Minute))

	// Last: the clock does not go back.
	It("shows the grace check down once its deadline has passed, computed at read time", func() {
		clk.Step(31 * time.Second)
		r := request("GET", metricsPath(p.ReadOnly))
		Expect(r.status).To(Equal(http.StatusOK), r.body)
		spec := `{name="Grace", tags="db", unique_key="` + vigilchecks.UniqueKey(checks[2].uuid) + `"}`
		Expect(r.body).To(ContainSubstring("hc_check_up" + spec + " 0\n"))
		Expect(r.body).To(ContainSubstring("hc_check_grace" + spec + " 0\n"))
		Expect(r.body).To(ContainSubstring("hc_checks_down_total 2\n"))
	})
})

// none is no Authorization header.
func none() string { return "" }
