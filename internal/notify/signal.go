package notify

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelSignal, signalKind{}) }

// signalKind sends a Signal message through a signal-cli REST API server
// (bbernhard/signal-cli-rest-api): a POST to <url>/v2/send of {message,
// number (the registered sender), recipients, text_mode "styled"}, with a
// bearer token when the channel has one. The message is the title in bold,
// the reason, the facts with bold labels, the last ping body in monospace
// and the link; Signal's markers in the check's own text are escaped. The
// server takes phone numbers (and account UUIDs), usernames and one group
// per request and never mixes them, so the recipients go in one request
// for the numbers, one for the usernames and one per group; should one
// fail, a retry sends the others again. Every event is sent, each worded by
// its title; nothing is left to resolve.
type signalKind struct{}

func (signalKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Signal == nil {
		return nil
	}
	return optional(spec.Signal.TokenSecretRef)
}

// signalSendV2 is the body of POST /v2/send.
type signalSendV2 struct {
	Message    string   `json:"message"`
	Number     string   `json:"number"`
	Recipients []string `json:"recipients"`
	// TextMode "styled" reads **bold**, *italic*, `monospace`, ~strike~
	// and ||spoiler|| markers; a backslash escapes one.
	TextMode string `json:"text_mode"`
}

// signalMessageMax bounds a message, in UTF-16 code units (Signal's
// count): Signal sends a longer text as an attachment.
const signalMessageMax = 2000

func (signalKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Signal
	if s == nil {
		return Permanent(errors.New("the channel has no signal settings"))
	}
	t, err := parseTarget(s.URL, false)
	if err != nil {
		return err
	}
	t = joinTargetPath(t, "v2", "send")
	batches := signalBatches(s.Recipients)
	if len(batches) == 0 {
		return Permanent(errors.New("the signal channel has no recipients"))
	}
	h := http.Header{}
	if err := d.setBearer(ctx, h, s.TokenSecretRef, "the signal token"); err != nil {
		return err
	}
	text := signalText(&d.Message)
	for _, recipients := range batches {
		body := signalSendV2{Message: text, Number: s.Number, Recipients: recipients, TextMode: "styled"}
		if err := d.do(ctx, request{method: http.MethodPost, target: t, header: h, json: body}); err != nil {
			return err
		}
	}
	return nil
}

// signalAccountUUID is an account's UUID, which the server takes as it
// takes a phone number.
var signalAccountUUID = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// signalBatches splits the recipients into the requests the server takes:
// the phone numbers and UUIDs together, the usernames together, and each
// group ("group.<id>") on its own; duplicates and blanks are dropped.
func signalBatches(recipients []string) [][]string {
	var numbers, usernames []string
	var groups [][]string
	seen := map[string]bool{}
	for _, r := range recipients {
		r = strings.TrimSpace(r)
		if r == "" || seen[r] {
			continue
		}
		seen[r] = true
		switch {
		case strings.HasPrefix(r, "group."):
			groups = append(groups, []string{r})
		case strings.HasPrefix(r, "+") || signalAccountUUID.MatchString(r):
			numbers = append(numbers, r)
		default:
			usernames = append(usernames, r)
		}
	}
	var out [][]string
	for _, b := range [][]string{numbers, usernames} {
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	return append(out, groups...)
}

// signalText is the message in Signal's styled text, within
// signalMessageMax.
func signalText(m *Message) string {
	if text, ok := fitWithExcerpt(func(n int) string { return signalStyled(m, n) }, signalMessageMax, utf16Len); ok {
		return text
	}
	// Too long without the excerpt (a long description, a long template
	// text): plain text, cut short, with every marker escaped.
	return ellipsizeUTF16(signalEscape(m.plainText(0)), signalMessageMax)
}

// signalStyled is the message with bold title and labels, and verbatim
// values and body excerpt in monospace.
func signalStyled(m *Message, bodyLimit int) string {
	esc := signalEscape
	var b strings.Builder
	b.WriteString("**" + esc(m.title()) + "**")
	if l := m.reasonLine(); l != "" {
		b.WriteString("\n" + esc(l))
	}
	b.WriteString("\n")
	for _, f := range m.facts() {
		v := esc(f.Value)
		if f.Code {
			v = "`" + v + "`"
		}
		b.WriteString("\n**" + esc(f.Title) + ":** " + v)
	}
	if body := m.Check.bodyExcerpt(bodyLimit); bodyLimit > 0 && body != "" {
		b.WriteString("\n\n**Last ping body:**\n`" + esc(body) + "`")
	}
	if u := m.Check.DetailsURL; u != "" {
		b.WriteString("\n\n" + esc(u))
	}
	return b.String()
}

// signalEscape escapes the markers of Signal's styled text (* ` ~ |) with
// a backslash. The server has no escape for a backslash itself, so a text
// ending in one, which would escape the marker after it, ends with a zero
// width space.
func signalEscape(s string) string {
	s = signalMarkers.Replace(s)
	if strings.HasSuffix(s, `\`) {
		s += "\u200b"
	}
	return s
}

var signalMarkers = strings.NewReplacer("*", `\*`, "`", "\\`", "~", `\~`, "|", `\|`)
