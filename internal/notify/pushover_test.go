package notify

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

const (
	pushoverTestToken = "azGDORePK8gMaC0QOYAMyEEuzJnyUi"
	pushoverTestUser  = "uQiRzpo4DXghDmr9QzzfQu27cmVRsG"
)

var pushoverSecrets = map[string]string{"pushover/token": pushoverTestToken, "pushover/user": pushoverTestUser}

func pushoverChannel(base string, priority, upPriority int32) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelPushover, Pushover: &v1.PushoverChannel{
		TokenSecretRef: ref("pushover", "token"), UserKeySecretRef: ref("pushover", "user"),
		Priority: priority, UpPriority: upPriority, Retry: 60, Expire: 1800, Sound: "siren", URL: base}})
}

func init() {
	addHTTPKind(httpKindCase{v1.ChannelPushover, func(base string) *v1.Channel { return pushoverChannel(base, 1, 0) },
		func(string) map[string]string { return pushoverSecrets }}, pushoverTestToken, pushoverTestUser)
}

// pushoverRequest checks a request to Pushover's API and returns its form.
func pushoverRequest(t *testing.T, req captured, path string) url.Values {
	t.Helper()
	if req.Method != http.MethodPost || req.Path != path || req.RawQuery != "" {
		t.Errorf("request %s %s?%s, want POST %s", req.Method, req.Path, req.RawQuery, path)
	}
	checkHeader(t, req.Header, "Content-Type", "application/x-www-form-urlencoded")
	checkUserAgent(t, req.Header)
	form, err := url.ParseQuery(string(req.Body))
	if err != nil {
		t.Fatalf("body %q is not form-encoded: %v", req.Body, err)
	}
	return form
}

const pushoverFacts = "<b>Description:</b> Backs up the orders database.\n<b>Namespace:</b> team-a\n" +
	"<b>Tags:</b> prod db\n<b>Period:</b> 1 day\n<b>Total Pings:</b> 42\n<b>Last Ping:</b> Success, 10 minutes ago\n\n" +
	"<b>Last ping body:</b>\nbackup done: 3 files"

func TestPushover(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"status":1,"request":"647d2300-702c-4b38-8b2f-d56326ae460b"}`)
	ch := pushoverChannel(srv.URL, 1, -1)
	mustSend(t, ch, downMessage(), pushoverSecrets)
	mustSend(t, ch, upMessage(), pushoverSecrets)
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	common := map[string]string{
		"token": pushoverTestToken, "user": pushoverTestUser, "html": "1", "sound": "siren",
		"timestamp": "1714564800", "url": phoneDetailsURL, "url_title": "Check details",
	}
	with := func(kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range common {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	formExactly(t, pushoverRequest(t, reqs[0], "/1/messages.json"), with(
		"title", "Nightly backup is DOWN", "priority", "1",
		"message", "Reason: success signal did not arrive on time, grace time passed.\n\n"+pushoverFacts))
	formExactly(t, pushoverRequest(t, reqs[1], "/1/messages.json"), with(
		"title", "Nightly backup is UP", "priority", "-1", "message", pushoverFacts))
}

func TestPushoverPriority(t *testing.T) {
	realert := downMessage()
	realert.Notice = monitor.NoticeRealert
	failure := downMessage()
	failure.Notice = monitor.NoticeFailure
	maintenance := downMessage()
	maintenance.Notice, maintenance.Held = "maintenance-end", "patching"
	for _, tc := range []struct {
		name          string
		priority, up  int32
		msg           Message
		want          string
		wantEmergency bool
	}{
		{"down at the channel's priority", -1, 0, downMessage(), "-1", false},
		{"down as an emergency", 2, 0, downMessage(), "2", true},
		{"re-alert as an emergency", 2, 0, realert, "2", true},
		{"up at upPriority", 2, -2, upMessage(), "-2", false},
		{"maintenance at upPriority", 1, 0, maintenance, "0", false},
		{"failure never an emergency", 2, 0, failure, "1", false},
		{"failure at a lower priority", -1, 0, failure, "-1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := pushoverForm(pushoverChannel("", tc.priority, tc.up).Spec.Pushover, &tc.msg, "t", "u")
			if got := form.Get("priority"); got != tc.want {
				t.Errorf("priority %q, want %q", got, tc.want)
			}
			emergency := form.Get("retry") == "60" && form.Get("expire") == "1800" && form.Get("tags") == "vigil-"+fixtureUUID
			hasAny := form.Has("retry") || form.Has("expire") || form.Has("tags")
			if emergency != tc.wantEmergency || hasAny != tc.wantEmergency {
				t.Errorf("retry %q expire %q tags %q, want them set: %v", form.Get("retry"), form.Get("expire"), form.Get("tags"), tc.wantEmergency)
			}
		})
	}
}

func TestPushoverEmergencyBounds(t *testing.T) {
	s := pushoverChannel("", 2, 0).Spec.Pushover
	s.Retry, s.Expire = 0, 0 // not defaulted: Pushover's minimums and the CRD's defaults
	m := downMessage()
	if f := pushoverForm(s, &m, "t", "u"); f.Get("retry") != "300" || f.Get("expire") != "3600" {
		t.Errorf("retry %q expire %q, want the defaults", f.Get("retry"), f.Get("expire"))
	}
	s.Retry, s.Expire = 10, 99999
	if f := pushoverForm(s, &m, "t", "u"); f.Get("retry") != "30" || f.Get("expire") != "10800" {
		t.Errorf("retry %q expire %q, want them within Pushover's bounds", f.Get("retry"), f.Get("expire"))
	}
}

// TestPushoverEmergencyCancelledOnUp: an emergency down repeats until
// acknowledged; its up cancels it by tag, then says it is up. A test's
// tag is apart from the real one.
func TestPushoverEmergencyCancelledOnUp(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"status":1,"request":"x"}`)
	ch := pushoverChannel(srv.URL+"/po", 2, 0)
	mustSend(t, ch, downMessage(), pushoverSecrets)
	mustSend(t, ch, upMessage(), pushoverSecrets)
	test := upMessage()
	test.Test = true
	mustSend(t, ch, test, pushoverSecrets)
	reqs := srv.requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	if down := pushoverRequest(t, reqs[0], "/po/1/messages.json"); down.Get("tags") != "vigil-"+fixtureUUID || down.Get("priority") != "2" {
		t.Errorf("down tags %q priority %q", down.Get("tags"), down.Get("priority"))
	}
	for i, tag := range map[int]string{1: "vigil-" + fixtureUUID, 3: "vigil-test-" + fixtureUUID} {
		formExactly(t, pushoverRequest(t, reqs[i], "/po/1/receipts/cancel_by_tag/"+tag+".json"), map[string]string{"token": pushoverTestToken})
		up := pushoverRequest(t, reqs[i+1], "/po/1/messages.json")
		if up.Get("priority") != "0" || up.Has("tags") || !strings.HasSuffix(up.Get("title"), "Nightly backup is UP") {
			t.Errorf("up %d: priority %q tags %q title %q", i, up.Get("priority"), up.Get("tags"), up.Get("title"))
		}
	}
	if got := pushoverTag(&Message{Check: CheckInfo{Namespace: "team-a", Object: "nightly/backup?x"}}); got != "vigil-team-a-nightly-backup-x" {
		t.Errorf("tag without a UUID %q", got)
	}
}

func TestPushoverLimits(t *testing.T) {
	t.Run("title", func(t *testing.T) {
		m := downMessage()
		m.Subject = strings.Repeat("é", 300)
		f := pushoverForm(pushoverChannel("", 0, 0).Spec.Pushover, &m, "t", "u")
		if n := utf8.RuneCountInString(f.Get("title")); n != pushoverTitleMax || !strings.HasSuffix(f.Get("title"), "…") {
			t.Errorf("title of %d characters", n)
		}
	})
	t.Run("excerpt shortened", func(t *testing.T) {
		m := downMessage()
		m.Check.LastPingBody = []byte(strings.Repeat("<line> & more\n", 100))
		f := pushoverForm(pushoverChannel("", 0, 0).Spec.Pushover, &m, "t", "u")
		msg := f.Get("message")
		if n := utf8.RuneCountInString(msg); n > pushoverMessageMax || n < pushoverMessageMax-30 || f.Get("html") != "1" ||
			!strings.Contains(msg, "<b>Last ping body:</b>\n&lt;line&gt; &amp; more\n") || !strings.HasSuffix(msg, "\n[truncated]") {
			t.Errorf("message of %d characters, html %q: …%q", n, f.Get("html"), msg[len(msg)-60:])
		}
	})
	t.Run("plain text when even the facts are too long", func(t *testing.T) {
		m := downMessage()
		m.Check.Desc = strings.Repeat("<d> ", 500)
		f := pushoverForm(pushoverChannel("", 0, 0).Spec.Pushover, &m, "t", "u")
		msg := f.Get("message")
		if n := utf8.RuneCountInString(msg); n != pushoverMessageMax || f.Has("html") ||
			!strings.HasPrefix(msg, "Reason: success signal") || !strings.Contains(msg, "Description: <d> <d>") {
			t.Errorf("message of %d characters, html %q: %q…", n, f.Get("html"), msg[:60])
		}
	})
	t.Run("a link too long stays in the message", func(t *testing.T) {
		m := downMessage()
		m.Check.DetailsURL = "https://vigil.example.com/checks/" + strings.Repeat("x", 500)
		f := pushoverForm(pushoverChannel("", 0, 0).Spec.Pushover, &m, "t", "u")
		if f.Has("url") || f.Has("url_title") || !strings.HasPrefix(f.Get("message"), `<b><a href="`+m.Check.DetailsURL+`">`) {
			t.Errorf("url %q, message %.80q", f.Get("url"), f.Get("message"))
		}
	})
}

func TestPushoverOnlyDocumentedTags(t *testing.T) {
	m := downMessage()
	m.Check.Schedule, m.Check.TZ = "0 3 * * *", "Europe/Paris"
	msg, html := pushoverMessage(&m, true)
	if !html || strings.Contains(msg, "<code>") || strings.Contains(msg, "<pre>") ||
		!strings.Contains(msg, "<b>Schedule:</b> 0 3 * * *\n") {
		t.Errorf("message %q", msg)
	}
}

func TestPushoverErrors(t *testing.T) {
	err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelPushover}), downMessage(), nil)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "no pushover settings") {
		t.Errorf("Send = %v", err)
	}
	k, _ := Lookup(v1.ChannelPushover)
	if got := k.SecretRefs(&pushoverChannel("", 0, 0).Spec); len(got) != 2 || got[0] != ref("pushover", "token") || got[1] != ref("pushover", "user") {
		t.Errorf("SecretRefs = %v", got)
	}
}

func TestPushoverRateLimit(t *testing.T) {
	expectRetryAfter429(t, func(base string) *v1.Channel { return pushoverChannel(base, 0, 0) }, pushoverSecrets)
}
