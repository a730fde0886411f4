package servertest

import (
	"bytes"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/onsi/gomega"

	"github.com/vigil-operator/vigil/internal/project"
)

// logCapture records what the manager logs, at every verbosity, while a
// test captures it.
type logCapture struct {
	on  atomic.Bool
	mu  sync.Mutex
	buf bytes.Buffer
}

var logs logCapture

// sink logs every level, down to V(2) (the pings' request lines), as JSON
// lines, while capturing, and costs nothing otherwise.
func (c *logCapture) sink() logr.LogSink {
	return gatedSink{LogSink: funcr.NewJSON(func(line string) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.buf.WriteString(line + "\n")
	}, funcr.Options{Verbosity: 2}).GetSink(), on: &c.on}
}

// gatedSink logs only while on.
type gatedSink struct {
	logr.LogSink
	on *atomic.Bool
}

func (g gatedSink) Enabled(level int) bool { return g.on.Load() && g.LogSink.Enabled(level) }

func (g gatedSink) Error(err error, msg string, kv ...any) {
	if g.on.Load() {
		g.LogSink.Error(err, msg, kv...)
	}
}

func (g gatedSink) WithValues(kv ...any) logr.LogSink {
	return gatedSink{g.LogSink.WithValues(kv...), g.on}
}

func (g gatedSink) WithName(name string) logr.LogSink {
	return gatedSink{g.LogSink.WithName(name), g.on}
}

// capture records the logs while f runs, until they hold the request lines
// of its requests, and returns them; it fails the test when they are fewer.
func (c *logCapture) capture(t *testing.T, f func(), requests int) string {
	t.Helper()
	c.mu.Lock()
	c.buf.Reset()
	c.mu.Unlock()
	c.on.Store(true)
	defer c.on.Store(false)
	f()
	// A request's line is written once its handler has returned, which
	// can be after its client has read the whole answer: wait for the
	// lines still to come.
	var logged string
	gomega.NewWithT(t).Eventually(func() int {
		c.mu.Lock()
		defer c.mu.Unlock()
		logged = c.buf.String()
		return strings.Count(logged, `"msg":"request"`)
	}).WithTimeout(5*time.Second).WithPolling(10*time.Millisecond).Should(gomega.BeNumerically(">=", requests),
		func() string { return fmt.Sprintf("request lines logged for %d requests:\n%s", requests, logged) })
	return logged
}

// teeSink sends each log line to two sinks.
type teeSink struct{ a, b logr.LogSink }

func (t teeSink) Init(info logr.RuntimeInfo) { t.a.Init(info); t.b.Init(info) }

func (t teeSink) Enabled(level int) bool { return t.a.Enabled(level) || t.b.Enabled(level) }

func (t teeSink) Info(level int, msg string, kv ...any) {
	for _, s := range []logr.LogSink{t.a, t.b} {
		if s.Enabled(level) {
			s.Info(level, msg, kv...)
		}
	}
}

func (t teeSink) Error(err error, msg string, kv ...any) {
	t.a.Error(err, msg, kv...)
	t.b.Error(err, msg, kv...)
}

func (t teeSink) WithValues(kv ...any) logr.LogSink {
	return teeSink{t.a.WithValues(kv...), t.b.WithValues(kv...)}
}

func (t teeSink) WithName(name string) logr.LogSink {
	return teeSink{t.a.WithName(name), t.b.WithName(name)}
}

// TestRequestLogsHoldNoCredentials: the request log lines, at their debug
// verbosity, name each request's route and none of the credentials its
// path holds: check UUIDs (ping URLs), ping keys, the read-only key of a
// metrics URL, badge keys and signatures.
func TestRequestLogsHoldNoCredentials(t *testing.T) {
	s := suite(t)
	check, err := send(s.addr, http.MethodGet, "/api/v3/checks/"+s.uuid, "X-Api-Key: "+s.rw, nil)
	if err != nil || check.StatusCode != http.StatusOK {
		t.Fatalf("reading the check: %v %v", err, check)
	}
	badges, err := send(s.addr, http.MethodGet, "/api/v3/badges/", "X-Api-Key: "+s.ro, nil)
	if err != nil || badges.StatusCode != http.StatusOK {
		t.Fatalf("reading the badges: %v %v", err, badges)
	}
	checkBadge := strings.TrimPrefix(jsonField(check.body, "badge_url"), "http://"+s.addr)
	projectBadge := regexp.MustCompile(`/badge/[^"]+\.svg`).FindString(string(badges.body))
	if checkBadge == "" || projectBadge == "" {
		t.Fatalf("no badge URLs in %s and %s", check.body, badges.body)
	}
	projectUUID := project.UUID(s.namespace)
	metrics := "/projects/" + projectUUID + "/metrics/" + s.ro
	paths := []string{
		"/ping/" + s.uuid, "/ping/" + s.uuid + "/fail", "/ping/" + s.uuid + "/0",
		"/ping/" + s.pingKey + "/" + s.slug, "/ping/" + s.pingKey + "/" + s.slug + "/start",
		"/ping/" + s.pingKey + "/no-such-slug",
		"/api/v3/checks/" + s.uuid, "/api/v3/checks/" + s.uuid + "/pings/", "/api/v3/checks/" + s.uuid + "/pings/1/body",
		"/api/v1/checks/" + s.uuid + "/flips/", metrics, checkBadge, projectBadge,
		"/checks/" + s.uuid, "/no/such/" + s.pingKey, "/api/v3/" + s.ro,
	}
	logged := logs.capture(t, func() {
		for _, p := range paths {
			if _, err := send(s.addr, http.MethodGet, p, "X-Api-Key: "+s.rw, nil); err != nil {
				t.Fatalf("GET %s: %v", p, err)
			}
		}
	}, len(paths))
	credentials := []string{s.uuid, s.pingKey, s.ro, s.rw, projectUUID}
	for _, badge := range []string{checkBadge, projectBadge} {
		// /b/2/<badge key>.svg, /badge/<badge key>/<signature>.svg
		parts := strings.Split(strings.TrimSuffix(badge, ".svg"), "/")
		credentials = append(credentials, parts[len(parts)-1])
		if parts[1] == "badge" {
			credentials = append(credentials, parts[2])
		}
	}
	for _, c := range credentials {
		if strings.Contains(logged, c) {
			t.Errorf("the logs hold %q:\n%s", c, logged)
		}
	}
	for _, route := range []string{`"route":"/ping/{uuid}/fail"`, `"route":"/ping/{ping-key}/{slug}/start"`,
		`"route":"/projects/{project}/metrics/{key}"`} {
		if !strings.Contains(logged, route) {
			t.Errorf("no request line names the route %s:\n%s", route, logged)
		}
	}
}
