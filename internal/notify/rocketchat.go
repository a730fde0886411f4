package notify

import (
	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

// Rocket.Chat: the incoming webhook gets {alias "Vigil", text, attachments}.
// The text is the headline, “<name>” is DOWN., with every "@" defused so a
// check's name mentions no one. The first attachment, coloured red (down)
// or green (up and maintenance), is titled with the check's name (linked to
// CheckInfo.DetailsURL when set), has the reason as its text and fields for
// the description, namespace, tags, period or schedule and time zone, total
// pings and last ping; a second one holds the last ping body excerpt in a
// code block. Downs, ups and every notice (re-alert, escalation, failure,
// maintenance) are posted alike, each headline saying what happened; a
// channel has nothing to resolve. Rocket.Chat renders Markdown in
// attachment text and field values, so the check's words are escaped
// there; the alias applies where the integration may set one.
func init() {
	register(v1.ChannelRocketChat, incomingWebhookKind{
		settings: func(s *v1.ChannelSpec) *v1.IncomingWebhookChannel { return s.RocketChat },
		payload:  rocketChatPayload,
	})
}

type rocketChatMessage struct {
	Alias       string                 `json:"alias"`
	Text        string                 `json:"text"`
	Attachments []rocketChatAttachment `json:"attachments"`
}

type rocketChatAttachment struct {
	Title     string       `json:"title"`
	TitleLink string       `json:"title_link,omitempty"`
	Text      string       `json:"text,omitempty"`
	Color     string       `json:"color"`
	Fields    []slackField `json:"fields,omitempty"`
}

// rocketChatTextMax is Rocket.Chat's default Message_MaxAllowedSize
// (characters); attachments do not count.
const rocketChatTextMax = 5000

func rocketChatPayload(m *Message) any {
	color := chatHexColorDown
	if m.calm() {
		color = chatHexColorUp
	}
	main := rocketChatAttachment{
		Title:     m.testPrefix() + m.Check.name(),
		TitleLink: m.Check.DetailsURL,
		Text:      markdownEscape(m.reasonLine()),
		Color:     color,
		Fields:    chatMarkdownFacts(m),
	}
	msg := rocketChatMessage{
		Alias:       "Vigil",
		Text:        words.Ellipsize(chatDefuseMentions(m.title()), rocketChatTextMax),
		Attachments: []rocketChatAttachment{main},
	}
	if body := m.Check.bodyExcerpt(chatBodyLimit); body != "" {
		msg.Attachments = append(msg.Attachments, rocketChatAttachment{
			Title: "Last Ping Body",
			Text:  chatCodeBlock(body),
			Color: color,
		})
	}
	return msg
}
