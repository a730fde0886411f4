package notify

import (
	"net/http"
	"strings"
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

const gotifyTestToken = "AgotifyAppToken.x9"

var gotifySecrets = map[string]string{"gotify/token": gotifyTestToken}

func gotifyChannel(base string, priority int32) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelGotify, Gotify: &v1.GotifyChannel{
		URL: base, TokenSecretRef: ref("gotify", "token"), Priority: priority}})
}

func init() {
	addHTTPKind(httpKindCase{v1.ChannelGotify, func(base string) *v1.Channel { return gotifyChannel(base, 8) },
		func(string) map[string]string { return gotifySecrets }}, gotifyTestToken)
}

// gotifyWireMessage is a message as Gotify's API (POST /message) and its
// message extras document it.
type gotifyWireMessage struct {
	Title    string `json:"title"`
	Message  string `json:"message"`
	Priority int    `json:"priority"`
	Extras   struct {
		Display struct {
			ContentType string `json:"contentType"`
		} `json:"client::display"`
		Notification *struct {
			Click struct {
				URL string `json:"url"`
			} `json:"click"`
		} `json:"client::notification"`
	} `json:"extras"`
}

func gotifyRequest(t *testing.T, req captured) gotifyWireMessage {
	t.Helper()
	if req.Method != http.MethodPost || req.Path != "/gotify/message" || req.RawQuery != "" {
		t.Errorf("request %s %s?%s, want POST /gotify/message", req.Method, req.Path, req.RawQuery)
	}
	checkHeader(t, req.Header, "X-Gotify-Key", gotifyTestToken)
	checkHeader(t, req.Header, "Content-Type", "application/json")
	checkUserAgent(t, req.Header)
	var g gotifyWireMessage
	decodeStrict(t, req.Body, &g)
	if g.Extras.Display.ContentType != "text/markdown" {
		t.Errorf("contentType %q", g.Extras.Display.ContentType)
	}
	return g
}

func TestGotify(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"id":25,"appid":5}`)
	ch := gotifyChannel(srv.URL+"/gotify", 9)
	mustSend(t, ch, downMessage(), gotifySecrets)
	mustSend(t, ch, upMessage(), gotifySecrets)
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	facts := "\n- **Description:** Backs up the orders database.\n- **Namespace:** team-a\n- **Tags:** `prod db`\n" +
		"- **Period:** 1 day\n- **Total Pings:** 42\n- **Last Ping:** Success, 10 minutes ago\n\n" +
		"**Last ping body:**\n```\nbackup done: 3 files\n```"
	for i, want := range []struct {
		title, message string
		priority       int
	}{
		{"Nightly backup is DOWN", "**[“Nightly backup” is DOWN.](" + phoneDetailsURL + ")**\n\n" +
			"Reason: success signal did not arrive on time, grace time passed.\n" + facts, 9},
		{"Nightly backup is UP", "**[“Nightly backup” is UP.](" + phoneDetailsURL + ")**\n" + facts, 5},
	} {
		g := gotifyRequest(t, reqs[i])
		if g.Title != want.title || g.Message != want.message || g.Priority != want.priority {
			t.Errorf("message %d: title %q priority %d message\n%q\nwant %q %d\n%q", i, g.Title, g.Priority, g.Message, want.title, want.priority, want.message)
		}
		if g.Extras.Notification == nil || g.Extras.Notification.Click.URL != phoneDetailsURL {
			t.Errorf("message %d: client::notification %+v", i, g.Extras.Notification)
		}
	}
}

func TestGotifyWithoutLink(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{}`)
	m := downMessage()
	m.Check.DetailsURL = ""
	mustSend(t, gotifyChannel(srv.URL+"/gotify", 8), m, gotifySecrets)
	g := gotifyRequest(t, srv.only(t))
	if g.Extras.Notification != nil || !strings.HasPrefix(g.Message, "**“Nightly backup” is DOWN.**\n") {
		t.Errorf("client::notification %+v, message %q", g.Extras.Notification, g.Message)
	}
}

func TestGotifyPriority(t *testing.T) {
	failure := downMessage()
	failure.Notice = monitor.NoticeFailure
	maintenance := downMessage()
	maintenance.Notice, maintenance.Held = "maintenance-start", "patching"
	for _, tc := range []struct {
		name     string
		priority int32
		msg      Message
		want     int
	}{
		{"down at the channel's priority", 3, downMessage(), 3},
		{"down silent at 0", 0, downMessage(), 0},
		{"down bounded", 42, downMessage(), 10},
		{"failure at the channel's priority", 7, failure, 7},
		{"up at 5", 10, upMessage(), 5},
		{"maintenance at 5", 10, maintenance, 5},
	} {
		if got := gotifyMessageOf(&tc.msg, tc.priority).Priority; got != tc.want {
			t.Errorf("%s: priority %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestGotifyErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ch       *v1.Channel
		secrets  map[string]string
		contains string
	}{
		{"without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelGotify}), nil, "no gotify settings"},
		{"token with a new line inside", gotifyChannel("http://gotify.example.com", 8), map[string]string{"gotify/token": "Aabc\r\nX-Evil: 1"}, "control characters"},
		{"no URL", gotifyChannel("", 8), gotifySecrets, "not an absolute http"},
	} {
		err := send(t, tc.ch, downMessage(), tc.secrets)
		if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: Send = %v, want a permanent error containing %q", tc.name, err, tc.contains)
		}
	}
	k, _ := Lookup(v1.ChannelGotify)
	if got := k.SecretRefs(&gotifyChannel("", 8).Spec); len(got) != 1 || got[0] != ref("gotify", "token") {
		t.Errorf("SecretRefs = %v", got)
	}
}

func TestGotifyRateLimit(t *testing.T) {
	expectRetryAfter429(t, func(base string) *v1.Channel { return gotifyChannel(base, 8) }, gotifySecrets)
}
