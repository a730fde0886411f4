package pingtest

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

const noCache = "max-age=0, no-cache, no-store, must-revalidate, private"

// types lists the pings' types as listed (newest first).
func types(pings []map[string]any) []string {
	out := make([]string, 0, len(pings))
	for _, p := range pings {
		out = append(out, p["type"].(string))
	}
	return out
}

// serials lists the pings' serial numbers as listed (newest first).
func serials(pings []map[string]any) []int64 {
	out := make([]int64, 0, len(pings))
	for _, p := range pings {
		out = append(out, int64(p["n"].(float64)))
	}
	return out
}

// descending is hi, hi-1, ..., lo.
func descending(hi, lo int64) []int64 {
	out := []int64{}
	for n := hi; n >= lo; n-- {
		out = append(out, n)
	}
	return out
}

// expectOK asserts a ping's 200 OK answer with the success headers (and
// no body for HEAD).
func expectOK(r managertest.Response) {
	GinkgoHelper()
	Expect(r.Status).To(Equal(http.StatusOK), r.String())
	if r.Method == http.MethodHead {
		Expect(r.Body).To(BeEmpty())
	} else {
		Expect(r.Text()).To(Equal("OK"))
	}
	Expect(r.Header.Get("Access-Control-Allow-Origin")).To(Equal("*"))
	Expect(r.Header.Get("Ping-Body-Limit")).To(Equal("1000"))
	Expect(r.Header.Get("Cache-Control")).To(Equal(noCache))
}

// expectError asserts an error answer: its status, body, no CORS header,
// no Ping-Body-Limit, and the no-cache headers, which the reference's UUID
// view adds to its errors and the slug view does not.
func expectError(r managertest.Response, status int, text string, slugForm bool) {
	GinkgoHelper()
	Expect(r.Status).To(Equal(status), r.String())
	Expect(r.Text()).To(Equal(text))
	Expect(r.Header.Get("Content-Type")).To(HavePrefix("text/plain"))
	Expect(r.Header).NotTo(HaveKey("Access-Control-Allow-Origin"))
	Expect(r.Header).NotTo(HaveKey("Ping-Body-Limit"))
	if slugForm {
		Expect(r.Header).NotTo(HaveKey("Cache-Control"))
	} else {
		Expect(r.Header.Get("Cache-Control")).To(Equal(noCache))
	}
}

var _ = Describe("Ping URLs", func() {
	var p proj
	BeforeEach(func() { p = newProject() })

	It("answers every UUID form and records the signal and exit status it names", func() {
		u := p.create(`{"name": "forms"}`)
		for _, suffix := range []string{"", "/", "/start", "/fail", "/log", "/0", "/1", "/007", "/255", "/000"} {
			expectOK(pingURL("GET", "/ping/"+u+suffix, ""))
		}
		for _, suffix := range []string{"/256", "/1000", "/0256", "/99999999999999999999"} {
			expectError(pingURL("GET", "/ping/"+u+suffix, ""), http.StatusBadRequest, "invalid url format", false)
		}

		pings := p.pings(u)
		Expect(serials(pings)).To(Equal(descending(10, 1)))
		Expect(types(pings)).To(Equal([]string{"success", "fail", "fail", "fail", "success", "log", "fail", "start", "success", "success"}))
		var exits []*int
		for _, r := range logged(p.checkObject(u)) {
			exits = append(exits, r.ExitStatus)
		}
		Expect(exits).To(Equal([]*int{nil, nil, nil, nil, nil, ptr.To(0), ptr.To(1), ptr.To(7), ptr.To(255), ptr.To(0)}))
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"n_pings": BeEquivalentTo(10), "status": Equal("up")}))
	})

	It("answers 404 to unknown checks and unrouted paths, and 400 to a bad exit status or rid, recording nothing", func() {
		u := p.create(`{"name": "strict"}`)
		unknown := uuid.NewString()
		for _, path := range []string{
			"/ping/" + unknown, "/ping/" + unknown + "/start", "/ping/" + unknown + "/256", "/ping/" + unknown + "?rid=bad",
			"/ping/" + strings.ToUpper(u), "/ping/" + u + "/bogus", "/ping/" + u + "/start/", "/ping/" + u + "/-1",
			"/ping/" + u + "/1.5", "/ping/", "/ping/" + u + "/fail/extra/path",
		} {
			r := pingURL("GET", path, "")
			Expect(r.Status).To(Equal(http.StatusNotFound), path)
			Expect(r.Text()).To(Equal("not found"), path)
			Expect(r.Header).NotTo(HaveKey("Access-Control-Allow-Origin"))
		}
		// The UUID view's errors carry the no-cache headers.
		expectError(pingURL("GET", "/ping/"+unknown, ""), http.StatusNotFound, "not found", false)
		Expect(pingURL("GET", "/ping/"+unknown, "").Header.Get("Expires")).NotTo(BeEmpty())

		// The exit status is checked before the rid.
		expectError(pingURL("GET", "/ping/"+u+"/256?rid=bad", ""), http.StatusBadRequest, "invalid url format", false)
		for _, q := range []string{"?rid=", "?rid=bad", "?rid=" + uuid.NewString() + "0", "?rid={" + uuid.NewString() + "}",
			"?rid=" + strings.ReplaceAll(uuid.NewString(), "-", ""), "?rid=" + uuid.NewString() + "&rid=nope"} {
			for _, suffix := range []string{"", "/start", "/fail", "/log", "/0", "/3"} {
				expectError(pingURL("POST", "/ping/"+u+suffix+q, "body"), http.StatusBadRequest, "invalid uuid format", false)
			}
		}
		Expect(p.pings(u)).To(BeEmpty())
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"n_pings": BeEquivalentTo(0), "status": Equal("new")}))

		// With repeated rids the last one counts.
		rid := uuid.NewString()
		expectOK(pingURL("GET", "/ping/"+u+"?rid=nope&rid="+strings.ToUpper(rid), ""))
		Expect(p.pings(u)[0]).To(HaveKeyWithValue("rid", rid))
	})

	It("finds checks by ping key and slug, with every suffix", func() {
		u := p.create(`{"name": "Backup", "slug": "backup"}`)
		p.create(`{"name": "Other", "slug": "other_job-2"}`)
		base := "/ping/" + p.pingKey + "/backup"
		for _, suffix := range []string{"", "/start", "/fail", "/log", "/0", "/3", "/007"} {
			expectOK(pingURL("GET", base+suffix, ""))
		}
		expectError(pingURL("GET", base+"/256", ""), http.StatusBadRequest, "invalid url format", true)
		expectError(pingURL("GET", base+"?rid=bad", ""), http.StatusBadRequest, "invalid uuid format", true)
		Expect(types(p.pings(u))).To(Equal([]string{"fail", "fail", "success", "log", "fail", "start", "success"}))
		expectOK(pingURL("HEAD", "/ping/"+p.pingKey+"/other_job-2", ""))

		// Slugs are matched exactly; uppercase is an invalid URL before any
		// lookup, a trailing slash is not routed.
		expectError(pingURL("GET", "/ping/"+p.pingKey+"/nope", ""), http.StatusNotFound, "not found", true)
		expectError(pingURL("GET", "/ping/"+p.pingKey+"/nope/start", ""), http.StatusNotFound, "not found", true)
		expectError(pingURL("GET", "/ping/"+p.pingKey+"/Backup", ""), http.StatusBadRequest, "invalid url format", true)
		expectError(pingURL("GET", "/ping/"+p.pingKey+"/NOPE/fail", ""), http.StatusBadRequest, "invalid url format", true)
		expectError(pingURL("GET", base+"/", ""), http.StatusNotFound, "not found", true)
		expectError(pingURL("GET", base+"/bogus", ""), http.StatusNotFound, "not found", true)
		expectError(pingURL("GET", "/ping/"+strings.Repeat("x", 22)+"/backup", ""), http.StatusNotFound, "not found", true)

		// Another project's ping key does not reach this project's slug.
		other := newProject()
		expectError(pingURL("GET", "/ping/"+other.pingKey+"/backup", ""), http.StatusNotFound, "not found", true)
		Expect(p.check(u)).To(HaveKeyWithValue("n_pings", BeEquivalentTo(7)))
	})

	It("answers 409 to a slug two checks share, pinging neither", func() {
		ctx := context.Background()
		var dups []*v1.Check
		for _, name := range []string{"dup-a", "dup-b"} {
			c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: name}, Spec: v1.CheckSpec{Name: name, Slug: "dup"}}
			Expect(k8sClient.Create(ctx, c)).To(Succeed())
			dups = append(dups, c)
		}
		// Wait for the server's cache to hold both (a ping meanwhile would
		// reach the first alone).
		Eventually(func() []any {
			return harness.Call("GET", "/api/v3/checks/?slug=dup", p.rw, "").JSON()["checks"].([]any)
		}).Should(HaveLen(2))
		for _, suffix := range []string{"", "/start", "/fail", "/log", "/2", "?create=1"} {
			expectError(pingURL("POST", "/ping/"+p.pingKey+"/dup"+suffix, "x"), http.StatusConflict, "ambiguous slug", true)
		}
		for _, c := range dups {
			Expect(p.check(string(c.UID))).To(HaveKeyWithValue("n_pings", BeEquivalentTo(0)))
			// Each is still reachable by its UUID.
			expectOK(pingURL("GET", "/ping/"+string(c.UID), ""))
		}
	})

	It("auto-provisions a check for an unknown slug with ?create=1, with the defaults and every channel", func() {
		ctx := context.Background()
		ch := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "ops"}, Spec: v1.ChannelSpec{
			Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "http://127.0.0.1:1/hook"}}}}
		Expect(k8sClient.Create(ctx, ch)).To(Succeed())
		Eventually(func() []any { return harness.Call("GET", "/api/v3/channels/", p.rw, "").JSON()["channels"].([]any) }).Should(HaveLen(1))

		// Only the exact value 1 provisions.
		for _, q := range []string{"", "?create=0", "?create=true", "?create=", "?create=11"} {
			expectError(pingURL("GET", "/ping/"+p.pingKey+"/fresh-job"+q, ""), http.StatusNotFound, "not found", true)
		}
		r := pingURL("GET", "/ping/"+p.pingKey+"/fresh-job/start?create=1", "")
		Expect(r.Status).To(Equal(http.StatusCreated), r.String())
		Expect(r.Text()).To(Equal("Created"))
		Expect(r.Header.Get("Access-Control-Allow-Origin")).To(Equal("*"))
		Expect(r.Header.Get("Ping-Body-Limit")).To(Equal("1000"))
		Expect(r.Header.Get("Cache-Control")).To(Equal(noCache))

		// Pinging again at once, with ?create=1 still on the URL, pings the
		// same check: no second check appears.
		expectOK(pingURL("GET", "/ping/"+p.pingKey+"/fresh-job?create=1", ""))
		expectOK(pingURL("GET", "/ping/"+p.pingKey+"/fresh-job", ""))

		var list v1.CheckList
		Expect(k8sClient.List(ctx, &list, client.InNamespace(p.ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
		c := list.Items[0]
		Expect(c.Spec).To(MatchFields(IgnoreExtras, Fields{
			"Name": Equal("fresh-job"), "Slug": Equal("fresh-job"), "Timeout": PointTo(BeEquivalentTo(86400)),
			"Grace": BeEquivalentTo(3600), "Channels": Equal([]string{"ops"}),
		}))
		u := c.Spec.UUID
		Expect(u).NotTo(BeEmpty())
		Expect(types(p.pings(u))).To(Equal([]string{"success", "success", "start"}))
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"n_pings": BeEquivalentTo(3), "status": Equal("up"), "slug": Equal("fresh-job")}))

		// A provisioning ping that is itself invalid still creates the
		// check, as the reference does, and answers the error.
		expectError(pingURL("GET", "/ping/"+p.pingKey+"/made-anyway/256?create=1", ""), http.StatusBadRequest, "invalid url format", true)
		Expect(k8sClient.List(ctx, &list, client.InNamespace(p.ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(2))
	})

	It("provisions one check per slug however soon the next ping follows", func() {
		for i := range 10 {
			path := "/ping/" + p.pingKey + "/quick-" + strconv.Itoa(i) + "?create=1"
			r := pingURL("GET", path, "")
			Expect(r.Status).To(Equal(http.StatusCreated), r.String())
			expectOK(pingURL("GET", path, ""))
		}
		var list v1.CheckList
		Expect(k8sClient.List(context.Background(), &list, client.InNamespace(p.ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(10))
	})

	It("stops auto-provisioning at the project's check limit with 404", func() {
		p.create(`{"name": "one"}`)
		harness.SetCheckLimit(p.ns, 1)
		// Once the API refuses a check, the server knows the limit.
		Eventually(func() int { return harness.Call("POST", "/api/v3/checks/", p.rw, `{"name": "probe"}`).Status }).Should(Equal(http.StatusForbidden))
		var before v1.CheckList
		Expect(k8sClient.List(context.Background(), &before, client.InNamespace(p.ns))).To(Succeed())

		expectError(pingURL("GET", "/ping/"+p.pingKey+"/over-limit?create=1", ""), http.StatusNotFound, "not found", true)
		var after v1.CheckList
		Expect(k8sClient.List(context.Background(), &after, client.InNamespace(p.ns))).To(Succeed())
		Expect(after.Items).To(HaveLen(len(before.Items)))

		harness.SetCheckLimit(p.ns, 20)
		Eventually(func() int {
			return pingURL("GET", "/ping/"+p.pingKey+"/over-limit?create=1", "").Status
		}).Should(Equal(http.StatusCreated))
	})
})

var _ = Describe("What a ping records", func() {
	var p proj
	BeforeEach(func() { p = newProject() })

	It("records method, user agent, address, scheme, rid and body for any HTTP method", func() {
		u := p.create(`{"name": "rec"}`)
		ua := strings.Repeat("é", 250)
		for _, m := range []string{"GET", "HEAD", "PUT", "OPTIONS", "DELETE", "PATCH", "POST"} {
			r := do(m, baseURL+"/ping/"+u, "payload from "+m, http.Header{"User-Agent": {m + "-agent"}})
			Expect(r.Status).To(Equal(http.StatusOK), m)
			if m == "HEAD" {
				Expect(r.Body).To(BeEmpty())
			} else {
				Expect(r.Text()).To(Equal("OK"))
			}
		}
		expectOK(do("GET", baseURL+"/ping/"+u+"/log", "", http.Header{"User-Agent": {ua}}))

		pings := p.pings(u)
		Expect(pings).To(HaveLen(8))
		Expect(pings[0]).To(MatchAllKeys(Keys{
			"type": Equal("log"), "date": Not(BeEmpty()), "n": BeEquivalentTo(8), "scheme": Equal("http"),
			"remote_addr": Equal("127.0.0.1"), "method": Equal("GET"), "ua": Equal(strings.Repeat("é", 200)),
			"rid": BeNil(), "body_url": BeNil(),
		}))
		methods := []string{}
		for i, pg := range pings[1:] {
			m := pg["method"].(string)
			methods = append(methods, m)
			Expect(pg).To(MatchKeys(IgnoreExtras, Keys{"type": Equal("success"), "n": BeEquivalentTo(7 - i),
				"ua": Equal(m + "-agent"), "remote_addr": Equal("127.0.0.1")}))
			if m == "HEAD" || m == "GET" {
				// Go's client sends no body with these.
				continue
			}
			bodyPath := "/api/v3/checks/" + u + "/pings/" + formatN(pg["n"]) + "/body"
			Expect(pg["body_url"]).To(Equal(baseURL + bodyPath))
			b := harness.Call("GET", bodyPath, p.rw, "")
			Expect(b.Status).To(Equal(http.StatusOK))
			Expect(b.Text()).To(Equal("payload from " + m))
		}
		Expect(methods).To(Equal([]string{"POST", "PATCH", "DELETE", "OPTIONS", "PUT", "HEAD", "GET"}))
	})

	It("truncates bodies beyond the body limit and stores them byte for byte", func() {
		u := p.create(`{"name": "big"}`)
		big := strings.Repeat("0123456789", 150)
		expectOK(pingURL("POST", "/ping/"+u+"/fail", big))
		exact := strings.Repeat("x", bodyLimit)
		expectOK(pingURL("PUT", "/ping/"+u, exact))
		binary := "\xff\xfe\x00binary"
		expectOK(pingURL("POST", "/ping/"+u+"/log", binary))

		Expect(harness.Call("GET", "/api/v3/checks/"+u+"/pings/1/body", p.rw, "").Text()).To(Equal(big[:bodyLimit]))
		Expect(harness.Call("GET", "/api/v3/checks/"+u+"/pings/2/body", p.rw, "").Text()).To(Equal(exact))
		Expect(harness.Call("GET", "/api/v3/checks/"+u+"/pings/3/body", p.rw, "").Text()).To(Equal(binary))
		Expect(logged(p.checkObject(u))[0].BodySize).To(Equal(bodyLimit))
	})

	It("pairs a start with the completion of the same run id, lowercased", func() {
		u := p.create(`{"name": "runs"}`)
		a, b := uuid.NewString(), uuid.NewString()
		expectOK(pingURL("GET", "/ping/"+u+"/start?rid="+strings.ToUpper(a), ""))
		expectOK(pingURL("GET", "/ping/"+u+"/start?rid="+b, ""))
		Expect(p.check(u)).To(HaveKeyWithValue("started", true))
		Eventually(func() bool { return p.checkObject(u).Status.Started }).Should(BeTrue())
		expectOK(pingURL("GET", "/ping/"+u+"/log?rid="+a, ""))
		expectOK(pingURL("GET", "/ping/"+u+"?rid="+b, ""))
		expectOK(pingURL("GET", "/ping/"+u+"/fail?rid="+strings.ToUpper(a), ""))
		// No start with this rid (nor without one) is open.
		expectOK(pingURL("GET", "/ping/"+u, ""))

		pings := p.pings(u)
		Expect(types(pings)).To(Equal([]string{"success", "fail", "success", "log", "start", "start"}))
		Expect(pings[5]["rid"]).To(Equal(a))
		Expect(pings[1]["rid"]).To(Equal(a))
		Expect(pings[2]["rid"]).To(Equal(b))
		Expect(pings[1]).To(HaveKeyWithValue("duration", BeNumerically(">=", 0)))
		Expect(pings[2]).To(HaveKeyWithValue("duration", BeNumerically(">=", 0)))
		for _, i := range []int{0, 3, 4, 5} {
			Expect(pings[i]).NotTo(HaveKey("duration"), "ping %d", i)
		}
		Eventually(func(g Gomega) {
			st := p.checkObject(u).Status
			g.Expect(st.Started).To(BeFalse())
			g.Expect(st.LastDuration).To(BeNil())
			g.Expect(st.NPings).To(BeEquivalentTo(6))
		}).Should(Succeed())
	})

	It("shows each ping in the Management API as soon as it is answered", func() {
		u := p.create(`{"name": "read-your-ping"}`)
		for i := 1; i <= 20; i++ {
			suffix, status := "", "up"
			if i%2 == 0 {
				suffix, status = "/fail", "down"
			}
			expectOK(pingURL("GET", "/ping/"+u+suffix, ""))
			Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"n_pings": BeEquivalentTo(i), "status": Equal(status)}), "ping %d", i)
		}
	})

	It("moves the check new → started → up → down, and a log changes nothing", func() {
		u := p.create(`{"name": "states"}`)
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("new"), "started": BeFalse(), "n_pings": BeEquivalentTo(0)}))

		expectOK(pingURL("GET", "/ping/"+u+"/start", ""))
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("new"), "started": BeTrue(), "last_ping": BeNil()}))
		Eventually(func() bool { return p.checkObject(u).Status.Started }).Should(BeTrue())

		expectOK(pingURL("GET", "/ping/"+u, ""))
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("up"), "started": BeFalse(), "last_ping": Not(BeNil()),
			"next_ping": Not(BeNil()), "n_pings": BeEquivalentTo(2)}))
		Eventually(func(g Gomega) {
			st := p.checkObject(u).Status
			g.Expect(st.LastDuration).NotTo(BeNil())
			g.Expect(st.LastPingType).To(Equal(v1.PingSuccess))
			g.Expect(st.State).To(Equal(v1.CheckStateUp))
		}).Should(Succeed())

		expectOK(pingURL("GET", "/ping/"+u+"/fail", ""))
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("down"), "n_pings": BeEquivalentTo(3)}))
		Eventually(func(g Gomega) {
			st := p.checkObject(u).Status
			g.Expect(st.LastPingType).To(Equal(v1.PingFail))
			g.Expect(st.State).To(Equal(v1.CheckStateDown))
		}).Should(Succeed())

		lastPing := p.check(u)["last_ping"]
		expectOK(pingURL("POST", "/ping/"+u+"/log", "just a note"))
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("down"), "n_pings": BeEquivalentTo(4), "last_ping": Equal(lastPing)}))

		expectOK(pingURL("GET", "/ping/"+u+"/0", ""))
		Expect(p.check(u)).To(HaveKeyWithValue("status", "up"))
		Eventually(func() v1.CheckState { return p.checkObject(u).Status.State }).Should(Equal(v1.CheckStateUp))
		flips := harness.Call("GET", "/api/v3/checks/"+u+"/flips/", p.rw, "")
		Expect(flips.Status).To(Equal(http.StatusOK))
		Eventually(func() string { return harness.Call("GET", "/api/v3/checks/"+u+"/flips/", p.rw, "").Text() }).Should(
			And(ContainSubstring(`"up":0`), ContainSubstring(`"up":1`)))
	})
})

var _ = Describe("Check settings that change a ping", func() {
	var p proj
	BeforeEach(func() { p = newProject() })

	It(`logs non-POST pings as "ign" when methods is "POST"`, func() {
		u := p.create(`{"name": "post-only", "methods": "POST"}`)
		expectOK(pingURL("GET", "/ping/"+u, ""))
		expectOK(pingURL("HEAD", "/ping/"+u+"/start", ""))
		expectOK(pingURL("PUT", "/ping/"+u+"/fail", "x"))
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("new"), "started": BeFalse(), "n_pings": BeEquivalentTo(3)}))
		expectOK(pingURL("POST", "/ping/"+u, ""))
		expectOK(pingURL("GET", "/ping/"+u+"/fail", ""))
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("up"), "n_pings": BeEquivalentTo(5)}))
		Expect(types(p.pings(u))).To(Equal([]string{"ign", "success", "ign", "ign", "ign"}))
	})

	It(`ignores every ping to a paused check with manual_resume, and resumes one without it`, func() {
		manual := p.create(`{"name": "manual", "manual_resume": true}`)
		auto := p.create(`{"name": "auto"}`)
		for _, u := range []string{manual, auto} {
			expectOK(pingURL("GET", "/ping/"+u, ""))
			Expect(harness.Call("POST", "/api/v3/checks/"+u+"/pause", p.rw, "").JSON()).To(HaveKeyWithValue("status", "paused"))
		}
		for _, suffix := range []string{"/start", "/log", "/fail", "", "/0"} {
			expectOK(pingURL("GET", "/ping/"+manual+suffix, ""))
		}
		Expect(p.check(manual)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("paused"), "started": BeFalse(), "n_pings": BeEquivalentTo(6)}))
		Expect(types(p.pings(manual))).To(Equal([]string{"ign", "ign", "ign", "ign", "ign", "success"}))

		expectOK(pingURL("GET", "/ping/"+auto+"/log", ""))
		Expect(p.check(auto)).To(HaveKeyWithValue("status", "paused"))
		expectOK(pingURL("GET", "/ping/"+auto, ""))
		Expect(p.check(auto)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("up"), "n_pings": BeEquivalentTo(3)}))
		Expect(types(p.pings(auto))).To(Equal([]string{"success", "log", "success"}))
		Eventually(func() v1.CheckState { return p.checkObject(auto).Status.State }).Should(Equal(v1.CheckStateUp))
	})

	It("classifies by keywords in the HTTP body when filter_http_body is set, overriding the URL", func() {
		u := p.create(`{"name": "kw", "filter_http_body": true, "success_kw": "ALL GOOD", "failure_kw": " ERROR , FATAL,", "start_kw": "BEGIN"}`)
		for _, c := range []struct{ method, suffix, body string }{
			{"POST", "/fail", "ALL GOOD here"},        // success
			{"POST", "/log", "xx FATAL xx"},           // fail
			{"POST", "", "BEGIN run"},                 // start
			{"POST", "/0", "nothing to see"},          // ign
			{"POST", "/start", "error, lowercase"},    // ign: case-sensitive
			{"PUT", "/7", "ALL GOOD but ERROR too"},   // fail wins over success
			{"GET", "", ""},                           // ign
			{"POST", "/fail", "ALL GOOD BEGIN again"}, // success over start
		} {
			expectOK(pingURL(c.method, "/ping/"+u+c.suffix, c.body))
		}
		Expect(types(p.pings(u))).To(Equal([]string{"success", "ign", "fail", "ign", "ign", "start", "fail", "success"}))
		Expect(p.check(u)).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("up"), "n_pings": BeEquivalentTo(8)}))

		r := harness.Call("POST", "/api/v3/checks/"+u, p.rw, `{"filter_default_fail": true}`)
		Expect(r.Status).To(Equal(http.StatusOK), r.String())
		Eventually(func() string {
			expectOK(pingURL("POST", "/ping/"+u, "nothing to see"))
			return types(p.pings(u))[0]
		}).Should(Equal("fail"))
		Expect(p.check(u)).To(HaveKeyWithValue("status", "down"))

		// The methods rule comes first: a GET to a POST-only check is
		// ignored whatever its keywords say.
		Expect(harness.Call("POST", "/api/v3/checks/"+u, p.rw, `{"methods": "POST"}`).Status).To(Equal(http.StatusOK))
		Eventually(func() string {
			expectOK(pingURL("GET", "/ping/"+u+"?x=ALL+GOOD", ""))
			return types(p.pings(u))[0]
		}).Should(Equal("ign"))
	})
})

var _ = Describe("Client address", func() {
	var p proj
	BeforeEach(func() { p = newProject() })

	It("honours X-Forwarded-For and X-Forwarded-Proto from a trusted proxy only", func() {
		u := p.create(`{"name": "proxied"}`)
		// The first: what the client wrote (198.51.100.66), what the proxy
		// appended (the client) and a trusted hop.
		for _, xff := range []string{"198.51.100.66, 203.0.113.7, 127.0.0.1", "198.51.100.2:4567", "2001:db8::1", "::ffff:192.0.2.1"} {
			expectOK(do("GET", baseURL+"/ping/"+u, "", http.Header{"X-Forwarded-For": {xff}, "X-Forwarded-Proto": {"https"}}))
		}
		// A proxy that adds its own header line after the client's.
		expectOK(do("GET", baseURL+"/ping/"+u, "", http.Header{"X-Forwarded-For": {"198.51.100.77", "203.0.113.8"}, "X-Forwarded-Proto": {"https"}}))
		// A replica that trusts no proxy uses the socket's address.
		untrusted := newReplica(nil)
		expectOK(do("GET", untrusted+"/ping/"+u, "", http.Header{"X-Forwarded-For": {"203.0.113.9"}, "X-Forwarded-Proto": {"https"}}))
		// Nor one that trusts another network.
		other := newReplica([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
		expectOK(do("GET", other+"/ping/"+u, "", http.Header{"X-Forwarded-For": {"203.0.113.10"}}))

		addrs, schemes := []string{}, []string{}
		for _, pg := range p.pings(u) {
			addrs = append(addrs, pg["remote_addr"].(string))
			schemes = append(schemes, pg["scheme"].(string))
		}
		Expect(addrs).To(Equal([]string{"127.0.0.1", "127.0.0.1", "203.0.113.8", "::ffff:192.0.2.1", "2001:db8::1", "198.51.100.2", "203.0.113.7"}))
		Expect(schemes).To(Equal([]string{"http", "http", "https", "https", "https", "https", "https"}))
	})
})

// formatN formats a JSON number that is an integer.
func formatN(n any) string {
	return strconv.FormatInt(int64(n.(float64)), 10)
}
