package apitest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
)

// keysOf returns an object's keys in document order.
func keysOf(body []byte) []string {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	_, err := dec.Token()
	Expect(err).NotTo(HaveOccurred())
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		Expect(err).NotTo(HaveOccurred())
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		Expect(dec.Decode(&skip)).To(Succeed())
	}
	return keys
}

var readWriteSimpleKeys = []string{"name", "slug", "tags", "desc", "grace", "n_pings", "status", "started", "last_ping", "next_ping",
	"manual_resume", "methods", "subject", "subject_fail", "start_kw", "success_kw", "failure_kw", "filter_subject", "filter_body",
	"filter_http_body", "filter_default_fail", "badge_url", "uuid", "ping_url", "update_url", "pause_url", "resume_url", "channels", "timeout"}

var _ = Describe("Management API", func() {
	var p proj
	BeforeEach(func() { p = newProject() })

	create := func(body string) map[string]any {
		r := call("POST", "/api/v3/checks/", p.rw, body)
		ExpectWithOffset(1, r.Status).To(Equal(http.StatusCreated), r.String())
		return r.JSON()
	}

	It("creates a check with the reference's defaults, keys in the reference's order, as a Check object", func() {
		r := call("POST", "/api/v3/checks/", p.rw, "{}")
		Expect(r.Status).To(Equal(http.StatusCreated), r.String())
		Expect(keysOf(r.Body)).To(Equal(readWriteSimpleKeys))
		c := r.JSON()
		Expect(c).To(MatchKeys(IgnoreExtras, Keys{
			"name": Equal(""), "grace": BeEquivalentTo(3600), "timeout": BeEquivalentTo(86400), "status": Equal("new"),
			"n_pings": BeEquivalentTo(0), "started": BeFalse(), "last_ping": BeNil(), "next_ping": BeNil(), "channels": Equal(""),
		}))
		uuid := c["uuid"].(string)
		Expect(c["ping_url"]).To(Equal(baseURL + "/ping/" + uuid))
		Expect(c["update_url"]).To(Equal(baseURL + "/api/v3/checks/" + uuid))

		var list v1.CheckList
		Expect(k8sClient.List(context.Background(), &list, client.InNamespace(p.ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(1))
		Expect(list.Items[0].Spec.UUID).To(Equal(uuid))
		Expect(*list.Items[0].Spec.Timeout).To(BeEquivalentTo(86400))
	})

	It("shows a check applied with kubectl, and a cron check with schedule and tz instead of timeout", func() {
		schedule := "0 3 * * *"
		c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "nightly"},
			Spec: v1.CheckSpec{Name: "Nightly", Schedule: &schedule, TZ: "Europe/Riga", Grace: 600}}
		Expect(k8sClient.Create(context.Background(), c)).To(Succeed())
		var got map[string]any
		Eventually(func() []any {
			got = call("GET", "/api/v3/checks/", p.rw, "").JSON()
			return got["checks"].([]any)
		}).Should(HaveLen(1))
		check := got["checks"].([]any)[0].(map[string]any)
		Expect(check).To(MatchKeys(IgnoreExtras, Keys{"name": Equal("Nightly"), "schedule": Equal(schedule), "tz": Equal("Europe/Riga")}))
		Expect(check).NotTo(HaveKey("timeout"))
		Expect(check).To(HaveLen(30))
	})

	It("answers 401 without a key or with an unknown one, and 403 to a read-only key on writes", func() {
		Expect(call("GET", "/api/v3/checks/", "", "").Status).To(Equal(http.StatusUnauthorized))
		Expect(call("GET", "/api/v3/checks/", "hcw_"+strings.Repeat("a", 28), "").JSON()).To(HaveKeyWithValue("error", "wrong api key"))
		r := call("POST", "/api/v3/checks/", p.ro, "{}")
		Expect(r.Status).To(Equal(http.StatusForbidden))
		Expect(r.JSON()).To(HaveKey("error"))
		// The key can come in the body of a POST.
		Expect(call("POST", "/api/v3/checks/", "", fmt.Sprintf(`{"api_key": %q}`, p.rw)).Status).To(Equal(http.StatusCreated))
		// A malformed body is reported before the missing key.
		Expect(call("POST", "/api/v3/checks/", "", "{oops").JSON()).To(HaveKeyWithValue("error", "could not parse request body"))
	})

	It("hides secrets from read-only keys and finds checks by unique_key", func() {
		uuid := create(`{"name": "db"}`)["uuid"].(string)
		list := call("GET", "/api/v3/checks/", p.ro, "")
		Expect(string(list.Body)).NotTo(ContainSubstring(uuid))
		c := list.JSON()["checks"].([]any)[0].(map[string]any)
		for _, k := range []string{"uuid", "ping_url", "update_url", "pause_url", "resume_url", "channels"} {
			Expect(c).NotTo(HaveKey(k))
		}
		Expect(c).To(HaveLen(24))
		key := c["unique_key"].(string)
		Expect(key).To(Equal(checks.UniqueKey(uuid)))
		Expect(call("GET", "/api/v3/checks/"+key, p.ro, "").JSON()).To(HaveKeyWithValue("name", "db"))
		Expect(call("GET", "/api/v3/checks/"+key, p.rw, "").JSON()).To(HaveKeyWithValue("uuid", uuid))
	})

	It("never lets a key reach another project", func() {
		other := newProject()
		uuid := create(`{"name": "mine"}`)["uuid"].(string)
		Expect(call("GET", "/api/v3/checks/", other.rw, "").JSON()["checks"]).To(BeEmpty())
		Expect(call("GET", "/api/v3/checks/"+uuid, other.rw, "").Status).To(Equal(http.StatusForbidden))
		Expect(call("POST", "/api/v3/checks/"+uuid, other.rw, `{"name": "theirs"}`).Status).To(Equal(http.StatusForbidden))
		Expect(call("DELETE", "/api/v3/checks/"+uuid, other.rw, "").Status).To(Equal(http.StatusForbidden))
		Expect(call("GET", "/api/v3/checks/"+checks.UniqueKey(uuid), other.ro, "").Status).To(Equal(http.StatusNotFound))
		Expect(call("GET", "/api/v3/checks/"+uuid, p.rw, "").JSON()).To(HaveKeyWithValue("name", "mine"))
	})

	It("upserts on the unique fields and enforces the project's check limit", func() {
		first := call("POST", "/api/v3/checks/", p.rw, `{"name": "backup", "timeout": 3600, "unique": ["name"]}`)
		Expect(first.Status).To(Equal(http.StatusCreated))
		again := call("POST", "/api/v3/checks/", p.rw, `{"name": "backup", "timeout": 7200, "unique": ["name"]}`)
		Expect(again.Status).To(Equal(http.StatusOK))
		Expect(again.JSON()["uuid"]).To(Equal(first.JSON()["uuid"]))
		Expect(again.JSON()["timeout"]).To(BeEquivalentTo(7200))

		// The cluster administrator sets this project's limit to 2.
		harness.SetCheckLimit(p.ns, 2)
		Eventually(func() int { return call("POST", "/api/v3/checks/", p.rw, `{"name": "two"}`).Status }).Should(Equal(http.StatusCreated))
		r := call("POST", "/api/v3/checks/", p.rw, `{"name": "three"}`)
		Expect(r.Status).To(Equal(http.StatusForbidden))
		Expect(r.JSON()["error"]).To(ContainSubstring("limit of 2 checks"))
		// An upsert that matches is not a new check.
		Expect(call("POST", "/api/v3/checks/", p.rw, `{"name": "two", "unique": ["name"]}`).Status).To(Equal(http.StatusOK))
	})

	It("updates only the fields given, rejects bad input with the reference's messages, and writes nothing then", func() {
		c := create(`{"name": "job", "tags": "a b", "timeout": 600}`)
		uuid := c["uuid"].(string)
		r := call("POST", "/api/v3/checks/"+uuid, p.rw, `{"desc": "nightly job", "grace": 120}`)
		Expect(r.Status).To(Equal(http.StatusOK), r.String())
		Expect(r.JSON()).To(MatchKeys(IgnoreExtras, Keys{"name": Equal("job"), "tags": Equal("a b"), "timeout": BeEquivalentTo(600),
			"desc": Equal("nightly job"), "grace": BeEquivalentTo(120)}))

		r = call("POST", "/api/v3/checks/"+uuid, p.rw, `{"schedule": "12:34", "tz": "US/Eastern"}`)
		Expect(r.JSON()).To(MatchKeys(IgnoreExtras, Keys{"schedule": Equal("12:34"), "tz": Equal("America/New_York")}))
		Expect(r.JSON()).NotTo(HaveKey("timeout"))

		for body, msg := range map[string]string{
			`{"timeout": 59}`:                 "json validation error: timeout is too small",
			`{"schedule": "61 * * * *"}`:      "json validation error: schedule is not a valid cron or OnCalendar expression",
			`{"tz": "Mars/Olympus"}`:          "json validation error: tz is not a valid timezone",
			`{"channels": "no-such-thing"}`:   "invalid channel identifier: no-such-thing",
			`{"name": 1, "channels": "nope"}`: "json validation error: name is not a string",
		} {
			r := call("POST", "/api/v3/checks/"+uuid, p.rw, body)
			Expect(r.Status).To(Equal(http.StatusBadRequest), body)
			Expect(r.JSON()).To(HaveKeyWithValue("error", msg))
		}
		Expect(call("GET", "/api/v3/checks/"+uuid, p.rw, "").JSON()).To(HaveKeyWithValue("schedule", "12:34"))
	})

	It("stores a schedule with any whitespace the reference accepts, verbatim", func() {
		r := call("POST", "/api/v3/checks/", p.rw, `{"schedule": "0 3 * * *\r\n", "tz": "UTC"}`)
		Expect(r.Status).To(Equal(http.StatusCreated), r.String())
		Expect(r.JSON()).To(HaveKeyWithValue("schedule", "0 3 * * *\r\n"))
		r = call("POST", "/api/v3/checks/", p.rw, `{"schedule": "daily\u00a0Europe/Riga"}`)
		Expect(r.Status).To(Equal(http.StatusBadRequest), "a no-break space is no zone separator, as in the reference")
	})

	It("assigns channels by UUID, name, all, or none", func() {
		for _, name := range []string{"ops", "dev"} {
			ch := &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: name}, Spec: v1.ChannelSpec{
				Kind: v1.ChannelWebhook, DisplayName: strings.ToUpper(name),
				Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{URL: "http://127.0.0.1:1/hook"}}}}
			Expect(k8sClient.Create(context.Background(), ch)).To(Succeed())
		}
		var channels []any
		Eventually(func() []any {
			channels = call("GET", "/api/v3/channels/", p.rw, "").JSON()["channels"].([]any)
			return channels
		}).Should(HaveLen(2))
		ids := map[string]string{}
		for _, c := range channels {
			m := c.(map[string]any)
			Expect(m).To(HaveKeyWithValue("kind", "webhook"))
			ids[m["name"].(string)] = m["id"].(string)
		}
		all := []string{ids["OPS"], ids["DEV"]}
		if all[0] > all[1] {
			all[0], all[1] = all[1], all[0]
		}

		uuid := create(`{"channels": "OPS"}`)["uuid"].(string)
		Expect(call("GET", "/api/v3/checks/"+uuid, p.rw, "").JSON()).To(HaveKeyWithValue("channels", ids["OPS"]))
		r := call("POST", "/api/v3/checks/"+uuid, p.rw, `{"channels": "*"}`)
		Expect(r.JSON()).To(HaveKeyWithValue("channels", strings.Join(all, ",")))
		r = call("POST", "/api/v3/checks/"+uuid, p.rw, fmt.Sprintf(`{"channels": "%s,DEV"}`, ids["DEV"]))
		Expect(r.JSON()).To(HaveKeyWithValue("channels", ids["DEV"]))
		r = call("POST", "/api/v3/checks/"+uuid, p.rw, `{"channels": ""}`)
		Expect(r.JSON()).To(HaveKeyWithValue("channels", ""))
		Expect(call("POST", "/api/v3/checks/"+uuid, p.rw, `{"channels": ","}`).JSON()).To(HaveKeyWithValue("error", "empty channel identifier"))
	})

	It("filters the list by tag and slug", func() {
		create(`{"name": "a", "slug": "a", "tags": "prod db"}`)
		create(`{"name": "b", "slug": "b", "tags": "prod"}`)
		create(`{"name": "c", "slug": "c", "tags": "a1-prod"}`)
		names := func(query string) []string {
			var out []string
			for _, c := range call("GET", "/api/v3/checks/"+query, p.rw, "").JSON()["checks"].([]any) {
				out = append(out, c.(map[string]any)["name"].(string))
			}
			return out
		}
		Expect(names("?tag=prod")).To(ConsistOf("a", "b"))
		Expect(names("?tag=prod&tag=db")).To(ConsistOf("a"))
		Expect(names("?tag=")).To(BeEmpty())
		Expect(names("?slug=c")).To(ConsistOf("c"))
		Expect(names("?slug=")).To(HaveLen(3))
	})

	It("pauses, resumes (409 when not paused) and deletes, returning the check as it was", func() {
		uuid := create(`{"name": "p"}`)["uuid"].(string)
		Expect(call("POST", "/api/v3/checks/"+uuid+"/resume", p.rw, "").Status).To(Equal(http.StatusConflict))
		Expect(call("POST", "/api/v3/checks/"+uuid+"/pause", p.rw, "").JSON()).To(HaveKeyWithValue("status", "paused"))
		Expect(call("POST", "/api/v3/checks/"+uuid+"/pause", p.rw, "").JSON()).To(HaveKeyWithValue("status", "paused"))
		Expect(call("POST", "/api/v3/checks/"+uuid+"/resume", p.rw, "").JSON()).To(HaveKeyWithValue("status", "new"))
		Expect(call("GET", "/api/v3/checks/"+uuid+"/pause", p.rw, "").Status).To(Equal(http.StatusMethodNotAllowed))

		r := call("DELETE", "/api/v3/checks/"+uuid, p.rw, "")
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.JSON()).To(MatchKeys(IgnoreExtras, Keys{"name": Equal("p"), "uuid": Equal(uuid), "channels": Equal("")}))
		Expect(call("GET", "/api/v3/checks/"+uuid, p.rw, "").Status).To(Equal(http.StatusNotFound))
		Eventually(func() []v1.Check {
			var list v1.CheckList
			Expect(k8sClient.List(context.Background(), &list, client.InNamespace(p.ns))).To(Succeed())
			return list.Items
		}).Should(BeEmpty())
	})

	It("snoozes a check with a read-write key: a one-off MaintenanceWindow for it alone, moved by a second snooze, ended by DELETE", func() {
		uuid := create(`{"name": "noisy"}`)["uuid"].(string)
		Expect(call("POST", "/api/v3/checks/"+uuid+"/snooze", p.ro, `{"duration": 7200}`).Status).To(Equal(http.StatusForbidden))
		Expect(call("POST", "/api/v3/checks/"+uuid+"/snooze", p.rw, `{}`).JSON()).To(HaveKeyWithValue("error",
			"json validation error: duration is required: the seconds to snooze for, 60 to 2678400"))
		Expect(call("POST", "/api/v3/checks/"+uuid+"/snooze", p.rw, `{"duration": 30}`).Status).To(Equal(http.StatusBadRequest))

		r := call("POST", "/api/v3/checks/"+uuid+"/snooze", p.rw, `{"duration": 7200}`)
		Expect(r.Status).To(Equal(http.StatusOK))
		snooze := r.JSON()["snooze"].(map[string]any)
		from, err := time.Parse(time.RFC3339, snooze["from"].(string))
		Expect(err).NotTo(HaveOccurred())
		Expect(snooze["until"]).To(Equal(from.Add(2 * time.Hour).Format(time.RFC3339)))
		name := snooze["window"].(string)
		var c v1.Check
		Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: p.ns, Name: name[len("snooze-"):]}, &c)).To(Succeed())
		mw := &v1.MaintenanceWindow{}
		Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: p.ns, Name: name}, mw)).To(Succeed())
		Expect(mw.Spec.Checks).To(Equal([]string{c.Name}))
		Expect(mw.OwnerReferences).To(ConsistOf(HaveField("UID", c.UID)))

		Expect(call("POST", "/api/v3/checks/"+uuid+"/snooze", p.rw, `{"duration": 600}`).Status).To(Equal(http.StatusOK))
		Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: p.ns, Name: name}, mw)).To(Succeed())
		Expect(mw.Spec.To.Sub(mw.Spec.From.Time)).To(Equal(10 * time.Minute))

		r = call("DELETE", "/api/v3/checks/"+uuid+"/snooze", p.rw, "")
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(r.JSON()).To(HaveKeyWithValue("snooze", BeNil()))
		Expect(apierrors.IsNotFound(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: p.ns, Name: name}, mw))).To(BeTrue())
		Expect(call("DELETE", "/api/v3/checks/"+uuid+"/snooze", p.rw, "").Status).To(Equal(http.StatusOK), "no snooze: nothing to end")
		other := newProject()
		Expect(call("POST", "/api/v3/checks/"+uuid+"/snooze", other.rw, `{"duration": 600}`).Status).To(Equal(http.StatusForbidden), "another project's check")
	})

	It("acknowledges a down with a read-write key (409 when not down), shows who and when, and forgets it at the up", func() {
		uuid := create(`{"name": "paged", "timeout": 3600}`)["uuid"].(string)
		ack := "/api/v3/checks/" + uuid + "/ack"
		Expect(call("POST", ack, p.rw, "").JSON()).To(HaveKeyWithValue("error", "check is not down"))
		Expect(call("POST", ack, p.rw, "").Status).To(Equal(http.StatusConflict))
		Expect(call("GET", "/ping/"+uuid+"/fail", "", "").Status).To(Equal(http.StatusOK))
		Expect(call("POST", ack, p.ro, "").Status).To(Equal(http.StatusForbidden), "a read-only key")
		Expect(call("POST", ack, newProject().rw, "").Status).To(Equal(http.StatusForbidden), "another project's key")
		Expect(call("GET", ack, p.rw, "").JSON()).To(HaveKeyWithValue("ack", BeNil()))

		r := call("POST", ack, p.rw, "")
		Expect(r.Status).To(Equal(http.StatusOK), r.String())
		got := r.JSON()["ack"].(map[string]any)
		Expect(got["by"]).To(Equal("API key " + p.rw[:12]))
		at, err := time.Parse(time.RFC3339, got["at"].(string))
		Expect(err).NotTo(HaveOccurred())
		Expect(at).To(BeTemporally("~", time.Now(), time.Minute))
		Expect(call("GET", ack, p.rw, "").JSON()).To(HaveKeyWithValue("ack", Equal(got)))
		Expect(call("GET", "/api/v3/checks/"+uuid, p.rw, "").JSON()).To(HaveKeyWithValue("status", "down"), "monitoring goes on")

		Expect(call("GET", "/ping/"+uuid, "", "").Status).To(Equal(http.StatusOK))
		Expect(call("GET", ack, p.rw, "").JSON()).To(HaveKeyWithValue("ack", BeNil()), "the down it belonged to ended")
		Expect(call("POST", ack, p.rw, "").Status).To(Equal(http.StatusConflict))
	})

	It("shows what a check depends on, and which of them holds its notifications (a Vigil extension)", func() {
		hour := int64(3600)
		host := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "backup-host", Labels: map[string]string{"role": "host"}},
			Spec: v1.CheckSpec{Timeout: &hour}}
		Expect(k8sClient.Create(context.Background(), host)).To(Succeed())
		job := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: "dump"}, Spec: v1.CheckSpec{Timeout: &hour,
			AlertPolicy: v1.AlertPolicy{DependsOn: &v1.DependsOn{Checks: []string{"db"},
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "host"}}}}}}
		Expect(k8sClient.Create(context.Background(), job)).To(Succeed())
		var hostUUID, jobUUID string
		Eventually(func(g Gomega) {
			for _, x := range call("GET", "/api/v3/checks/", p.rw, "").JSON()["checks"].([]any) {
				c := x.(map[string]any)
				switch c["ping_url"].(string)[len(baseURL+"/ping/"):] {
				case string(host.UID):
					hostUUID = string(host.UID)
				case string(job.UID):
					jobUUID = string(job.UID)
				}
			}
			g.Expect(hostUUID).NotTo(BeEmpty())
			g.Expect(jobUUID).NotTo(BeEmpty())
		}).Should(Succeed())
		deps := "/api/v3/checks/" + jobUUID + "/dependencies"
		Eventually(func() map[string]any { return call("GET", deps, p.rw, "").JSON() }).Should(Equal(map[string]any{
			"depends_on": []any{map[string]any{"name": "backup-host", "status": "new", "uuid": hostUUID}},
			"missing":    []any{"db"}, "held_by": nil, "problem": nil}))
		Expect(call("GET", "/ping/"+hostUUID+"/fail", "", "").Status).To(Equal(http.StatusOK))
		Expect(call("GET", "/ping/"+jobUUID+"/fail", "", "").Status).To(Equal(http.StatusOK))
		Eventually(func() any { return call("GET", deps, p.rw, "").JSON()["held_by"] }).Should(
			MatchKeys(IgnoreExtras, Keys{"name": Equal("backup-host"), "down_since": Not(BeEmpty())}))
		ro := call("GET", deps, p.ro, "").JSON()["depends_on"].([]any)[0].(map[string]any)
		Expect(ro).NotTo(HaveKey("uuid"), "a read-only key sees no ping URL")
		Expect(ro).To(HaveKey("unique_key"))
		Expect(call("GET", deps, newProject().rw, "").Status).To(Equal(http.StatusForbidden), "another project's key")
	})

	It("lists pings newest first with bodies and durations, and flips as a bare array with validated parameters", func() {
		uuid := create(`{"name": "pinged"}`)["uuid"].(string)
		Expect(call("GET", "/ping/"+uuid+"/start?rid=0f5dbe2d-0e43-4b3e-a8ba-9d44f9d1b0c4", "", "").Status).To(Equal(http.StatusOK))
		Expect(call("POST", "/ping/"+uuid+"?rid=0F5DBE2D-0E43-4B3E-A8BA-9D44F9D1B0C4", "", "backup done").Status).To(Equal(http.StatusOK))
		Expect(call("GET", "/ping/"+uuid+"/fail", "", "").Status).To(Equal(http.StatusOK))

		r := call("GET", "/api/v3/checks/"+uuid+"/pings/", p.rw, "")
		pings := r.JSON()["pings"].([]any)
		Expect(pings).To(HaveLen(3))
		types := []string{}
		for _, x := range pings {
			types = append(types, x.(map[string]any)["type"].(string))
		}
		Expect(types).To(Equal([]string{"fail", "success", "start"}))
		success := pings[1].(map[string]any)
		Expect(success).To(MatchKeys(IgnoreExtras, Keys{"n": BeEquivalentTo(2), "method": Equal("POST"),
			"rid": Equal("0f5dbe2d-0e43-4b3e-a8ba-9d44f9d1b0c4"), "duration": BeNumerically(">=", 0)}))
		body := call("GET", "/api/v3/checks/"+uuid+"/pings/2/body", p.rw, "")
		Expect(body.Status).To(Equal(http.StatusOK))
		Expect(string(body.Body)).To(Equal("backup done"))
		Expect(body.Header.Get("Content-Type")).To(Equal("text/plain"))
		Expect(call("GET", "/api/v3/checks/"+uuid+"/pings/1/body", p.rw, "").Status).To(Equal(http.StatusNotFound))
		Expect(call("GET", "/api/v3/checks/"+uuid+"/pings/", p.ro, "").Status).To(Equal(http.StatusForbidden))

		c := call("GET", "/api/v3/checks/"+uuid, p.rw, "").JSON()
		Expect(c).To(MatchKeys(IgnoreExtras, Keys{"status": Equal("down"), "n_pings": BeEquivalentTo(3)}))

		flips := call("GET", "/api/v3/checks/"+uuid+"/flips/", p.ro, "")
		Expect(strings.TrimSpace(string(flips.Body))).To(HavePrefix("["))
		var list []map[string]any
		Expect(json.Unmarshal(flips.Body, &list)).To(Succeed())
		Expect(list).To(HaveLen(1))
		Expect(list[0]).To(HaveKeyWithValue("up", BeEquivalentTo(0)))
		for _, q := range []string{"?seconds=-1", "?seconds=31536001", "?start=abc", "?end=", "?start=10000000001"} {
			Expect(call("GET", "/api/v3/checks/"+uuid+"/flips/"+q, p.ro, "").Status).To(Equal(http.StatusBadRequest), q)
		}
		Expect(call("GET", "/api/v3/checks/"+uuid+"/flips/?end=0", p.ro, "").Body).To(MatchJSON("[]"))
		Expect(call("GET", "/api/v3/checks/"+uuid+"/flips/?seconds=3600", p.ro, "").Body).NotTo(MatchJSON("[]"))
	})

	It("reports run statistics over a window, to read-only keys, with validated windows", func() {
		uuid := create(`{"name": "measured", "unique": ["name"]}`)["uuid"].(string)
		for i := range 4 {
			rid := fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", i)
			Expect(call("GET", "/ping/"+uuid+"/start?rid="+rid, "", "").Status).To(Equal(http.StatusOK))
			end := "/ping/" + uuid + "?rid=" + rid
			if i == 3 {
				end = "/ping/" + uuid + "/1?rid=" + rid // exit status 1: a failed run
			}
			Expect(call("GET", end, "", "").Status).To(Equal(http.StatusOK))
		}
		Expect(call("GET", "/ping/"+uuid, "", "").Status).To(Equal(http.StatusOK)) // a run without a start

		r := call("GET", "/api/v3/checks/"+uuid+"/stats/", p.ro, "")
		Expect(r.Status).To(Equal(http.StatusOK), r.String())
		st := r.JSON()
		Expect(st).To(MatchKeys(IgnoreExtras, Keys{
			"window": Equal("7d"), "runs": BeEquivalentTo(5), "successes": BeEquivalentTo(4), "failures": BeEquivalentTo(1),
			"missed": BeEquivalentTo(0), "success_rate": BeEquivalentTo(0.8), "timed_runs": BeEquivalentTo(4),
			"last_success": Not(BeNil()), "partial": BeFalse(), "held_since": BeNil(),
		}))
		Expect(st["duration"]).To(MatchKeys(IgnoreExtras, Keys{"p50": BeNumerically(">=", 0), "p95": BeNumerically(">=", 0),
			"p99": BeNumerically(">=", 0), "max": BeNumerically(">=", 0)}))
		Expect(st["trend"]).To(MatchKeys(IgnoreExtras, Keys{"p95_change": BeNil(), "success_rate_before": BeNil(), "summary": BeNil()}),
			"nothing ran the week before")

		day := call("GET", "/api/v3/checks/"+uuid+"/stats/?window=1d", p.ro, "").JSON()
		Expect(day).To(HaveKeyWithValue("window", "1d"))
		Expect(day).To(HaveKeyWithValue("runs", BeEquivalentTo(5)))

		for _, q := range []string{"?window=0d", "?window=32d", "?window=week", "?window=1d&window=7d"} {
			bad := call("GET", "/api/v3/checks/"+uuid+"/stats/"+q, p.ro, "")
			Expect(bad.Status).To(Equal(http.StatusBadRequest), q)
			Expect(bad.JSON()).To(HaveKey("error"))
		}
		other := newProject()
		Expect(call("GET", "/api/v3/checks/"+uuid+"/stats/", other.ro, "").Status).To(Equal(http.StatusForbidden), "another project's check")
		Expect(call("GET", "/api/v3/checks/"+uuid+"/stats/", "", "").Status).To(Equal(http.StatusUnauthorized))
	})

	It("lists the flip of a fail ping right away, and once when the controller has recorded it", func() {
		uuid := create(`{"name": "flipper"}`)["uuid"].(string)
		Expect(call("GET", "/ping/"+uuid+"/fail", "", "").Status).To(Equal(http.StatusOK))
		flips := func() []map[string]any {
			var list []map[string]any
			Expect(json.Unmarshal(call("GET", "/api/v3/checks/"+uuid+"/flips/", p.rw, "").Body, &list)).To(Succeed())
			return list
		}
		Expect(flips()).To(ConsistOf(HaveKeyWithValue("up", BeEquivalentTo(0))))
		Eventually(func(g Gomega) v1.CheckState {
			var list v1.CheckList
			g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(p.ns))).To(Succeed())
			g.Expect(list.Items).To(HaveLen(1))
			return list.Items[0].Status.State
		}).Should(Equal(v1.CheckStateDown))
		Consistently(flips).WithTimeout(time.Second).Should(HaveLen(1))
	})

	It("lists badges for every tag and the project", func() {
		create(`{"name": "x", "tags": "prod"}`)
		b := call("GET", "/api/v3/badges/", p.ro, "").JSON()["badges"].(map[string]any)
		Expect(b).To(HaveKey("*"))
		Expect(b).To(HaveKey("prod"))
		svg := b["prod"].(map[string]any)["svg"].(string)
		r := call("GET", strings.TrimPrefix(svg, baseURL), "", "")
		Expect(r.Status).To(Equal(http.StatusOK))
		Expect(string(r.Body)).To(ContainSubstring("<svg"))
	})
})
