package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/monitor"
)

func init() { register(v1.ChannelApprise, appriseKind{}) }

// appriseKind posts every message to an Apprise API server
// (github.com/caronc/apprise-api), which passes it on to the services it
// knows: to <url>/notify/<key> for a configuration saved on the server
// (with the channel's tag, when set, choosing among its URLs), or to
// <url>/notify/ with the Apprise URLs from the Secret (the tag is not sent:
// it selects URLs of a saved configuration), which the egress guard allows
// only with relays allowed. The JSON body holds
// title ("“<name>” is DOWN.", or the Channel's template subject), body (the
// reason, the facts, the last ping body and the link to the check, in
// Markdown), format "markdown" and type: "failure" on a down, "success" on
// an up, "warning" for a re-alert, an escalation or a failure notice (a
// failed run below the threshold), "info" for a maintenance window's start
// or end and for test messages.
//
// Answers: 200 is success. 204 means the server notified nobody (no
// configuration saved under the key, or no valid URL): a permanent error,
// since a silent success would hide a misconfigured channel. 424 ("one or
// more notifications could not be sent", or the tag matched nothing) stays
// permanent, as d.do makes every 4xx: Apprise does not say which service
// failed, and a retry would repeat the message to every service that got
// it, each time, for as long as one of them is broken.
type appriseKind struct{}

// appriseBodyLimit bounds the last ping body excerpt, as the chat kinds do;
// each Apprise service cuts the message to its own limits.
const appriseBodyLimit = 1000

func (appriseKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Apprise == nil {
		return nil
	}
	return optional(spec.Apprise.URLsSecretRef)
}

// appriseNotification is the JSON body of POST /notify/ and
// /notify/<key>.
type appriseNotification struct {
	URLs   string `json:"urls,omitempty"`
	Title  string `json:"title"`
	Body   string `json:"body"`
	Type   string `json:"type"`
	Format string `json:"format"`
	Tag    string `json:"tag,omitempty"`
}

func (appriseKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Apprise
	if s == nil {
		return Permanent(errors.New("the channel has no apprise settings"))
	}
	if (s.Key == "") == (s.URLsSecretRef == nil) {
		return Permanent(errors.New("the apprise settings need exactly one of key and urlsSecretRef"))
	}
	t, err := parseTarget(s.URL, false)
	if err != nil {
		return err
	}
	t.u.RawQuery, t.u.Fragment = "", ""
	m := &d.Message
	n := appriseNotification{
		Title:  m.title(),
		Body:   appriseBody(m),
		Type:   appriseType(m),
		Format: "markdown",
	}
	nobody := "no configuration (or an empty one) is saved under the key " + s.Key
	if s.Key != "" {
		if !validAppriseKey(s.Key) {
			return Permanent(fmt.Errorf("the Apprise key %q is not 1 to 128 letters, digits, _ and -", s.Key))
		}
		t.u = t.u.JoinPath("notify", s.Key)
		n.Tag = s.Tag
	} else {
		// The Apprise server connects to each URL itself, where the
		// egress guard cannot look: a tenant's json://169.254.169.254/ or
		// mailto://smtp.internal/ would reach what the guard refuses
		// Vigil. Only an administrator who allows relays allows that.
		if !d.Egress.AllowsRelays() {
			return Permanent(fmt.Errorf("the Apprise URLs of a Secret reach wherever they point through the Apprise server, past the egress guard: "+
				"save them on the Apprise server and name them by key, or ask the administrator to allow relays: %w", egress.ErrRelayRefused))
		}
		if n.URLs, err = d.secret(ctx, *s.URLsSecretRef); err != nil {
			return err
		}
		// The value holds many URLs, each with a service's credentials:
		// scrub each one's parts from errors, as a single URL's are.
		for _, u := range strings.FieldsFunc(n.URLs, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			for _, part := range sensitiveParts(u) {
				d.redactDerived(part)
			}
			// Apprise's URLs often do not parse as URLs (tgram://<bot
			// token>/<chat>): hide every longer piece between separators.
			for _, piece := range strings.FieldsFunc(u, func(r rune) bool { return strings.ContainsRune(":/@?&=", r) }) {
				if len(piece) >= 8 {
					d.redactDerived(piece)
				}
			}
		}
		t.u = t.u.JoinPath("notify") // JoinPath drops a trailing slash
		t.u.Path += "/"
		nobody = "none of the Apprise URLs is valid"
	}
	h := http.Header{}
	h.Set("Accept", "application/json")
	// The JSON answer ({"error": null, "details": [the log]}) is read only
	// to tell a 200 from a 204, which has no body.
	var answer json.RawMessage
	err = d.do(ctx, request{method: http.MethodPost, target: t, header: h, json: n, into: &answer})
	switch {
	case answerWasEmpty(err):
		// Apprise answers 204, with no body, when it had nobody to notify.
		return Permanent(fmt.Errorf("POST %s: the Apprise server notified nobody: %s", t, nobody))
	case answerNotJSON(err):
		// A 2xx answer that is not the JSON one (an older server, or a
		// proxy's): the notification went out.
		return nil
	}
	return err
}

// appriseType is Apprise's notification type of a message.
func appriseType(m *Message) string {
	switch {
	case m.Test, m.maintenance(), m.Notice == monitor.NoticeSLAMet:
		return "info"
	case m.Up:
		return "success"
	case m.Notice != "":
		// A re-alert, an escalation, a failure notice, an SLA breach.
		return "warning"
	}
	return "failure"
}

// appriseBody is the message in Markdown without its title, which Apprise
// sends apart: the reason, the facts, the last ping body and the link.
func appriseBody(m *Message) string {
	var b strings.Builder
	if l := m.reasonLine(); l != "" {
		b.WriteString(markdownEscape(l) + "\n\n")
	}
	for _, f := range m.facts() {
		v := markdownEscape(f.Value)
		if f.Code && !strings.Contains(f.Value, "`") {
			v = "`" + f.Value + "`"
		}
		b.WriteString("- **" + f.Title + ":** " + v + "\n")
	}
	if body := m.Check.bodyExcerpt(appriseBodyLimit); body != "" && !strings.Contains(body, "```") {
		b.WriteString("\n**Last ping body:**\n```\n" + body + "\n```\n")
	}
	if u := m.Check.DetailsURL; u != "" {
		b.WriteString("\n" + u + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// validAppriseKey reports whether k is a key the server accepts: 1 to 128
// letters, digits, underscores and dashes.
func validAppriseKey(k string) bool { return appriseKeyPattern.MatchString(k) }

var appriseKeyPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
