package notify

import (
	"context"
	"errors"
	"mime"
	"net/http"
	"strconv"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelNtfy, ntfyKind{}) }

// ntfyKind publishes to an ntfy topic: a POST to the topic URL with a
// plain-text body (the reason, last ping and namespace) and the headers
// Title ("<name> is DOWN"), Priority (the channel's for down, 3 for up),
// Tags (red_circle or green_circle, then the check's tags), Click
// (CheckInfo.DetailsURL, when set) and, with a token, Authorization: Bearer.
// Non-ASCII header values are RFC 2047 encoded, which ntfy decodes.
type ntfyKind struct{}

func (ntfyKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Ntfy == nil {
		return nil
	}
	return optional(spec.Ntfy.TokenSecretRef)
}

// ntfyDefaultPriority is ntfy's default priority, used for up messages.
const ntfyDefaultPriority = 3

func (ntfyKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Ntfy
	if s == nil {
		return Permanent(errors.New("the channel has no ntfy settings"))
	}
	t, err := parseTarget(s.URL, false)
	if err != nil {
		return err
	}
	m := &d.Message
	priority := int(s.Priority)
	if priority == 0 {
		priority = 5
	}
	if m.calm() {
		priority = ntfyDefaultPriority
	}
	tags := []string{"red_circle"}
	switch {
	case m.maintenance():
		tags[0] = "wrench"
	case m.Up:
		tags[0] = "green_circle"
	}
	for _, tag := range m.Check.Tags {
		tags = append(tags, strings.ReplaceAll(tag, ",", " "))
	}

	h := http.Header{}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Title", headerText(m.shortTitle()))
	h.Set("Priority", strconv.Itoa(priority))
	h.Set("Tags", headerText(strings.Join(tags, ",")))
	if u := m.Check.DetailsURL; u != "" && validHeaderValue(u) {
		h.Set("Click", u)
	}
	if err := d.setBearer(ctx, h, s.TokenSecretRef, "the ntfy token"); err != nil {
		return err
	}
	return d.do(ctx, request{method: http.MethodPost, target: t, header: h, body: []byte(ntfyBody(m))})
}

func ntfyBody(m *Message) string {
	var lines []string
	if m.Test {
		lines = append(lines, "This is a test notification.")
	}
	if l := m.reasonLine(); l != "" {
		lines = append(lines, l)
	}
	lines = append(lines, "Last ping: "+m.Check.lastPingText()+".")
	if m.Check.Namespace != "" {
		lines = append(lines, "Namespace: "+m.Check.Namespace)
	}
	return strings.Join(lines, "\n")
}

// headerText makes text safe for a header: control characters become
// spaces, and non-ASCII text is RFC 2047 encoded.
func headerText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return mime.BEncoding.Encode("utf-8", s)
}
