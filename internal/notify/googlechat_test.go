package notify

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

const googleChatHook = "v1/spaces/AAAAspace1/messages?key=gchatKeySecret31&token=gchatTokenSecret64%3D"

// A Google Chat message with one cardsV2 card, as Vigil sends it.
type googleChatWireMessage struct {
	Text   string `json:"text"`
	Thread struct {
		ThreadKey string `json:"threadKey"`
	} `json:"thread"`
	CardsV2 []struct {
		CardID string `json:"cardId"`
		Card   struct {
			Header struct {
				Title string `json:"title"`
			} `json:"header"`
			Sections []struct {
				Header  string             `json:"header"`
				Widgets []googleChatWidget `json:"widgets"`
			} `json:"sections"`
		} `json:"card"`
	} `json:"cardsV2"`
}

// googleChatWidgetLine describes a widget as one line, checking that it is
// exactly one kind of widget.
func googleChatWidgetLine(t *testing.T, w googleChatWidget) string {
	t.Helper()
	var lines []string
	if p := w.TextParagraph; p != nil {
		lines = append(lines, "paragraph: "+p.Text)
	}
	if d := w.DecoratedText; d != nil {
		if !d.WrapText {
			t.Errorf("decoratedText %q does not wrap", d.TopLabel)
		}
		lines = append(lines, "decorated: "+d.TopLabel+" = "+d.Text)
	}
	if b := w.ButtonList; b != nil {
		for _, btn := range b.Buttons {
			lines = append(lines, "button: "+btn.Text+" -> "+btn.OnClick.OpenLink.URL)
		}
	}
	if len(lines) != 1 {
		t.Errorf("widget %+v is not exactly one widget", w)
	}
	return strings.Join(lines, "; ")
}

func TestGoogleChat(t *testing.T) {
	details := "https://vigil.example.com/checks/" + fixtureUUID
	facts := []string{
		"decorated: Description = Backs up the orders database.",
		"decorated: Namespace = team-a",
		"decorated: Tags = prod db",
		"decorated: Period = 1 day",
		"decorated: Total Pings = 42",
		"decorated: Last Ping = Success, 10 minutes ago",
		"button: View in Vigil -> " + details,
	}
	for _, tc := range []struct {
		name, text string
		msg        Message
		widgets    []string
	}{
		{"down", "“Nightly backup” is DOWN.", downMessage(),
			append([]string{"paragraph: Reason: success signal did not arrive on time, grace time passed."}, facts...)},
		{"up", "“Nightly backup” is UP.", upMessage(), facts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusOK, `{"name":"spaces/AAAAspace1/messages/x"}`)
			mustSend(t, webhookChatChannel(v1.ChannelGoogleChat)(""), tc.msg, webhookChatSecrets(googleChatHook)(srv.URL))
			req := srv.only(t)
			if req.Method != http.MethodPost || req.Path != "/v1/spaces/AAAAspace1/messages" {
				t.Errorf("request %s %s", req.Method, req.Path)
			}
			q, err := url.ParseQuery(req.RawQuery)
			if err != nil || len(q) != 3 || q.Get("key") != "gchatKeySecret31" || q.Get("token") != "gchatTokenSecret64=" ||
				q.Get("messageReplyOption") != "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD" {
				t.Errorf("query %q", req.RawQuery)
			}
			checkHeader(t, req.Header, "Content-Type", "application/json")
			checkUserAgent(t, req.Header)
			var msg googleChatWireMessage
			decodeStrict(t, req.Body, &msg)
			if msg.Text != tc.text || msg.Thread.ThreadKey != "vigil-"+fixtureUUID || len(msg.CardsV2) != 1 {
				t.Fatalf("text %q thread %q, %d cards", msg.Text, msg.Thread.ThreadKey, len(msg.CardsV2))
			}
			card := msg.CardsV2[0]
			if card.CardID != "vigil" || card.Card.Header.Title != "Nightly backup" || len(card.Card.Sections) != 2 {
				t.Fatalf("card %+v", card)
			}
			var got []string
			for _, w := range card.Card.Sections[0].Widgets {
				got = append(got, googleChatWidgetLine(t, w))
			}
			if strings.Join(got, "\n") != strings.Join(tc.widgets, "\n") {
				t.Errorf("widgets:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.widgets, "\n"))
			}
			body := card.Card.Sections[1]
			if body.Header != "Last Ping Body" || len(body.Widgets) != 1 {
				t.Errorf("body section %+v", body)
			}
			if line := googleChatWidgetLine(t, body.Widgets[0]); line != "paragraph: backup done: 3 files" {
				t.Errorf("body widget %q", line)
			}
		})
	}
}

// Card text is HTML and the fallback text is Chat's own formatting: the
// check's words are escaped in one and mention no one in the other. Test
// messages have a thread of their own; a threadKey in the URL gives way.
func TestGoogleChatEscapingThreadsAndTests(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{}`)
	m := downMessage()
	m.Test = true
	m.Check.Name = "<users/all> & co"
	m.Check.Desc = "line 1\n<b>line 2</b>"
	m.Check.DetailsURL = ""
	m.Check.LastPingBody = []byte("a < b\nc")
	hook := "v1/spaces/S/messages?key=gchatKeySecret31&token=gchatTokenSecret64&threadKey=fixed&messageReplyOption=REPLY_MESSAGE_OR_FAIL"
	mustSend(t, webhookChatChannel(v1.ChannelGoogleChat)(""), m, webhookChatSecrets(hook)(srv.URL))
	req := srv.only(t)
	q, _ := url.ParseQuery(req.RawQuery)
	if q.Has("threadKey") || q.Get("messageReplyOption") != "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD" || len(q["messageReplyOption"]) != 1 {
		t.Errorf("query %q", req.RawQuery)
	}
	var msg googleChatWireMessage
	decodeStrict(t, req.Body, &msg)
	if msg.Text != "[Test] “<\u2060users/all> & co” is DOWN." || msg.Thread.ThreadKey != "vigil-test-"+fixtureUUID {
		t.Errorf("text %q thread %q", msg.Text, msg.Thread.ThreadKey)
	}
	card := msg.CardsV2[0].Card
	if card.Header.Title != "[Test] <users/all> & co" {
		t.Errorf("header %q", card.Header.Title)
	}
	lines := map[string]bool{}
	for _, s := range card.Sections {
		for _, w := range s.Widgets {
			lines[googleChatWidgetLine(t, w)] = true
		}
	}
	for _, want := range []string{
		"decorated: Description = line 1<br>&lt;b&gt;line 2&lt;/b&gt;",
		"paragraph: a &lt; b<br>c",
	} {
		if !lines[want] {
			t.Errorf("no widget %q in %v", want, lines)
		}
	}
	for l := range lines {
		if strings.HasPrefix(l, "button:") {
			t.Errorf("a button without a link: %q", l)
		}
	}
}

// The message stays within Google Chat's 32,000 bytes.
func TestGoogleChatSizeLimit(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{}`)
	m := downMessage()
	m.Check.Desc = strings.Repeat("<&>\"😀", 2500)
	m.Text = strings.Repeat("<>", 2000)
	m.Check.LastPingBody = []byte(strings.Repeat("&", 1000))
	mustSend(t, webhookChatChannel(v1.ChannelGoogleChat)(""), m, webhookChatSecrets(googleChatHook)(srv.URL))
	req := srv.only(t)
	if len(req.Body) > 32000 {
		t.Errorf("message is %d bytes", len(req.Body))
	}
	var msg googleChatWireMessage
	decodeStrict(t, req.Body, &msg)
	if !strings.Contains(string(req.Body), "team-a") || !strings.Contains(string(req.Body), "…") {
		t.Errorf("message lost its parts: %.400s", req.Body)
	}
}

func TestGoogleChatRateLimit(t *testing.T) {
	checkWebhookChatRateLimit(t, v1.ChannelGoogleChat, googleChatHook)
}

func TestGoogleChatSettings(t *testing.T) {
	checkSettingsAndSecretRefs(t, webhookChatChannel(v1.ChannelGoogleChat)(""), ref("hook", "url"))
}
