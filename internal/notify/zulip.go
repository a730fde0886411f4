package notify

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelZulip, zulipKind{}) }

// zulipKind sends a Zulip message (POST <site>/api/v1/messages, HTTP basic
// auth with the bot's email and API key, form-encoded): type "stream" to a
// stream's topic (the Channel's topic, or the check's name so a check's
// downs and ups share one), or type "private" to the comma-separated
// recipients (sent as a JSON list: emails, or user ids when all are
// numbers). The content, in Zulip's Markdown, is the title in bold (linked
// to CheckInfo.DetailsURL when set), the reason, the facts as a list and the
// last ping body excerpt in a code block. Downs, ups and every notice
// (re-alert, escalation, failure, maintenance) are sent alike, each title
// saying what happened; a stream has nothing to resolve, so an up is a
// message of its own.
type zulipKind struct{}

// Zulip's limits: max_topic_length (characters) and max_message_length
// (kept in bytes, which is stricter).
const (
	zulipTopicMax   = 60
	zulipContentMax = 10000
)

func (zulipKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Zulip == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.Zulip.APIKeySecretRef}
}

func (zulipKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Zulip
	if s == nil {
		return Permanent(errors.New("the channel has no zulip settings"))
	}
	site, err := parseTarget(s.Site, false)
	if err != nil {
		return err
	}
	form, err := zulipForm(s, &d.Message)
	if err != nil {
		return err
	}
	if !validHeaderValue(s.BotEmail) || strings.Contains(s.BotEmail, ":") {
		return Permanent(fmt.Errorf("the bot email %q cannot be sent as a basic auth user name", s.BotEmail))
	}
	key, err := d.secret(ctx, s.APIKeySecretRef)
	if err != nil {
		return err
	}
	credentials := base64.StdEncoding.EncodeToString([]byte(s.BotEmail + ":" + key))
	// The encoded key is a credential too: keep it out of errors as well.
	d.redactDerived(credentials)
	h := http.Header{}
	h.Set("Authorization", "Basic "+credentials)
	t := chatAPITarget(site, false, "api/v1/messages")
	return d.do(ctx, request{method: http.MethodPost, target: t, header: h, form: form})
}

// zulipForm is the message's parameters.
func zulipForm(s *v1.ZulipChannel, m *Message) (url.Values, error) {
	form := url.Values{}
	switch s.Type {
	case "", "stream":
		to := strings.TrimSpace(s.To)
		if to == "" {
			return nil, Permanent(errors.New("the channel names no stream"))
		}
		topic := strings.Join(strings.Fields(s.Topic), " ")
		if topic == "" {
			topic = strings.Join(strings.Fields(m.Check.name()), " ")
		}
		form.Set("type", "stream")
		form.Set("to", to)
		form.Set("topic", words.Ellipsize(topic, zulipTopicMax))
	case "private":
		to, err := zulipRecipients(s.To)
		if err != nil {
			return nil, err
		}
		form.Set("type", "private")
		form.Set("to", to)
	default:
		return nil, Permanent(fmt.Errorf("unknown Zulip message type %q", s.Type))
	}
	form.Set("content", zulipContent(m))
	return form, nil
}

var zulipUserID = regexp.MustCompile(`^[0-9]{1,18}$`)

// zulipRecipients is the JSON list of a direct message's recipients: their
// emails or, when every one is a number, their user ids (Zulip takes one
// kind or the other).
func zulipRecipients(to string) (string, error) {
	var emails []string
	ids := true
	for r := range strings.SplitSeq(to, ",") {
		if r = strings.TrimSpace(r); r != "" {
			emails = append(emails, r)
			ids = ids && zulipUserID.MatchString(r)
		}
	}
	if len(emails) == 0 {
		return "", Permanent(errors.New("the channel names no recipients"))
	}
	var list any = emails
	if ids {
		nums := make([]json.Number, len(emails))
		for i, e := range emails {
			nums[i] = json.Number(e)
		}
		list = nums
	}
	b, err := json.Marshal(list)
	if err != nil {
		return "", Permanent(fmt.Errorf("encoding the recipients: %w", err))
	}
	return string(b), nil
}

// zulipContent is the message in Zulip's Markdown, at most zulipContentMax
// bytes.
func zulipContent(m *Message) string {
	return chatFitted(m, zulipContentMax, func(s string) int { return len(s) }, zulipMarkdown)
}

func zulipMarkdown(m *Message, bodyLimit int) string {
	esc := zulipEscape
	var b strings.Builder
	title := esc(m.title())
	if u := m.Check.DetailsURL; u != "" {
		title = "[" + title + "](" + chatLinkURL(u) + ")"
	}
	b.WriteString("**" + title + "**")
	if l := m.reasonLine(); l != "" {
		b.WriteString("\n" + esc(l))
	}
	b.WriteString("\n")
	for _, f := range m.facts() {
		v := esc(f.Value)
		if f.Code {
			v = chatCodeSpan(f.Value)
		}
		b.WriteString("\n- **" + f.Title + ":** " + v)
	}
	if body := m.Check.bodyExcerpt(bodyLimit); bodyLimit > 0 && body != "" {
		b.WriteString("\n\n**Last ping body:**\n" + chatCodeBlock(body))
	}
	return b.String()
}

// zulipEscape escapes, with backslashes, the characters of Zulip's
// Markdown (Python-Markdown's escapable set) that would format text or
// start a mention (@**name**), a stream link (#**stream**) or a link.
var zulipEscape = strings.NewReplacer(`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`,
	"(", `\(`, ")", `\)`, "#", `\#`, ">", `\>`).Replace
