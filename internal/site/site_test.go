package site

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-logr/logr"

	"github.com/vigil-operator/vigil/internal/api"
)

// TestNosniffEverywhere: every answer of the site, the API's JSON (with
// <, > and & unescaped), badges, metrics, pings and errors alike, tells
// browsers not to guess its type: none may be read as HTML.
func TestNosniffEverywhere(t *testing.T) {
	ping := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("OK <b>"))
	})
	api := &api.Server{}
	h := Handler(logr.Discard(), Parts{API: http.HandlerFunc(api.ServeAPI), Badges: http.HandlerFunc(api.ServeBadge),
		Metrics: http.HandlerFunc(api.ServeMetrics), Pings: ping})
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/api/v3/status/"},
		{http.MethodGet, "/api/v3/checks/"},          // no key: 401
		{http.MethodOptions, "/api/v3/checks/"},      // CORS preflight
		{http.MethodDelete, "/api/v3/channels/"},     // 405
		{http.MethodGet, "/api/v3/nothing/"},         // 404
		{http.MethodPost, "/badge/x/y.svg"},          // 405
		{http.MethodGet, "/projects/x/metrics/"},     // 404 or 401
		{http.MethodGet, "/ping/5f5e2a43-52b3-4c1e"}, // the ping handler's own answer
		{http.MethodGet, "/<script>"},                // 404
	} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequestWithContext(t.Context(), tc.method, tc.path, nil))
		if got := w.Header().Get("X-Content-Type-Options"); got != "nosniff" {
			t.Errorf("%s %s (%d): X-Content-Type-Options %q, want nosniff", tc.method, tc.path, w.Code, got)
		}
	}
}
