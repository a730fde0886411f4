package notify

import (
	"net/http"
	"reflect"
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Rocket.Chat's incoming webhook payload as Vigil sends it.
type rocketChatWireMessage struct {
	Alias       string `json:"alias"`
	Text        string `json:"text"`
	Attachments []struct {
		Title     string          `json:"title"`
		TitleLink string          `json:"title_link"`
		Text      string          `json:"text"`
		Color     string          `json:"color"`
		Fields    []chatWireField `json:"fields"`
	} `json:"attachments"`
}

func TestRocketChat(t *testing.T) {
	for _, tc := range []struct {
		name, text, color, reason string
		msg                       Message
	}{
		{"down", "“Nightly backup” is DOWN.", "#d9534f", "Reason: success signal did not arrive on time, grace time passed.", downMessage()},
		{"up", "“Nightly backup” is UP.", "#5cb85c", "", upMessage()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusOK, `{"success":true}`)
			mustSend(t, webhookChatChannel(v1.ChannelRocketChat)(""), tc.msg, webhookChatSecrets(rocketChatHook)(srv.URL))
			req := srv.only(t)
			if req.Method != http.MethodPost || req.Path != "/"+rocketChatHook || req.RawQuery != "" {
				t.Errorf("request %s %s?%s", req.Method, req.Path, req.RawQuery)
			}
			checkHeader(t, req.Header, "Content-Type", "application/json")
			checkUserAgent(t, req.Header)
			var msg rocketChatWireMessage
			decodeStrict(t, req.Body, &msg)
			if msg.Alias != "Vigil" || msg.Text != tc.text || len(msg.Attachments) != 2 {
				t.Fatalf("message %s", req.Body)
			}
			a := msg.Attachments[0]
			if a.Title != "Nightly backup" || a.TitleLink != "https://vigil.example.com/checks/"+fixtureUUID || a.Text != tc.reason || a.Color != tc.color {
				t.Errorf("attachment title %q link %q text %q color %q", a.Title, a.TitleLink, a.Text, a.Color)
			}
			if !reflect.DeepEqual(a.Fields, wantChatFields) {
				t.Errorf("fields\n%+v\nwant\n%+v", a.Fields, wantChatFields)
			}
			body := msg.Attachments[1]
			if body.Title != "Last Ping Body" || body.Text != "```\nbackup done: 3 files\n```" || body.Color != tc.color ||
				body.TitleLink != "" || body.Fields != nil {
				t.Errorf("body attachment %+v", body)
			}
		})
	}
}

// The headline mentions no one, whatever the check's name; a test is
// marked; without a body there is one attachment.
func TestRocketChatMentionsAndTests(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"success":true}`)
	m := downMessage()
	m.Test = true
	m.Check.Name = "@all @here backup"
	m.Check.LastPingBody = nil
	mustSend(t, webhookChatChannel(v1.ChannelRocketChat)(""), m, webhookChatSecrets(rocketChatHook)(srv.URL))
	var msg rocketChatWireMessage
	decodeStrict(t, srv.only(t).Body, &msg)
	if msg.Text != "[Test] “@\u2060all @\u2060here backup” is DOWN." {
		t.Errorf("text %q", msg.Text)
	}
	if len(msg.Attachments) != 1 || msg.Attachments[0].Title != "[Test] @all @here backup" {
		t.Errorf("attachments %+v", msg.Attachments)
	}
}

func TestRocketChatRateLimit(t *testing.T) {
	checkWebhookChatRateLimit(t, v1.ChannelRocketChat, rocketChatHook)
}

func TestRocketChatSettings(t *testing.T) {
	checkSettingsAndSecretRefs(t, webhookChatChannel(v1.ChannelRocketChat)(""), ref("hook", "url"))
}
