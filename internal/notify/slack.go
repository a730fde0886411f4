package notify

import (
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Slack posts to an incoming webhook one message in the reference's layout:
// an attachment coloured "danger" (down) or "good" (up) whose title is
// “<name>” is DOWN. (linked to CheckInfo.DetailsURL when set), the reason of
// a down flip as its text, and fields for the description, namespace, tags,
// period or schedule and time zone, total pings, last ping and an excerpt of
// the last ping body.
func init() {
	register(v1.ChannelSlack, incomingWebhookKind{
		settings: func(s *v1.ChannelSpec) *v1.IncomingWebhookChannel { return s.Slack },
		payload:  slackPayload,
	})
}

type slackMessage struct {
	Username    string            `json:"username"`
	Text        string            `json:"text,omitempty"`
	Attachments []slackAttachment `json:"attachments"`
}

type slackAttachment struct {
	Color     string       `json:"color"`
	Fallback  string       `json:"fallback"`
	MrkdwnIn  []string     `json:"mrkdwn_in"`
	Title     string       `json:"title"`
	TitleLink string       `json:"title_link,omitempty"`
	Text      string       `json:"text,omitempty"`
	Fields    []slackField `json:"fields"`
	Ts        int64        `json:"ts"`
}

type slackField struct {
	Title string `json:"title"`
	Value string `json:"value"`
	Short bool   `json:"short,omitempty"`
}

// chatBodyLimit bounds the ping body excerpt in chat messages, as the
// reference does.
const chatBodyLimit = 1000

func slackPayload(m *Message) any {
	esc := slackEscape
	a := slackAttachment{
		Color:     "danger",
		Fallback:  esc(m.testPrefix() + `The check "` + m.Check.name() + `" is ` + strings.ToUpper(m.status()) + "."),
		MrkdwnIn:  []string{"fields"},
		Title:     esc(m.title()),
		TitleLink: m.Check.DetailsURL,
		Fields:    []slackField{},
		Ts:        m.flipTime().Unix(),
	}
	if m.calm() {
		a.Color = "good"
	}
	a.Text = esc(m.reasonLine())
	for _, f := range m.facts() {
		v := esc(f.Value)
		switch {
		case f.Title == "Tags":
			v = "`" + strings.Join(strings.Fields(v), "` `") + "`"
		case f.Code:
			v = fixAsterisks(v)
		}
		a.Fields = append(a.Fields, slackField{Title: f.Title, Value: v, Short: !f.Long})
	}
	if body := m.Check.bodyExcerpt(chatBodyLimit); body != "" && !strings.Contains(body, "```") {
		a.Fields = append(a.Fields, slackField{Title: "Last Ping Body", Value: "```\n" + esc(body) + "\n```"})
	}
	return slackMessage{Username: "Vigil", Attachments: []slackAttachment{a}}
}

// slackEscape escapes Slack's control characters &, < and >.
var slackEscape = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace

// fixAsterisks keeps asterisks (in cron schedules) from being read as bold
// markers, as the reference does: a combining grapheme joiner before each.
func fixAsterisks(s string) string { return strings.ReplaceAll(s, "*", "\u034f*") }
