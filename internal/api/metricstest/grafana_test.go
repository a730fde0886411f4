package metricstest

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vigil-operator/vigil/internal/project"
)

// dashboardFile is the Grafana dashboard the repository ships.
const dashboardFile = "../../../config/grafana/vigil-dashboard.json"

// knownSeries are the series a scrape shows, each with its label names:
// those of a project's endpoint (its text) and the manager's own (the
// registry it serves at /metrics).
func knownSeries(projectText string) map[string][]string {
	known := map[string][]string{}
	addLabels := func(name string, labels ...string) {
		for _, l := range labels {
			if !slices.Contains(known[name], l) {
				known[name] = append(known[name], l)
			}
		}
		if known[name] == nil {
			known[name] = []string{}
		}
	}
	line := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? `)
	label := regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="`)
	for _, l := range strings.Split(projectText, "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			var names []string
			for _, lm := range label.FindAllStringSubmatch(m[2], -1) {
				names = append(names, lm[1])
			}
			addLabels(m[1], names...)
		}
	}
	families, err := ctrlmetrics.Registry.Gather()
	Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var names []string
			for _, lp := range m.GetLabel() {
				names = append(names, lp.GetName())
			}
			addLabels(f.GetName(), names...)
			if f.GetType() == dto.MetricType_HISTOGRAM {
				addLabels(f.GetName()+"_bucket", append(names, "le")...)
				addLabels(f.GetName()+"_sum", names...)
				addLabels(f.GetName()+"_count", names...)
			}
		}
	}
	return known
}

var _ = Describe("The Grafana dashboard", func() {
	It("is a dashboard whose every query reads series, and groups by labels, that Vigil exports", func() {
		raw, err := os.ReadFile(dashboardFile)
		Expect(err).NotTo(HaveOccurred())
		var dash struct {
			Title      string
			UID        string
			Templating struct {
				List []struct{ Name, Query string }
			}
			Panels []struct {
				Title   string
				Type    string
				Targets []struct{ Expr string }
			}
		}
		Expect(json.Unmarshal(raw, &dash)).To(Succeed())
		Expect(dash.Title).NotTo(BeEmpty())
		Expect(dash.UID).NotTo(BeEmpty())

		// A project with checks that have run, failed and been timed, so
		// that every series has samples.
		p := harness.NewProject("grafana-")
		status, resp := apiCall("POST", "/api/v3/checks/", p.ReadWrite, `{"name": "nightly", "tags": "etl", "timeout": 3600}`)
		Expect(status).To(Equal(201), "%v", resp)
		uuid := resp["uuid"].(string)
		for _, kind := range []string{"/fail", "/start", ""} {
			Expect(request("GET", "/ping/"+uuid+kind).status).To(Equal(200))
			clk.Step(time.Second) // the run takes a second
		}
		text := request("GET", "/projects/"+project.UUID(p.Namespace)+"/metrics/"+p.ReadOnly).body

		metric := regexp.MustCompile(`\b((?:hc|vigil)_[a-z_]+)\b`)
		by := regexp.MustCompile(`\bby \(([^)]*)\)`)
		queries := 0
		check := func(where, expr string) {
			GinkgoHelper()
			Eventually(func(g Gomega) {
				known := knownSeries(text)
				names := metric.FindAllString(expr, -1)
				g.Expect(names).NotTo(BeEmpty(), "%s: %s reads no Vigil series", where, expr)
				// Prometheus adds the target's labels when it scrapes.
				labels := []string{"job", "instance"}
				for _, n := range names {
					g.Expect(known[n]).NotTo(BeNil(), "%s: %s reads %s, which Vigil does not export", where, expr, n)
					labels = append(labels, known[n]...)
				}
				for _, m := range by.FindAllStringSubmatch(expr, -1) {
					for _, l := range strings.Split(m[1], ",") {
						g.Expect(labels).To(ContainElement(strings.TrimSpace(l)), "%s: %s groups by a label its series lack", where, expr)
					}
				}
			}).Should(Succeed())
			queries++
		}
		for _, panel := range dash.Panels {
			for _, t := range panel.Targets {
				check("panel "+panel.Title, t.Expr)
			}
		}
		for _, v := range dash.Templating.List {
			if strings.HasPrefix(v.Query, "label_values(") {
				check("variable "+v.Name, v.Query)
			}
		}
		Expect(queries).To(BeNumerically(">=", 10))
	})
})
