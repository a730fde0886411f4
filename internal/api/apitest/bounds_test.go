package apitest

import (
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("Public badges", func() {
	It("never show a check's UUID, nor its hex digits, in any format", func() {
		p := newProject()
		r := call("POST", "/api/v3/checks/", p.rw, `{"tags": "prod"}`)
		Expect(r.Status).To(Equal(http.StatusCreated), r.String())
		c := r.JSON()
		uuid := c["uuid"].(string)
		secrets := []string{uuid, strings.ReplaceAll(uuid, "-", ""), uuid[:8]}

		// The read-only key sees badge_url too: it must not lead to the UUID.
		ro := call("GET", "/api/v3/checks/", p.ro, "").JSON()["checks"].([]any)[0].(map[string]any)
		Expect(ro["badge_url"]).To(Equal(c["badge_url"]))
		checkBadge := strings.TrimSuffix(strings.TrimPrefix(c["badge_url"].(string), baseURL+"/b/2/"), ".svg")
		var urls []string
		for _, states := range []string{"2", "3"} {
			for _, f := range []string{"svg", "json", "shields"} {
				urls = append(urls, "/b/"+states+"/"+checkBadge+"."+f)
			}
		}
		badges := call("GET", "/api/v3/badges/", p.ro, "").JSON()["badges"].(map[string]any)
		for _, tag := range []string{"*", "prod"} {
			for _, u := range badges[tag].(map[string]any) {
				urls = append(urls, strings.TrimPrefix(u.(string), baseURL))
			}
		}
		Expect(urls).To(HaveLen(6 + 2*6))
		for _, u := range urls {
			r := call("GET", u, "", "")
			Expect(r.Status).To(Equal(http.StatusOK), u)
			for _, s := range secrets {
				Expect(strings.ToLower(string(r.Body))).NotTo(ContainSubstring(s), u)
			}
		}
		Expect(string(call("GET", "/b/2/"+checkBadge+".shields", "", "").Body)).To(ContainSubstring(`"label": "check"`))
	})
})

var _ = Describe("Field bounds", func() {
	It("refuse a string over its limit with the reference's message, and take one at the limit", func() {
		p := newProject()
		for body, msg := range map[string]string{
			`{"desc": "` + strings.Repeat("😀", 10001) + `"}`: "json validation error: desc is too long",
			`{"tags": "` + strings.Repeat("t ", 251) + `"}`:  "json validation error: tags is too long",
			`{"name": "` + strings.Repeat("é", 101) + `"}`:   "json validation error: name is too long",
		} {
			r := call("POST", "/api/v3/checks/", p.rw, body)
			Expect(r.Status).To(Equal(http.StatusBadRequest), r.String())
			Expect(r.JSON()).To(HaveKeyWithValue("error", msg))
		}
		r := call("POST", "/api/v3/checks/", p.rw,
			`{"desc": "`+strings.Repeat("😀", 10000)+`", "tags": "`+strings.Repeat("😀", 500)+`"}`)
		Expect(r.Status).To(Equal(http.StatusCreated), r.String())
		Expect(r.JSON()["desc"]).To(Equal(strings.Repeat("😀", 10000)))
	})
})
