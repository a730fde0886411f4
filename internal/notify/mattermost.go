package notify

import (
	"fmt"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Mattermost: the incoming webhook gets {username "Vigil", attachments}
// with one message attachment coloured red (down) or green (up and
// maintenance): fallback (the plain headline, for notifications), title
// “<name>” is DOWN. (linked to CheckInfo.DetailsURL when set), the reason as
// its text, and fields for the description, namespace, tags, period or
// schedule and time zone, total pings, last ping and the last ping body
// excerpt in a code block. Downs, ups and every notice (re-alert,
// escalation, failure, maintenance) are posted alike, each title saying
// what happened; a channel has nothing to resolve. Mattermost renders
// Markdown in the text and field values, so the check's words are escaped
// there; the username applies where the server lets integrations override
// it.
func init() {
	register(v1.ChannelMattermost, incomingWebhookKind{
		settings: func(s *v1.ChannelSpec) *v1.IncomingWebhookChannel { return s.Mattermost },
		payload:  mattermostPayload,
	})
}

type mattermostMessage struct {
	Username    string                 `json:"username"`
	Attachments []mattermostAttachment `json:"attachments"`
}

type mattermostAttachment struct {
	Fallback  string       `json:"fallback"`
	Color     string       `json:"color"`
	Title     string       `json:"title"`
	TitleLink string       `json:"title_link,omitempty"`
	Text      string       `json:"text,omitempty"`
	Fields    []slackField `json:"fields"`
}

// Colours of down and up messages as the hex codes Mattermost and
// Rocket.Chat take.
var (
	chatHexColorDown = fmt.Sprintf("#%06x", colorDown)
	chatHexColorUp   = fmt.Sprintf("#%06x", colorUp)
)

func mattermostPayload(m *Message) any {
	esc := markdownEscape
	a := mattermostAttachment{
		Fallback:  m.title(),
		Color:     chatHexColorDown,
		Title:     m.title(),
		TitleLink: m.Check.DetailsURL,
		Text:      esc(m.reasonLine()),
		Fields:    chatMarkdownFacts(m),
	}
	if body := m.Check.bodyExcerpt(chatBodyLimit); body != "" {
		a.Fields = append(a.Fields, slackField{Title: "Last Ping Body", Value: chatCodeBlock(body)})
	}
	if m.calm() {
		a.Color = chatHexColorUp
	}
	if a.TitleLink == "" {
		// A title without a link is read as Markdown (links only).
		a.Title = esc(a.Title)
	}
	return mattermostMessage{Username: "Vigil", Attachments: []mattermostAttachment{a}}
}

// chatMarkdownFacts are the facts as Slack-style fields whose values are
// Markdown: escaped text, and code spans for the tags and the schedule.
func chatMarkdownFacts(m *Message) []slackField {
	fields := []slackField{}
	for _, f := range m.facts() {
		v := markdownEscape(f.Value)
		switch {
		case f.Title == "Tags":
			spans := make([]string, 0, len(m.Check.Tags))
			for _, tag := range strings.Fields(f.Value) {
				spans = append(spans, chatCodeSpan(tag))
			}
			v = strings.Join(spans, " ")
		case f.Code:
			v = chatCodeSpan(f.Value)
		}
		fields = append(fields, slackField{Title: f.Title, Value: v, Short: !f.Long})
	}
	return fields
}
