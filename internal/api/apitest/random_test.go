package apitest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Random requests, from a fixed seed so a failure repeats: whatever the
// method, path, query and body, the answer is never a 5xx, and every API
// error is a JSON {"error": ...}.
var _ = Describe("Random requests", func() {
	It("never get a server error", func() {
		p := newProject()
		uuid := call("POST", "/api/v3/checks/", p.rw, `{"name": "target", "tags": "a b"}`).JSON()["uuid"].(string)
		rng := rand.New(rand.NewPCG(7, 11))
		pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
		fields := []string{"name", "slug", "tags", "desc", "timeout", "grace", "schedule", "tz", "manual_resume", "methods",
			"channels", "unique", "start_kw", "success_kw", "failure_kw", "filter_subject", "filter_body", "subject", "subject_fail",
			"filter_http_body", "filter_default_fail", "api_key"}
		values := []string{`""`, `"x"`, `null`, `0`, `-1`, `60`, `3600.5`, `1e400`, `99999999999999999999999`, `true`, `[]`, `["name"]`,
			`["name", 1]`, `{}`, `"* * * * *"`, `"daily"`, `"0 0 30 2 *"`, `"Europe/Riga"`, `"POST"`, `"*"`, `","`, `"\u0000"`,
			`"` + strings.Repeat("é", 300) + `"`, `"a-b_c"`, `"Not A Slug"`}
		body := func() string {
			switch rng.IntN(6) {
			case 0:
				return ""
			case 1:
				return pick("{", "[1,2]", "null", "\"str\"", "{\"a\":", "\xff\xfe", "{}{}", "42")
			}
			var parts []string
			for range rng.IntN(5) {
				parts = append(parts, fmt.Sprintf("%q: %s", pick(fields...), pick(values...)))
			}
			return "{" + strings.Join(parts, ", ") + "}"
		}
		query := func() string {
			q := url.Values{}
			for range rng.IntN(3) {
				q.Add(pick("tag", "slug", "seconds", "start", "end", "api_key", "x"),
					pick("", "0", "-5", "abc", "3600.0", " 1_000 ", "+7", "10000000001", "a b", "%"))
			}
			if len(q) == 0 {
				return ""
			}
			return "?" + q.Encode()
		}
		paths := []string{"/api/v3/checks/", "/api/v3/checks/" + uuid, "/api/v3/checks/" + uuid + "/pause",
			"/api/v3/checks/" + uuid + "/resume", "/api/v3/checks/" + uuid + "/pings/", "/api/v3/checks/" + uuid + "/pings/1/body",
			"/api/v3/checks/" + uuid + "/pings/99999999999999999999/body", "/api/v3/checks/" + uuid + "/flips/",
			"/api/v3/checks/" + strings.Repeat("a", 40), "/api/v3/checks/not-a-uuid", "/api/v3/channels/", "/api/v3/badges/",
			"/api/v1/checks/", "/api/v2/checks/" + uuid, "/api/v9/checks/", "/api/v3/", "/ping/" + uuid, "/ping/" + uuid + "/fail",
			"/ping/" + p.pingKey + "/some-slug", "/badge/x/y.svg", "/b/2/" + uuid + ".svg"}
		for i := range 400 {
			method := pick("GET", "POST", "POST", "DELETE", "PUT", "OPTIONS", "HEAD")
			path := pick(paths...) + query()
			key := pick(p.rw, p.ro, "", "hcw_"+strings.Repeat("z", 28))
			b := body()
			r := call(method, path, key, b)
			Expect(r.Status).To(BeNumerically("<", 500), "request %d: %s %s key=%q body=%q: %s", i, method, path, key, b, r.String())
			if r.Status >= 400 && strings.HasPrefix(path, "/api/") && method != "HEAD" {
				var e map[string]any
				Expect(jsonUnmarshal(r.Body, &e)).To(Succeed(), "request %d: %s %s: %s", i, method, path, r.String())
				Expect(e).To(HaveKey("error"))
			}
			Expect(r.Status).NotTo(Equal(http.StatusInternalServerError))
		}
	})
})

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
