package site

import (
	"strings"
	"testing"
)

func TestTemplateOf(t *testing.T) {
	const (
		uuid      = "5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a"
		uniqueKey = "0123456789abcdef0123456789abcdef01234567"
		pingKey   = "kzyl2-8tqp0q6ozm9jsvxq"
		roKey     = "hcr_0123456789abcdefghijklmnopqr"
		badgeKey  = "a1b2c3d4"
	)
	for _, tc := range []struct{ path, want string }{
		{"/api/v3/checks/", "/api/v3/checks/"},
		{"/api/v1/checks", "/api/v1/checks"},
		{"/api/v3/checks/" + uuid, "/api/v3/checks/{check}"},
		{"/api/v2/checks/" + uniqueKey + "/flips/", "/api/v2/checks/{check}/flips/"},
		{"/api/v3/checks/" + uuid + "/pause", "/api/v3/checks/{check}/pause"},
		{"/api/v3/checks/" + uuid + "/pings/", "/api/v3/checks/{check}/pings/"},
		{"/api/v3/checks/" + uuid + "/pings/12/body", "/api/v3/checks/{check}/pings/{n}/body"},
		{"/api/v3/channels/", "/api/v3/channels/"},
		{"/api/v3/badges/", "/api/v3/badges/"},
		{"/api/v3/status/", "/api/v3/status/"},
		{"/api/v9/checks/", "/api/{unknown}"},
		{"/api/v3/checks/" + uuid + "/" + pingKey, "/api/{unknown}"},
		{"/ping/" + uuid, "/ping/{uuid}"},
		{"/ping/" + uuid + "/", "/ping/{uuid}/"},
		{"/ping/" + uuid + "/start", "/ping/{uuid}/start"},
		{"/ping/" + uuid + "/fail", "/ping/{uuid}/fail"},
		{"/ping/" + uuid + "/log", "/ping/{uuid}/log"},
		{"/ping/" + uuid + "/3", "/ping/{uuid}/{exit-status}"},
		{"/ping/" + pingKey + "/nightly-backup", "/ping/{ping-key}/{slug}"},
		{"/ping/" + pingKey + "/nightly-backup/start", "/ping/{ping-key}/{slug}/start"},
		{"/ping/" + pingKey + "/nightly-backup/0", "/ping/{ping-key}/{slug}/{exit-status}"},
		{"/ping/" + uuid + "/nightly", "/ping/{ping-key}/{slug}"}, // the reference's routing quirk
		{"/ping/" + pingKey + "/a/b/c", "/ping/{unknown}"},
		{"/ping/", "/ping/{unknown}"},
		{"/projects/" + uuid + "/metrics/" + roKey, "/projects/{project}/metrics/{key}"},
		{"/projects/" + uuid + "/checks/metrics/" + roKey, "/projects/{project}/checks/metrics/{key}"},
		{"/projects/" + uuid + "/metrics/", "/projects/{project}/metrics/"},
		{"/badge/" + badgeKey + "/Xy9-kk_a/prod.svg", "/badge/{badge-key}/{signature}/{tag}.svg"},
		{"/badge/" + badgeKey + "/Xy9-kk_a-2.json", "/badge/{badge-key}/{signature}.json"},
		{"/badge/" + badgeKey + "/Xy9-kk_a.shields", "/badge/{badge-key}/{signature}.shields"},
		{"/badge/" + badgeKey + "/Xy9-kk_a.png", "{unknown}"},
		{"/b/2/" + badgeKey + ".svg", "/b/2/{badge-key}.svg"},
		{"/b/3/" + badgeKey + ".json", "/b/3/{badge-key}.json"},
		{"/b/2/.svg", "{unknown}"},
		{"/status/" + badgeKey, "/status/{status-page}"},
		{"/status/" + badgeKey + ".rss", "/status/{status-page}.rss"},
		{"/status/" + badgeKey + ".json", "/status/{status-page}.json"},
		{"/api/v3/checks/" + badgeKey + "/stats/", "/api/v3/checks/{check}/stats/"},
		{"/", "/"},
		{"/login", "/login"},
		{"/checks/" + uuid, "/checks/{check}"},
		{"/checks/" + uuid + "/pings/3/body", "/checks/{check}/pings/{n}/body"},
		{"/checks/" + uuid + "/pause", "/checks/{check}/pause"},
		{"/static/app.css", "/static/{file}"},
		{"/" + pingKey, "{unknown}"},
		{"/pingg/" + uuid, "{unknown}"},
		{"//ping/" + uuid, "{unknown}"},
		{"", "{unknown}"},
	} {
		if got := templateOf(tc.path); got != tc.want {
			t.Errorf("templateOf(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}

// FuzzTemplateOf: whatever the path, its route is one of Vigil's templates (with
// or without a trailing slash) or an unknown one, so that a log line holds
// nothing of the path but the routes' own words.
func FuzzTemplateOf(f *testing.F) {
	allowed := map[string]bool{"/": true, "/api/{unknown}": true, "/ping/{unknown}": true, "{unknown}": true}
	for _, t := range routeTemplates {
		allowed[t.path], allowed[t.path+"/"] = true, true
	}
	for _, seed := range []string{
		"/api/v3/checks/", "/ping/5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a/3", "/ping/key/slug/fail",
		"/projects/5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a/metrics/key", "/badge/k/s/t.svg", "/b/2/k.json",
		"/checks/x/pings/1/body", "/static/app.js", "//", "/a/../b",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, path string) {
		got := templateOf(path)
		if !allowed[got] {
			t.Fatalf("templateOf(%q) = %q: not a template", path, got)
		}
		if strings.Contains(got, "{") {
			return
		}
		// A route without placeholders is the path itself, or it with its
		// trailing slash dropped.
		if got != path && got != strings.TrimSuffix(path, "/") {
			t.Fatalf("templateOf(%q) = %q", path, got)
		}
	})
}
