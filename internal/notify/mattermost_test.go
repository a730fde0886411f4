package notify

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

const (
	mattermostHook = "hooks/mattermostHookSecret7x9"
	rocketChatHook = "hooks/rcHookIDSecret42/rcHookTokenSecret77"
)

func init() {
	addHTTPKind(httpKindCase{v1.ChannelMattermost, webhookChatChannel(v1.ChannelMattermost), webhookChatSecrets(mattermostHook)},
		"mattermostHookSecret7x9")
	addHTTPKind(httpKindCase{v1.ChannelRocketChat, webhookChatChannel(v1.ChannelRocketChat), webhookChatSecrets(rocketChatHook)},
		"rcHookIDSecret42", "rcHookTokenSecret77")
	addHTTPKind(httpKindCase{v1.ChannelGoogleChat, webhookChatChannel(v1.ChannelGoogleChat), webhookChatSecrets(googleChatHook)},
		"gchatKeySecret31", "gchatTokenSecret64")
}

// webhookChatChannel is a Channel of a kind whose webhook URL (in the
// Secret "hook", key "url") is its only setting.
func webhookChatChannel(kind v1.ChannelKind) func(string) *v1.Channel {
	return func(string) *v1.Channel {
		iw := &v1.IncomingWebhookChannel{URLSecretRef: ref("hook", "url")}
		spec := v1.ChannelSpec{Kind: kind}
		switch kind {
		case v1.ChannelMattermost:
			spec.Mattermost = iw
		case v1.ChannelRocketChat:
			spec.RocketChat = iw
		case v1.ChannelGoogleChat:
			spec.GoogleChat = iw
		}
		return testChannel(spec)
	}
}

// webhookChatSecrets points the webhook URL at base.
func webhookChatSecrets(pathAndQuery string) func(string) map[string]string {
	return func(base string) map[string]string { return map[string]string{"hook/url": base + "/" + pathAndQuery} }
}

// Mattermost's incoming webhook payload as Vigil sends it.
type mattermostWireMessage struct {
	Username    string `json:"username"`
	Attachments []struct {
		Fallback  string          `json:"fallback"`
		Color     string          `json:"color"`
		Title     string          `json:"title"`
		TitleLink string          `json:"title_link"`
		Text      string          `json:"text"`
		Fields    []chatWireField `json:"fields"`
	} `json:"attachments"`
}

// chatWireField is a Slack-style attachment field.
type chatWireField struct {
	Title string `json:"title"`
	Value string `json:"value"`
	Short bool   `json:"short"`
}

// wantChatFields are the fixture's facts as Markdown fields.
var wantChatFields = []chatWireField{
	{"Description", "Backs up the orders database.", false},
	{"Namespace", "team-a", true},
	{"Tags", "`prod` `db`", true},
	{"Period", "1 day", true},
	{"Total Pings", "42", true},
	{"Last Ping", "Success, 10 minutes ago", true},
}

func TestMattermost(t *testing.T) {
	bodyField := chatWireField{"Last Ping Body", "```\nbackup done: 3 files\n```", false}
	for _, tc := range []struct {
		name, title, color, text string
		msg                      Message
	}{
		{"down", "“Nightly backup” is DOWN.", "#d9534f", "Reason: success signal did not arrive on time, grace time passed.", downMessage()},
		{"up", "“Nightly backup” is UP.", "#5cb85c", "", upMessage()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusOK, "ok")
			mustSend(t, webhookChatChannel(v1.ChannelMattermost)(""), tc.msg, webhookChatSecrets(mattermostHook)(srv.URL))
			req := srv.only(t)
			if req.Method != http.MethodPost || req.Path != "/"+mattermostHook || req.RawQuery != "" {
				t.Errorf("request %s %s?%s", req.Method, req.Path, req.RawQuery)
			}
			checkHeader(t, req.Header, "Content-Type", "application/json")
			checkUserAgent(t, req.Header)
			var msg mattermostWireMessage
			decodeStrict(t, req.Body, &msg)
			if msg.Username != "Vigil" || len(msg.Attachments) != 1 {
				t.Fatalf("message %s", req.Body)
			}
			a := msg.Attachments[0]
			if a.Fallback != tc.title || a.Title != tc.title || a.Color != tc.color || a.Text != tc.text ||
				a.TitleLink != "https://vigil.example.com/checks/"+fixtureUUID {
				t.Errorf("attachment fallback %q title %q color %q text %q link %q", a.Fallback, a.Title, a.Color, a.Text, a.TitleLink)
			}
			if want := append(append([]chatWireField(nil), wantChatFields...), bodyField); !reflect.DeepEqual(a.Fields, want) {
				t.Errorf("fields\n%+v\nwant\n%+v", a.Fields, want)
			}
		})
	}
}

// Mattermost reads Markdown in the text and the field values, and in the
// title when it has no link: the check's words are escaped there.
func TestMattermostEscaping(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "ok")
	m := downMessage()
	m.Check.Name = "*db*_[x](y)"
	m.Check.DetailsURL = ""
	m.Check.Desc = "# not a heading <b>"
	m.Check.Schedule, m.Check.Tags = "*/5 * * * *", []string{"a`b"}
	m.Check.LastPingBody = []byte("```\ninjected\n```")
	mustSend(t, webhookChatChannel(v1.ChannelMattermost)(""), m, webhookChatSecrets(mattermostHook)(srv.URL))
	var msg mattermostWireMessage
	decodeStrict(t, srv.only(t).Body, &msg)
	a := msg.Attachments[0]
	if a.Title != `“\*db\*\_\[x\](y)” is DOWN.` || a.TitleLink != "" || a.Fallback != "“*db*_[x](y)” is DOWN." {
		t.Errorf("title %q link %q fallback %q", a.Title, a.TitleLink, a.Fallback)
	}
	fields := map[string]string{}
	for _, f := range a.Fields {
		fields[f.Title] = f.Value
	}
	for title, want := range map[string]string{
		"Description":    `\# not a heading \<b\>`,
		"Schedule":       "`*/5 * * * *`",
		"Tags":           "``a`b``",
		"Last Ping Body": "````\n```\ninjected\n```\n````",
	} {
		if fields[title] != want {
			t.Errorf("field %s = %q, want %q", title, fields[title], want)
		}
	}
}

func TestMattermostRateLimit(t *testing.T) {
	checkWebhookChatRateLimit(t, v1.ChannelMattermost, mattermostHook)
}

// checkWebhookChatRateLimit: a 429 with Retry-After is a retryable
// StatusError carrying the delay.
func checkWebhookChatRateLimit(t *testing.T, kind v1.ChannelKind, hook string) {
	t.Helper()
	srv := newRecorder(t, http.StatusTooManyRequests, "rate limited")
	srv.header.Set("Retry-After", "12")
	err := send(t, webhookChatChannel(kind)(""), downMessage(), webhookChatSecrets(hook)(srv.URL))
	var se *StatusError
	if !errors.As(err, &se) || se.RetryAfter != 12*time.Second || IsPermanent(err) {
		t.Errorf("Send = %v (StatusError %+v), want a retryable error retrying after 12s", err, se)
	}
	if err != nil {
		checkNoCredentials(t, err)
	}
}

// checkSettingsAndSecretRefs: a Channel of kind without its settings is a
// permanent error naming them, and the kind lists exactly want as the
// Secret keys ch reads.
func checkSettingsAndSecretRefs(t *testing.T, ch *v1.Channel, want ...v1.SecretKeyRef) {
	t.Helper()
	kind := ch.Spec.Kind
	k, ok := Lookup(kind)
	if !ok {
		t.Fatalf("kind %q is not registered", kind)
	}
	if got := k.SecretRefs(&ch.Spec); !reflect.DeepEqual(got, want) {
		t.Errorf("SecretRefs = %v, want %v", got, want)
	}
	empty := v1.ChannelSpec{Kind: kind}
	if got := k.SecretRefs(&empty); got != nil {
		t.Errorf("SecretRefs without settings = %v", got)
	}
	err := send(t, testChannel(empty), downMessage(), nil)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "the channel has no "+string(kind)+" settings") {
		t.Errorf("Send without settings = %v", err)
	}
}

func TestMattermostSettings(t *testing.T) {
	checkSettingsAndSecretRefs(t, webhookChatChannel(v1.ChannelMattermost)(""), ref("hook", "url"))
}
