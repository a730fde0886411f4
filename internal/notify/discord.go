package notify

import (
	"context"
	"errors"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelDiscord, discordKind{}) }

// discordKind posts to a Discord webhook Discord's own execute-webhook
// JSON (the reference posts a Slack-style payload to <url>/slack instead):
// content “<name>” is DOWN., and one embed coloured red or green, titled
// with the check's name (linked to CheckInfo.DetailsURL when set), with the
// reason and description, inline fields for the other details, an excerpt
// of the last ping body, and the flip's time. Mentions are disabled, so a
// check named "@everyone" notifies no one. With the Channel's threadName,
// each message starts a post of that name (thread_name), as the webhook of
// a forum or media channel requires; without it none is sent, since a
// webhook URL that names a thread (?thread_id=) cannot take one as well.
type discordKind struct{}

func (discordKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Discord == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.Discord.URLSecretRef}
}

func (discordKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Discord
	if s == nil {
		return Permanent(errors.New("the channel has no discord settings"))
	}
	msg := discordPayload(&d.Message)
	msg.ThreadName = s.ThreadName // the CRD bounds it as Discord does, to 100 characters
	return d.postToWebhook(ctx, &s.IncomingWebhookChannel, msg)
}

type discordMessage struct {
	Username        string                 `json:"username"`
	Content         string                 `json:"content"`
	Embeds          []discordEmbed         `json:"embeds"`
	AllowedMentions discordAllowedMentions `json:"allowed_mentions"`
	// ThreadName names the post a message starts in a forum or media
	// channel.
	ThreadName string `json:"thread_name,omitempty"`
}

type discordAllowedMentions struct {
	Parse []string `json:"parse"`
}

type discordEmbed struct {
	Title       string         `json:"title"`
	URL         string         `json:"url,omitempty"`
	Description string         `json:"description,omitempty"`
	Color       int            `json:"color"`
	Fields      []discordField `json:"fields"`
	Timestamp   string         `json:"timestamp"`
	Footer      discordFooter  `json:"footer"`
}

type discordField struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Inline bool   `json:"inline,omitempty"`
}

type discordFooter struct {
	Text string `json:"text"`
}

// Discord's limits (characters).
const (
	discordContentMax     = 2000
	discordTitleMax       = 256
	discordDescriptionMax = 4096
	discordFieldValueMax  = 1024
)

// Colours of down and up messages, as the reference's chat integrations use.
const (
	colorDown = 0xd9534f
	colorUp   = 0x5cb85c
)

func discordPayload(m *Message) discordMessage {
	esc := discordEscape
	e := discordEmbed{
		Title:     words.Ellipsize(esc(m.testPrefix()+m.Check.name()), discordTitleMax),
		URL:       m.Check.DetailsURL,
		Color:     colorDown,
		Fields:    []discordField{},
		Timestamp: m.flipTime().Format("2006-01-02T15:04:05Z07:00"),
		Footer:    discordFooter{Text: "Vigil"},
	}
	if m.calm() {
		e.Color = colorUp
	}
	var desc []string
	if l := m.reasonLine(); l != "" {
		desc = append(desc, esc(l))
	}
	for _, f := range m.facts() {
		if f.Title == "Description" {
			desc = append(desc, esc(f.Value))
			continue
		}
		v := esc(f.Value)
		if f.Title == "Tags" {
			v = "`" + strings.Join(strings.Fields(f.Value), "` `") + "`"
		}
		e.Fields = append(e.Fields, discordField{Name: f.Title, Value: words.Ellipsize(v, discordFieldValueMax), Inline: !f.Long})
	}
	e.Description = words.Ellipsize(strings.Join(desc, "\n\n"), discordDescriptionMax)
	if body := m.Check.bodyExcerpt(chatBodyLimit); body != "" && !strings.Contains(body, "```") {
		e.Fields = append(e.Fields, discordField{Name: "Last Ping Body", Value: words.Ellipsize("```\n"+body+"\n```", discordFieldValueMax)})
	}
	return discordMessage{
		Username:        "Vigil",
		Content:         words.Ellipsize(esc(m.title()), discordContentMax),
		Embeds:          []discordEmbed{e},
		AllowedMentions: discordAllowedMentions{Parse: []string{}},
	}
}

// discordEscape escapes Discord's Markdown with backslashes: emphasis, code,
// spoiler, quote and link characters anywhere, heading and list markers at
// the start of a line.
func discordEscape(s string) string {
	s = discordInline.Replace(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "-") {
			lines[i] = `\` + l
		}
	}
	return strings.Join(lines, "\n")
}

var discordInline = strings.NewReplacer(`\`, `\\`, "*", `\*`, "_", `\_`, "~", `\~`, "`", "\\`",
	"|", `\|`, ">", `\>`, "<", `\<`, "[", `\[`, "]", `\]`)
