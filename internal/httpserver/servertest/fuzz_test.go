package servertest

import (
	"net/http"
	"strings"
	"testing"
)

// FuzzHandlers sends any method, path, headers and body to the whole
// server (the Management API, pings and badges of a running manager): every
// request gets an answer (a handler's panic would cut the connection
// instead), and no answer is a 5xx but 503 with Retry-After. In a path,
// header or body, {uuid}, {slug}, {rw}, {ro} and {pk} stand for the suite
// check's UUID and slug and the project's keys, so that mutations reach
// past authentication and lookup.
func FuzzHandlers(f *testing.F) {
	seeds := []struct {
		method, path, header, body string
	}{
		{"GET", "/ping/{uuid}", "", ""},
		{"POST", "/ping/{uuid}/fail", "Content-Type: text/plain", "exit 1\nerror"},
		{"HEAD", "/ping/{uuid}/start?rid=6f1e6b5e-6b87-4b8e-8d3a-3f3f3f3f3f3f", "", ""},
		{"PUT", "/ping/{uuid}/256", "", ""},
		{"POST", "/ping/{pk}/{slug}/log", "User-Agent: cron", "line"},
		{"GET", "/ping/{pk}/new-slug?create=1", "", ""},
		{"GET", "/ping/{pk}/{slug}/0", "X-Forwarded-For: 10.0.0.1, ::1", ""},
		{"GET", "/api/v3/checks/", "X-Api-Key: {ro}", ""},
		{"GET", "/api/v3/checks/?tag=a&slug=nightly", "X-Api-Key: {rw}", ""},
		{"POST", "/api/v3/checks/", "X-Api-Key: {rw}", `{"name": "n", "schedule": "*/5 * * * *", "tz": "Europe/Riga", "unique": ["name"]}`},
		{"POST", "/api/v3/checks/", "", `{"api_key": "{rw}", "timeout": 60, "grace": 60, "channels": "*"}`},
		{"POST", "/api/v3/checks/{uuid}", "X-Api-Key: {rw}", `{"desc": "x", "tags": "a b", "methods": "POST", "filter_body": true, "success_kw": "ok"}`},
		{"POST", "/api/v3/checks/{uuid}/pause", "", `{"api_key": "{rw}"}`},
		{"POST", "/api/v3/checks/{uuid}/resume", "X-Api-Key: {rw}", ""},
		{"POST", "/api/v3/checks/{uuid}/pause", "", "123"},
		{"GET", "/api/v3/checks/{uuid}/pings/", "X-Api-Key: {rw}", ""},
		{"GET", "/api/v3/checks/{uuid}/pings/1/body", "X-Api-Key: {rw}", ""},
		{"GET", "/api/v3/checks/{uuid}/flips/?seconds=3600&start=0", "X-Api-Key: {ro}", ""},
		{"DELETE", "/api/v3/checks/{uuid}", "X-Api-Key: {ro}", ""},
		{"GET", "/api/v1/channels/", "X-Api-Key: {rw}", ""},
		{"GET", "/api/v3/badges/", "X-Api-Key: {ro}", ""},
		{"OPTIONS", "/api/v3/checks/", "Origin: https://example.com", ""},
		{"PATCH", "/api/v2/checks/{uuid}", "X-Api-Key: {rw}", "{oops"},
		{"GET", "/api/v3/status/", "", ""},
		{"GET", "/badge/{pk}/abcdefgh/nightly.svg", "", ""},
		{"GET", "/b/2/abcdefgh.json", "", ""},
		{"BREW", "/", "X-Api-Key: " + strings.Repeat("k", 100), "\x00\xff"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.header, []byte(s.body))
	}
	f.Fuzz(func(t *testing.T, method, path, header string, body []byte) {
		s := suite(t)
		fill := strings.NewReplacer("{uuid}", s.uuid, "{slug}", s.slug, "{rw}", s.rw, "{ro}", s.ro, "{pk}", s.pingKey)
		if method == "" {
			method = http.MethodGet
		}
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		r, err := send(s.addr, fill.Replace(method), fill.Replace(path), fill.Replace(header),
			[]byte(fill.Replace(string(body))))
		if err != nil {
			t.Fatalf("%s %q: no answer: %v", method, path, err)
		}
		t.Logf("%s %s: %s", method, path, r.Status)
		if r.StatusCode >= 500 && (r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "") {
			t.Fatalf("%s %q: %s %s", method, path, r.Status, r.body)
		}
	})
}
