package report

import (
	"bytes"
	"cmp"
	"fmt"
	htmltemplate "html/template"
	"slices"
	"text/template"
	"time"

	"github.com/vigil-operator/vigil/internal/notify"
	"github.com/vigil-operator/vigil/internal/runstats"
	"github.com/vigil-operator/vigil/internal/uptime"
	"github.com/vigil-operator/vigil/internal/words"
)

// MaxRows bounds the checks a report lists, the least available first:
// an email of 10,000 rows helps nobody.
const MaxRows = 200

// slowestRuns is how many of the project's slowest runs a report names.
const slowestRuns = 5

// Check is one check's figures over the period.
type Check struct {
	Name string
	// Uptime is the share of its up and down time in the period that was
	// up (package uptime's rule), in [0, 1]; valid when HasUptime.
	Uptime    float64
	HasUptime bool
	// Downs is how many times it went down in the period, DownFor for how
	// long (a down a maintenance window held counts from the window's end).
	Downs   int
	DownFor time.Duration
	Runs    runstats.Stats
}

// Project is what a report is written from.
type Project struct {
	Namespace string
	Period    Period
	Checks    []Check
	// URL is the dashboard's address, for the link; empty: no link.
	URL string
}

// Uptime is a check's figures over [from, to) by the uptime rule (package
// uptime): ok is false when the check did not exist then.
func Uptime(c uptime.Check, from, to time.Time) (row Check, ok bool) {
	if !to.After(c.Created) {
		return Check{}, false
	}
	fig := uptime.Of(c, to).Measure(from, to)
	row.Downs, row.DownFor = fig.Downs, fig.Down
	row.Uptime, row.HasUptime = fig.Uptime()
	return row, true
}

// Write is the report as an email: its subject, text and HTML.
func Write(p Project) (notify.Report, error) {
	v := view{Project: p.Namespace, Period: p.Period.Name(), URL: p.URL, Total: len(p.Checks)}
	checks := slices.Clone(p.Checks)
	// The least available first, then the most failing, then by name.
	slices.SortFunc(checks, func(a, b Check) int {
		return cmp.Or(cmp.Compare(uptimeKey(a), uptimeKey(b)), cmp.Compare(b.Runs.Failed+b.Runs.Missed, a.Runs.Failed+a.Runs.Missed),
			cmp.Compare(a.Name, b.Name))
	})
	var slow []slowRun
	for _, c := range checks {
		if c.Downs > 0 {
			v.WentDown++
		}
		v.Runs += c.Runs.Runs
		v.Failed += c.Runs.Failed
		v.Missed += c.Runs.Missed
		for _, r := range c.Runs.InWindow {
			if r.HasDuration {
				slow = append(slow, slowRun{Check: c.Name, Took: words.Duration(r.Duration), At: r.Ended.UTC().Format("Mon 2 Jan 15:04 UTC"), d: r.Duration})
			}
		}
	}
	slices.SortStableFunc(slow, func(a, b slowRun) int { return cmp.Compare(b.d, a.d) })
	v.Slowest = slow[:min(len(slow), slowestRuns)]
	for _, c := range checks[:min(len(checks), MaxRows)] {
		v.Rows = append(v.Rows, rowOf(c))
	}
	if more := len(checks) - len(v.Rows); more > 0 {
		v.More = words.Plural(int64(more), "more check")
	}

	subject := fmt.Sprintf("Vigil report for %s: %s", v.Project, v.Period)
	var text, html bytes.Buffer
	if err := textReport.Execute(&text, v); err != nil {
		return notify.Report{}, fmt.Errorf("writing the report's text: %w", err)
	}
	if err := htmlReport.Execute(&html, v); err != nil {
		return notify.Report{}, fmt.Errorf("writing the report's HTML: %w", err)
	}
	return notify.Report{Subject: subject, Text: text.String(), HTML: html.String()}, nil
}

// uptimeKey orders checks without uptime (not there in the period) last.
func uptimeKey(c Check) float64 {
	if !c.HasUptime {
		return 2
	}
	return c.Uptime
}

type view struct {
	Project, Period, URL string
	Total, WentDown      int
	Runs, Failed, Missed int
	Rows                 []row
	More                 string // "50 more checks" past MaxRows; empty: none
	Slowest              []slowRun
}

type row struct {
	Name, Uptime, Downs, Runs, Failed, Missed, Rate, P95, Max, Trend string
	Bad                                                              bool
}

type slowRun struct {
	Check, Took, At string
	d               time.Duration
}

func rowOf(c Check) row {
	r := row{Name: c.Name, Uptime: "no data", Downs: "0", Runs: fmt.Sprint(c.Runs.Runs), Failed: fmt.Sprint(c.Runs.Failed),
		Missed: fmt.Sprint(c.Runs.Missed), Rate: "-", P95: "-", Max: "-", Trend: c.Runs.TrendWords()}
	if c.HasUptime {
		r.Uptime = words.Percent(c.Uptime)
		r.Bad = c.Uptime < 1
	}
	if c.Downs > 0 {
		r.Downs = fmt.Sprintf("%d (%s)", c.Downs, words.Duration(c.DownFor))
	}
	if c.Runs.HasRate {
		r.Rate = words.Percent(c.Runs.SuccessRate)
		r.Bad = r.Bad || c.Runs.SuccessRate < 1
	}
	if c.Runs.Timed > 0 {
		r.P95, r.Max = words.Duration(c.Runs.P95), words.Duration(c.Runs.Max)
	}
	if c.Runs.Partial {
		r.Trend = "figures since " + c.Runs.HeldSince.UTC().Format("2 Jan 15:04") + " (older runs let go)"
	}
	return r
}

var textReport = template.Must(template.New("text").Parse(`Vigil report for {{.Project}}: {{.Period}}

{{.Total}} checks; {{.WentDown}} went down. {{.Runs}} runs, {{.Failed}} failed, {{.Missed}} missed.
{{range .Rows}}
{{.Name}}
  uptime {{.Uptime}}, downs {{.Downs}}
  runs {{.Runs}}, failed {{.Failed}}, missed {{.Missed}}, success {{.Rate}}
  duration p95 {{.P95}}, slowest {{.Max}}{{if .Trend}}
  {{.Trend}}{{end}}
{{end}}{{if .More}}
and {{.More}} (the least available are listed first).
{{end}}{{if .Slowest}}
Slowest runs:
{{range .Slowest}}  {{.Took}}  {{.Check}}, ended {{.At}}
{{end}}{{end}}{{if .URL}}
{{.URL}}
{{end}}`))

var htmlReport = htmltemplate.Must(htmltemplate.New("html").Parse(`<!DOCTYPE html>
<html><body style="font-family: sans-serif; color: #222">
<h2 style="margin-bottom: 4px">Vigil report for {{.Project}}</h2>
<p style="margin-top: 0; color: #555">{{.Period}}</p>
<p>{{.Total}} checks; {{.WentDown}} went down. {{.Runs}} runs, {{.Failed}} failed, {{.Missed}} missed.</p>
<table cellpadding="6" style="border-collapse: collapse; font-size: 14px">
<tr style="text-align: left; border-bottom: 1px solid #ccc"><th>Check</th><th>Uptime</th><th>Downs</th><th>Runs</th><th>Failed</th><th>Missed</th><th>Success</th><th>p95</th><th>Slowest</th></tr>
{{range .Rows}}<tr style="border-bottom: 1px solid #eee{{if .Bad}}; background: #fff4f4{{end}}"><td>{{.Name}}{{if .Trend}}<br><small style="color: #555">{{.Trend}}</small>{{end}}</td><td>{{.Uptime}}</td><td>{{.Downs}}</td><td>{{.Runs}}</td><td>{{.Failed}}</td><td>{{.Missed}}</td><td>{{.Rate}}</td><td>{{.P95}}</td><td>{{.Max}}</td></tr>
{{end}}</table>
{{if .More}}<p>and {{.More}} (the least available are listed first).</p>{{end}}
{{if .Slowest}}<h3>Slowest runs</h3><ul>{{range .Slowest}}<li>{{.Took}}: {{.Check}}, ended {{.At}}</li>{{end}}</ul>{{end}}
{{if .URL}}<p><a href="{{.URL}}">Open the dashboard</a></p>{{end}}
</body></html>
`))
