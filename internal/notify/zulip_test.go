package notify

import (
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

const (
	zulipBotEmail = "vigil-bot@example.zulipchat.com"
	zulipAPIKey   = "zulipApiKeySecret0123456789"
)

func init() {
	addHTTPKind(httpKindCase{v1.ChannelZulip, zulipChannel, zulipSecrets}, zulipAPIKey,
		base64.StdEncoding.EncodeToString([]byte(zulipBotEmail+":"+zulipAPIKey)))
}

func zulipChannel(base string) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelZulip, Zulip: &v1.ZulipChannel{
		Site: base, BotEmail: zulipBotEmail, APIKeySecretRef: ref("zulip", "key"), Type: "stream", To: "ops"}})
}

func zulipSecrets(string) map[string]string {
	return map[string]string{"zulip/key": zulipAPIKey + "\n"}
}

// zulipForm decodes a request's form, which must hold exactly want's keys,
// once each.
func zulipRequestForm(t *testing.T, req captured, keys ...string) url.Values {
	t.Helper()
	form, err := url.ParseQuery(string(req.Body))
	if err != nil {
		t.Fatalf("body %q: %v", req.Body, err)
	}
	if len(form) != len(keys) {
		t.Errorf("form %v, want the keys %v", form, keys)
	}
	for _, k := range keys {
		if len(form[k]) != 1 {
			t.Errorf("form %s = %q, want one value", k, form[k])
		}
	}
	return form
}

func TestZulip(t *testing.T) {
	facts := "\n\n- **Description:** Backs up the orders database.\n- **Namespace:** team-a\n- **Tags:** `prod db`" +
		"\n- **Period:** 1 day\n- **Total Pings:** 42\n- **Last Ping:** Success, 10 minutes ago" +
		"\n\n**Last ping body:**\n```\nbackup done: 3 files\n```"
	link := "(https://vigil.example.com/checks/" + fixtureUUID + ")"
	for _, tc := range []struct {
		name, content string
		msg           Message
	}{
		{"down", "**[“Nightly backup” is DOWN.]" + link + "**\nReason: success signal did not arrive on time, grace time passed." + facts, downMessage()},
		{"up", "**[“Nightly backup” is UP.]" + link + "**" + facts, upMessage()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusOK, `{"result":"success","msg":"","id":42}`)
			mustSend(t, zulipChannel(srv.URL), tc.msg, zulipSecrets(srv.URL))
			req := srv.only(t)
			if req.Method != http.MethodPost || req.Path != "/api/v1/messages" || req.RawQuery != "" {
				t.Errorf("request %s %s?%s", req.Method, req.Path, req.RawQuery)
			}
			checkHeader(t, req.Header, "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(zulipBotEmail+":"+zulipAPIKey)))
			checkHeader(t, req.Header, "Content-Type", "application/x-www-form-urlencoded")
			checkUserAgent(t, req.Header)
			form := zulipRequestForm(t, req, "type", "to", "topic", "content")
			if form.Get("type") != "stream" || form.Get("to") != "ops" || form.Get("topic") != "Nightly backup" {
				t.Errorf("type %q to %q topic %q", form.Get("type"), form.Get("to"), form.Get("topic"))
			}
			if got := form.Get("content"); got != tc.content {
				t.Errorf("content:\n%s\nwant:\n%s", got, tc.content)
			}
		})
	}
}

func TestZulipTopics(t *testing.T) {
	for _, tc := range []struct {
		name, topic, check, want string
	}{
		{"the channel's topic", "Cron jobs", "Nightly backup", "Cron jobs"},
		{"the check's name", "", "Nightly  backup\n(db)", "Nightly backup (db)"},
		{"cut to 60 characters", "", strings.Repeat("ö", 70), strings.Repeat("ö", 59) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusOK, `{"result":"success"}`)
			ch := zulipChannel(srv.URL + "/")
			ch.Spec.Zulip.Topic = tc.topic
			m := upMessage()
			m.Check.Name = tc.check
			mustSend(t, ch, m, zulipSecrets(srv.URL))
			req := srv.only(t)
			if req.Path != "/api/v1/messages" {
				t.Errorf("path %s", req.Path)
			}
			if got := zulipRequestForm(t, req, "type", "to", "topic", "content").Get("topic"); got != tc.want {
				t.Errorf("topic %q, want %q", got, tc.want)
			}
		})
	}
}

func TestZulipDirectMessages(t *testing.T) {
	for _, tc := range []struct {
		to, want string
	}{
		{"alice@example.com", `["alice@example.com"]`},
		{" alice@example.com, bob@example.com ,", `["alice@example.com","bob@example.com"]`},
		{"8, 13", `[8,13]`},
		{"8, bob@example.com", `["8","bob@example.com"]`},
	} {
		srv := newRecorder(t, http.StatusOK, `{"result":"success"}`)
		ch := zulipChannel(srv.URL)
		ch.Spec.Zulip.Type, ch.Spec.Zulip.To = "private", tc.to
		mustSend(t, ch, downMessage(), zulipSecrets(srv.URL))
		form := zulipRequestForm(t, srv.only(t), "type", "to", "content")
		if form.Get("type") != "private" || form.Get("to") != tc.want {
			t.Errorf("to %q: sent type %q to %q, want %s", tc.to, form.Get("type"), form.Get("to"), tc.want)
		}
	}
	for _, bad := range []v1.ZulipChannel{{Type: "private", To: " , "}, {Type: "stream", To: " "}, {Type: "broadcast", To: "ops"}} {
		srv := newRecorder(t, http.StatusOK, `{"result":"success"}`)
		ch := zulipChannel(srv.URL)
		ch.Spec.Zulip.Type, ch.Spec.Zulip.To = bad.Type, bad.To
		if err := send(t, ch, downMessage(), zulipSecrets(srv.URL)); err == nil || !IsPermanent(err) {
			t.Errorf("%+v: Send = %v, want a permanent error", bad, err)
		}
		if n := len(srv.requests()); n != 0 {
			t.Errorf("%+v: %d requests sent", bad, n)
		}
	}
}

func TestZulipEscaping(t *testing.T) {
	for in, want := range map[string]string{
		"db-backup (nightly)":            `db-backup \(nightly\)`,
		"@**all** and #**general**":      `@\*\*all\*\* and \#\*\*general\*\*`,
		"a_b [x](http://e) `c` > q \\ d": "a\\_b \\[x\\]\\(http://e\\) \\`c\\` \\> q \\\\ d",
		"100% <b> ~ | $":                 `100% <b\> ~ | $`,
	} {
		if got := zulipEscape(in); got != want {
			t.Errorf("zulipEscape(%q) = %q, want %q", in, got, want)
		}
	}
	srv := newRecorder(t, http.StatusOK, `{"result":"success"}`)
	m := downMessage()
	m.Check.Name = "@**all**"
	m.Check.Schedule = "*/5 * * * *"
	m.Check.LastPingBody = []byte("```\ndone\n```")
	m.Check.DetailsURL = "https://vigil.example.com/checks/(x) y"
	mustSend(t, zulipChannel(srv.URL), m, zulipSecrets(srv.URL))
	content := zulipRequestForm(t, srv.only(t), "type", "to", "topic", "content").Get("content")
	for _, want := range []string{
		`**[“@\*\*all\*\*” is DOWN.](https://vigil.example.com/checks/%28x%29%20y)**`,
		"- **Schedule:** `*/5 * * * *`",
		"````\n```\ndone\n```\n````",
	} {
		if !strings.Contains(content, want) {
			t.Errorf("content lacks %q:\n%s", want, content)
		}
	}
}

// Long descriptions and texts are cut so the content stays within
// Zulip's 10,000 bytes.
func TestZulipContentLimit(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"result":"success"}`)
	m := downMessage()
	m.Check.Desc = strings.Repeat("très *long* ", 900)
	m.Text = strings.Repeat("€", 4000)
	m.Check.LastPingBody = []byte(strings.Repeat("x", 3000))
	mustSend(t, zulipChannel(srv.URL), m, zulipSecrets(srv.URL))
	content := zulipRequestForm(t, srv.only(t), "type", "to", "topic", "content").Get("content")
	if len(content) > 10000 || len(content) < 2000 {
		t.Errorf("content is %d bytes", len(content))
	}
	if !strings.Contains(content, `très \*long\*`) || !strings.Contains(content, "…") || !strings.Contains(content, "[truncated]") {
		t.Errorf("content lost its parts: %.300s", content)
	}
}

// The Authorization header carries the API key in base64: a server that
// echoes it does not put it in the error.
func TestZulipErrorsHideTheEncodedKey(t *testing.T) {
	srv := echoServer(t, http.StatusBadRequest, nil)
	err := send(t, zulipChannel(srv.URL), downMessage(), zulipSecrets(srv.URL))
	if err == nil || !IsPermanent(err) {
		t.Fatalf("Send = %v, want a permanent error", err)
	}
	encoded := base64.StdEncoding.EncodeToString([]byte(zulipBotEmail + ":" + zulipAPIKey))
	if strings.Contains(err.Error(), encoded[:16]) || !strings.Contains(err.Error(), `auth="Basic [redacted]"`) {
		t.Errorf("error %v", err)
	}
	var se *StatusError
	if !errors.As(err, &se) || strings.Contains(se.Body, encoded[:16]) {
		t.Errorf("StatusError %+v", se)
	}
}

func TestZulipRateLimit(t *testing.T) {
	srv := newRecorder(t, http.StatusTooManyRequests, `{"result":"error","msg":"API usage exceeded rate limit","retry-after":28.706807374954224,"code":"RATE_LIMIT_HIT"}`)
	srv.header.Set("Retry-After", "29")
	err := send(t, zulipChannel(srv.URL), downMessage(), zulipSecrets(srv.URL))
	var se *StatusError
	if !errors.As(err, &se) || se.RetryAfter != 29*time.Second || IsPermanent(err) {
		t.Errorf("Send = %v (StatusError %+v), want a retryable error retrying after 29s", err, se)
	}
}

func TestZulipSettings(t *testing.T) {
	checkSettingsAndSecretRefs(t, zulipChannel(""), ref("zulip", "key"))
}
