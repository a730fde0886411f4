package api

import (
	"bufio"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/store"
)

// metricsContentType is the reference's: Prometheus reads plain text as its
// text exposition format.
const metricsContentType = "text/plain"

// slugRE is the reference's slug path converter, which the key in a
// metrics URL must match.
var slugRE = regexp.MustCompile(`^[-a-zA-Z0-9_]+$`)

// metricsPath splits the reference's Prometheus paths:
// /projects/<uuid>/metrics/<key>, its older form
// /projects/<uuid>/checks/metrics/<key>, and /projects/<uuid>/metrics/,
// whose key comes as a bearer token (key "").
func metricsPath(path string) (code, key string, ok bool) {
	rest, ok := strings.CutPrefix(path, "/projects/")
	if !ok {
		return "", "", false
	}
	code, rest, ok = strings.Cut(rest, "/")
	if !ok || !uuidRE.MatchString(code) {
		return "", "", false
	}
	if rest == "metrics/" {
		return code, "", true
	}
	key, ok = strings.CutPrefix(rest, "metrics/")
	if !ok {
		key, ok = strings.CutPrefix(rest, "checks/metrics/")
	}
	if !ok || !slugRE.MatchString(key) {
		return "", "", false
	}
	return code, key, true
}

// ServeMetrics serves a project's checks in Prometheus's text format, at
// the reference's URLs, so the scrape configs and Grafana dashboards made
// for Healthchecks work unchanged. Only the project's read-only key opens
// it (a read-write key is refused, as in the reference, so that a scrape
// config never holds a key that can write), and only for its own project
// UUID (project.UUID). Statuses are computed at read time, as the API's.
func (s *Server) ServeMetrics(w http.ResponseWriter, r *http.Request) {
	code, key, ok := metricsPath(r.URL.Path)
	if !ok {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "metrics are read with GET")
		return
	}
	if key == "" {
		var bearer bool
		if key, bearer = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !bearer {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, http.StatusUnauthorized,
				"missing read-only api key: send it as Authorization: Bearer <key>, or at the end of the URL")
			return
		}
	}
	if len(key) != project.KeyLength {
		writeError(w, http.StatusBadRequest, "an api key is "+strconv.Itoa(project.KeyLength)+" characters")
		return
	}
	ns, access := s.Projects.Authenticate(key)
	if access != project.ReadOnly || project.UUID(ns) != code {
		writeError(w, http.StatusForbidden, "wrong api key: metrics need the read-only api key of this project")
		return
	}
	project, err := s.Checks.Project(r.Context(), ns)
	if err != nil {
		s.internalError(w, &request{Request: r}, "reading the ping store", err)
		return
	}

	now := s.Checks.Now()
	type series struct {
		labels  string // without the closing brace: the run counters add one
		status  monitor.Status
		started bool
		obs     store.Check
	}
	all := make([]series, len(project.Checks))
	tagDown := map[string]bool{}
	down := 0
	for i, c := range project.Checks { // oldest first
		obs := project.Observed(i)
		v := project.View(i, now)
		all[i] = series{
			labels: `{name="` + escapeLabel(c.Spec.Name) + `", tags="` + escapeLabel(c.Spec.Tags) +
				`", unique_key="` + checks.UniqueKey(checks.UUIDOf(c)) + `"`,
			status:  v.Status,
			started: v.Started,
			obs:     obs,
		}
		isDown := v.Status == monitor.StatusDown
		if isDown {
			down++
		}
		for _, t := range checks.Tags(c.Spec.Tags) {
			tagDown[t] = tagDown[t] || isDown
		}
	}
	tags := make([]string, 0, len(tagDown))
	for t := range tagDown {
		tags = append(tags, t)
	}
	sort.Strings(tags)

	w.Header().Set("Content-Type", metricsContentType)
	w.WriteHeader(http.StatusOK)
	// Written as it is made: 10,000 checks are about 2 MB of text, which
	// need not be held twice. The bufio.Writer keeps the first write error
	// (a client gone midway) and writes nothing after it; with the status
	// sent, nothing is left to do with it.
	out := bufio.NewWriterSize(w, 32<<10)
	put := func(parts ...string) {
		for _, p := range parts {
			_, _ = out.WriteString(p)
		}
	}
	gauge := func(name, help string, value func(series) bool) {
		put("# HELP ", name, " ", help, "\n# TYPE ", name, " gauge\n")
		for _, c := range all {
			put(name, c.labels, "} ", bit(value(c)), "\n")
		}
	}
	gauge("hc_check_up", "Whether the check is currently up (1 for yes, 0 for no).",
		func(c series) bool { return c.status != monitor.StatusDown })
	put("\n")
	gauge("hc_check_started", "Whether the check is currently started (1 for yes, 0 for no).",
		func(c series) bool { return c.started })
	put("\n")
	gauge("hc_check_grace", "Whether the check is currently in the grace period (1 for yes, 0 for no).",
		func(c series) bool { return c.status == monitor.StatusGrace })
	put("\n")
	gauge("hc_check_paused", "Whether the check is currently paused (1 for yes, 0 for no).",
		func(c series) bool { return c.status == monitor.StatusPaused })
	put("\n# HELP hc_tag_up Whether all checks with this tag are up (1 for yes, 0 for no).\n# TYPE hc_tag_up gauge\n")
	for _, t := range tags {
		put(`hc_tag_up{tag="`, escapeLabel(t), `"} `, bit(!tagDown[t]), "\n")
	}
	put("\n# HELP hc_checks_total The total number of checks.\n# TYPE hc_checks_total gauge\n",
		"hc_checks_total ", strconv.Itoa(len(all)), "\n")
	put("\n# HELP hc_checks_down_total The number of checks currently down.\n# TYPE hc_checks_down_total gauge\n",
		"hc_checks_down_total ", strconv.Itoa(down), "\n")

	// Vigil's additions: how the runs go, beside the reference's series.
	put("\n# HELP vigil_check_last_duration_seconds How long the check's last run took, from its start signal to its end (Vigil).",
		"\n# TYPE vigil_check_last_duration_seconds gauge\n")
	for _, c := range all {
		if d := c.obs.Facts.LastDuration; d > 0 {
			put("vigil_check_last_duration_seconds", c.labels, "} ", strconv.FormatFloat(d.Seconds(), 'f', -1, 64), "\n")
		}
	}
	put("\n# HELP vigil_check_last_success_timestamp_seconds When the check's last successful run ended, in Unix seconds (Vigil).",
		"\n# TYPE vigil_check_last_success_timestamp_seconds gauge\n")
	for _, c := range all {
		if at := c.obs.RunCounts.LastSuccess; !at.IsZero() {
			put("vigil_check_last_success_timestamp_seconds", c.labels, "} ",
				strconv.FormatFloat(float64(at.UnixMicro())/1e6, 'f', -1, 64), "\n")
		}
	}
	put("\n# HELP vigil_check_runs_total The check's runs by how they ended: success, fail, or missed (its deadline passed without a ping) (Vigil).",
		"\n# TYPE vigil_check_runs_total counter\n")
	for _, c := range all {
		n := c.obs.RunCounts
		put("vigil_check_runs_total", c.labels, `, outcome="success"} `, strconv.FormatInt(n.Succeeded, 10), "\n",
			"vigil_check_runs_total", c.labels, `, outcome="fail"} `, strconv.FormatInt(n.Failed, 10), "\n",
			"vigil_check_runs_total", c.labels, `, outcome="missed"} `, strconv.FormatInt(n.Missed, 10), "\n")
	}
	_ = out.Flush()
}

// escapeLabel escapes a label value as the text format requires: backslash,
// double quote and newline.
func escapeLabel(s string) string {
	return labelEscaper.Replace(s)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func bit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
