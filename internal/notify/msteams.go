package notify

import (
	"encoding/json"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Microsoft Teams: a workflow webhook ("Post to a channel when a webhook
// request is received") gets a message with one Adaptive Card attachment,
// laid out as the reference's msteamsw integration: a heading
// “<name>” is DOWN. (coloured attention or good), the reason of a down flip,
// a FactSet of the check's details, an excerpt of the last ping body in a
// CodeBlock, and a "View in Vigil" action when CheckInfo.DetailsURL is set.
// A TextBlock's text and a fact's value are Markdown to Teams: every text
// of the message is escaped, so that a check named "[x](https://…)" reads
// as that, not as a link to wherever its author chose. Teams refuses a
// message over about 28 KB, so the longest parts (the description, the
// Channel's own text and the ping body) are cut until the JSON fits
// teamsPayloadMax.
func init() {
	register(v1.ChannelMSTeams, incomingWebhookKind{
		settings: func(s *v1.ChannelSpec) *v1.IncomingWebhookChannel { return s.MSTeams },
		payload:  teamsPayload,
	})
}

type teamsMessage struct {
	Type        string            `json:"type"`
	Attachments []teamsAttachment `json:"attachments"`
}

type teamsAttachment struct {
	ContentType string       `json:"contentType"`
	ContentURL  *string      `json:"contentUrl"`
	Content     adaptiveCard `json:"content"`
}

type adaptiveCard struct {
	Schema       string            `json:"$schema"`
	Type         string            `json:"type"`
	Version      string            `json:"version"`
	FallbackText string            `json:"fallbackText"`
	MSTeams      map[string]string `json:"msteams,omitempty"`
	Body         []map[string]any  `json:"body"`
	Actions      []map[string]any  `json:"actions,omitempty"`
}

type teamsFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

// teamsPayloadMax bounds the JSON Vigil posts, in bytes: Teams refuses a
// message over about 28 KB, and the workflow adds its own wrapping around
// the card.
const teamsPayloadMax = 27 * 1000

func teamsPayload(m *Message) any {
	size := func(msg teamsMessage) int {
		b, _ := json.Marshal(msg)
		return len(b)
	}
	return chatFitted(m, teamsPayloadMax, size, teamsRender)
}

// teamsRender lays the message out, with at most bodyLimit bytes of the
// last ping body.
func teamsRender(m *Message, bodyLimit int) teamsMessage {
	color := "Attention"
	if m.calm() {
		color = "Good"
	}
	body := []map[string]any{{
		"type": "TextBlock", "text": markdownEscape(m.title()), "weight": "Bolder", "size": "Medium",
		"wrap": true, "style": "heading", "color": color,
	}}
	if l := m.reasonLine(); l != "" {
		body = append(body, map[string]any{"type": "TextBlock", "text": markdownEscape(l), "wrap": true})
	}
	facts := []teamsFact{}
	for _, f := range m.facts() {
		v := markdownEscape(f.Value)
		if f.Title == "Description" {
			v = strings.ReplaceAll(v, "\n", "\n\n") // a single newline is not a break
		}
		facts = append(facts, teamsFact{Title: f.Title + ":", Value: v})
	}
	body = append(body, map[string]any{"type": "FactSet", "facts": facts})
	if excerpt := m.Check.bodyExcerpt(bodyLimit); bodyLimit > 0 && excerpt != "" {
		body = append(body,
			map[string]any{"type": "TextBlock", "text": "Last Ping Body:", "weight": "Bolder"},
			map[string]any{"type": "CodeBlock", "codeSnippet": excerpt, "language": "PlainText"})
	}
	card := adaptiveCard{
		Schema:       "http://adaptivecards.io/schemas/adaptive-card.json",
		Type:         "AdaptiveCard",
		Version:      "1.4",
		FallbackText: m.title(),
		MSTeams:      map[string]string{"width": "Full"},
		Body:         body,
	}
	if u := m.Check.DetailsURL; u != "" {
		card.Actions = []map[string]any{{"type": "Action.OpenUrl", "title": "View in Vigil", "url": u}}
	}
	return teamsMessage{
		Type: "message",
		Attachments: []teamsAttachment{{
			ContentType: "application/vnd.microsoft.card.adaptive",
			Content:     card,
		}},
	}
}
