package notify

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelGoogleChat, googleChatKind{}) }

// googleChatKind posts a message to a Google Chat space's incoming webhook
// (the URL, from a Secret, carries the webhook's key and token): text, the
// headline “<name>” is DOWN., and one cardsV2 card whose header is the
// check's name and whose widgets are the reason, one decoratedText per fact,
// a "View in Vigil" button to CheckInfo.DetailsURL when set and, in a
// section of its own, the last ping body excerpt. A check's messages form
// one thread: thread.threadKey is "vigil-<uuid>" ("vigil-test-<uuid>" for
// tests) and the query parameter
// messageReplyOption=REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD replies in it, or
// starts it. The URL's own parameters are kept, but for a threadKey
// parameter, which thread.threadKey replaces. Downs, ups and every notice
// (re-alert, escalation, failure, maintenance) are posted alike, each
// headline saying what happened; a space has nothing to resolve.
type googleChatKind struct{}

// googleChatMessageMax bounds the message as sent: Google Chat takes at
// most 32,000 bytes, text and cards together.
const googleChatMessageMax = 30000

func (googleChatKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.GoogleChat == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.GoogleChat.URLSecretRef}
}

func (googleChatKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.GoogleChat
	if s == nil {
		return Permanent(errors.New("the channel has no googlechat settings"))
	}
	raw, err := d.secret(ctx, s.URLSecretRef)
	if err != nil {
		return err
	}
	t, err := parseTarget(raw, true)
	if err != nil {
		return err
	}
	u := *t.u
	q := u.Query()
	q.Del("threadKey")
	q.Set("messageReplyOption", "REPLY_MESSAGE_FALLBACK_TO_NEW_THREAD")
	u.RawQuery = q.Encode()
	t.u = &u
	return d.do(ctx, request{method: http.MethodPost, target: t, json: googleChatPayload(&d.Message)})
}

type googleChatMessage struct {
	Text    string           `json:"text"`
	Thread  googleChatThread `json:"thread"`
	CardsV2 []googleChatCard `json:"cardsV2"`
}

type googleChatThread struct {
	ThreadKey string `json:"threadKey"`
}

type googleChatCard struct {
	CardID string             `json:"cardId"`
	Card   googleChatCardBody `json:"card"`
}

type googleChatCardBody struct {
	Header   googleChatHeader    `json:"header"`
	Sections []googleChatSection `json:"sections"`
}

type googleChatHeader struct {
	Title string `json:"title"`
}

type googleChatSection struct {
	Header  string             `json:"header,omitempty"`
	Widgets []googleChatWidget `json:"widgets"`
}

// googleChatWidget is one widget: exactly one of its fields is set.
type googleChatWidget struct {
	TextParagraph *googleChatTextParagraph `json:"textParagraph,omitempty"`
	DecoratedText *googleChatDecoratedText `json:"decoratedText,omitempty"`
	ButtonList    *googleChatButtonList    `json:"buttonList,omitempty"`
}

type googleChatTextParagraph struct {
	Text string `json:"text"`
}

type googleChatDecoratedText struct {
	TopLabel string `json:"topLabel"`
	Text     string `json:"text"`
	WrapText bool   `json:"wrapText"`
}

type googleChatButtonList struct {
	Buttons []googleChatButton `json:"buttons"`
}

type googleChatButton struct {
	Text    string            `json:"text"`
	OnClick googleChatOnClick `json:"onClick"`
}

type googleChatOnClick struct {
	OpenLink googleChatOpenLink `json:"openLink"`
}

type googleChatOpenLink struct {
	URL string `json:"url"`
}

func googleChatPayload(m *Message) googleChatMessage {
	size := func(msg googleChatMessage) int {
		b, _ := json.Marshal(msg)
		return len(b)
	}
	return chatFitted(m, googleChatMessageMax, size, googleChatRender)
}

// googleChatRender lays the message out. Card text is Google Chat's small
// HTML, so the check's words are escaped there; the header is plain text.
// The fallback text is Chat's own formatting, where "<users/all>" would
// mention everyone: it is defused.
func googleChatRender(m *Message, bodyLimit int) googleChatMessage {
	esc := html.EscapeString
	var widgets []googleChatWidget
	if l := m.reasonLine(); l != "" {
		widgets = append(widgets, googleChatWidget{TextParagraph: &googleChatTextParagraph{Text: googleChatLines(esc(l))}})
	}
	for _, f := range m.facts() {
		widgets = append(widgets, googleChatWidget{DecoratedText: &googleChatDecoratedText{
			TopLabel: f.Title, Text: googleChatLines(esc(f.Value)), WrapText: true}})
	}
	if u := m.Check.DetailsURL; u != "" {
		widgets = append(widgets, googleChatWidget{ButtonList: &googleChatButtonList{Buttons: []googleChatButton{
			{Text: "View in Vigil", OnClick: googleChatOnClick{OpenLink: googleChatOpenLink{URL: u}}}}}})
	}
	sections := []googleChatSection{{Widgets: widgets}}
	if body := m.Check.bodyExcerpt(bodyLimit); bodyLimit > 0 && body != "" {
		sections = append(sections, googleChatSection{Header: "Last Ping Body", Widgets: []googleChatWidget{
			{TextParagraph: &googleChatTextParagraph{Text: googleChatLines(esc(body))}}}})
	}
	return googleChatMessage{
		Text: chatDefuseMentions(m.title()),
		// The check's stable key, as PagerDuty's: "vigil-<uuid>".
		Thread: googleChatThread{ThreadKey: incidentKey(m)},
		CardsV2: []googleChatCard{{
			CardID: "vigil",
			Card: googleChatCardBody{
				Header:   googleChatHeader{Title: m.testPrefix() + m.Check.name()},
				Sections: sections,
			},
		}},
	}
}

// googleChatLines keeps text's line breaks in card text.
func googleChatLines(s string) string { return strings.ReplaceAll(s, "\n", "<br>") }
