package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelWebhook, webhookKind{}) }

// webhookKind sends the HTTP request a webhook channel configures for the
// event, with the reference's $-variables expanded in its URL, body and
// header values:
//
//	$CODE        the check's UUID
//	$STATUS      "up" or "down"
//	$NOW         the flip's time, UTC, ISO 8601 ("2024-05-01T12:00:00+00:00")
//	$NAME        the check's name          $NAME_JSON  the same as a JSON string
//	$SLUG        the check's slug
//	$DESC        the check's description
//	$TAGS        the tags, space-separated  $TAG1, $TAG2, …  one tag
//	$PING_URL    the check's ping URL
//	$EXITSTATUS  the last ping's exit status, "-1" when it had none
//	$JSON        the check as JSON (CheckInfo.JSON, or a summary)
//	$BODY        the last ping's body (at most 10 kB; only in the body)
//	$BODY_JSON   the same as a JSON string (only in the body)
//
// and Vigil's additions, which tell what the other kinds' messages tell:
//
//	$SUMMARY     "backup is still DOWN (for 2 hours)", "backup is UP (was down for 2 hours)"
//	$REASON      why it is down: fail, timeout, runtime or short ("" for an up)
//	$REASON_TEXT the same in words: "the run ran longer than 2 hours"
//	$NOTICE      "" for a flip; realert, escalation or failure for a notice
//
// A grouped message (storm control) is about several checks: $SUMMARY is
// "12 checks in team-a are DOWN", $NAME "12 checks", $REASON_TEXT their
// names ("backup, reindex, …"), $CODE an identifier of the group.
//
// In the URL, values other than $CODE, $STATUS, $SLUG and $EXITSTATUS are
// percent-encoded (as Python's quote does: "/" is kept). Header values are
// sent as Latin-1, characters beyond it as XML character references, and
// control characters become spaces. A placeholder is replaced only where
// it appears in the template, never inside a value, and the longest name
// wins ($NAME_JSON before $NAME, $TAG12 before $TAG1); unknown placeholders
// and $TAG<n> beyond the last tag stay as written.
//
// The body is sent only with POST and PUT. A channel without a request for
// the event sends nothing. Any 2xx answer is success.
type webhookKind struct{}

func (webhookKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Webhook == nil {
		return nil
	}
	var refs []v1.SecretKeyRef
	for _, r := range []*v1.WebhookRequest{spec.Webhook.Down, spec.Webhook.Up} {
		if r == nil {
			continue
		}
		refs = append(refs, optional(r.URLSecretRef)...)
		for _, h := range sortedKeys(r.HeaderSecretRefs) {
			refs = append(refs, r.HeaderSecretRefs[h])
		}
	}
	return refs
}

func (webhookKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Webhook
	if s == nil {
		return Permanent(errors.New("the channel has no webhook settings"))
	}
	spec := s.Down
	if d.Message.Up {
		spec = s.Up
	}
	if spec == nil {
		return nil // this channel sends nothing for this event
	}
	m := &d.Message

	rawURL, secretURL := spec.URL, false
	if spec.URLSecretRef != nil {
		v, err := d.secret(ctx, *spec.URLSecretRef)
		if err != nil {
			return err
		}
		rawURL, secretURL = v, true
	}
	expanded, err := m.expand(rawURL, inURL, maxWebhookURL)
	if err != nil {
		return Permanent(fmt.Errorf("the webhook URL: %w", err))
	}
	t, err := parseTarget(expanded, secretURL)
	if err != nil {
		return err
	}

	method := strings.ToUpper(spec.Method)
	if method == "" {
		method = http.MethodPost
	}
	var body []byte
	if spec.Body != "" && (method == http.MethodPost || method == http.MethodPut) {
		expanded, err := m.expand(spec.Body, inBody, maxWebhookBody)
		if err != nil {
			return Permanent(fmt.Errorf("the webhook body: %w", err))
		}
		body = []byte(expanded)
	}

	header := http.Header{}
	budget := maxWebhookHeaders // the header values together
	for _, k := range sortedKeys(spec.Headers) {
		if err := checkHeaderName(k); err != nil {
			return err
		}
		v, err := m.expand(spec.Headers[k], inHeader, budget)
		if err != nil {
			return Permanent(fmt.Errorf("the webhook headers, at %s: %w (%d bytes for all header values)", k, err, maxWebhookHeaders))
		}
		budget -= len(v)
		header.Set(k, v)
	}
	for _, k := range sortedKeys(spec.HeaderSecretRefs) {
		if err := checkHeaderName(k); err != nil {
			return err
		}
		v, err := d.secret(ctx, spec.HeaderSecretRefs[k])
		if err != nil {
			return err
		}
		if !validHeaderValue(v) {
			return Permanent(fmt.Errorf("the Secret value for header %q contains control characters", k))
		}
		header.Set(k, v)
	}
	return d.do(ctx, request{method: method, target: t, header: header, body: body})
}

// checkHeaderName refuses a header a Channel may not set: a name that is
// not a token, and Host, which the CRD refuses too (a Channel stored before
// that rule may still name it). The request goes to the URL's host under
// its own name, never to a virtual host the Channel picks on a server it
// could not name otherwise.
func checkHeaderName(k string) error {
	if !validHeaderName(k) {
		return Permanent(fmt.Errorf("%q is not a valid header name", k))
	}
	if strings.EqualFold(k, "Host") {
		return Permanent(errors.New("a Channel cannot set the Host header: the request goes to the URL's host"))
	}
	return nil
}

// varContext is where a template is expanded.
type varContext int

const (
	inURL varContext = iota
	inHeader
	inBody
)

// webhookBodyLimit bounds $BODY.
const webhookBodyLimit = 10_000

// fixedVars are the variable names other than $TAG<n>, longest first so the
// longest name that matches wins.
var fixedVars = func() []string {
	v := []string{"CODE", "STATUS", "NOW", "NAME_JSON", "NAME", "SLUG", "DESC", "TAGS",
		"PING_URL", "EXITSTATUS", "JSON", "BODY_JSON", "BODY",
		// Vigil's additions: the story the other kinds tell.
		"SUMMARY", "REASON_TEXT", "REASON", "NOTICE", "DETAILS_URL"}
	sort.SliceStable(v, func(i, j int) bool { return len(v[i]) > len(v[j]) })
	return v
}()

// What a template may expand to: a tenant writes the template and, for
// $BODY, anyone with the ping URL writes a value, so without a bound one
// delivery could build hundreds of megabytes (3,000 × $BODY_JSON of a 10 kB
// body is 18 MB; a 64 KiB template of them, 393 MB).
const (
	// maxWebhookBody bounds a webhook's expanded body.
	maxWebhookBody = 1 << 20
	// maxWebhookURL bounds its expanded URL, and maxWebhookHeaders its
	// expanded header values all together.
	maxWebhookURL     = 8 << 10
	maxWebhookHeaders = 8 << 10
	// maxTemplateVariables bounds the $-variables one template expands;
	// the CRD bounds the $ signs of a template as well.
	maxTemplateVariables = 1000
)

// errExpansion marks a template that expands past its bound: a permanent
// error of the Channel's, not the receiver's.
var errExpansion = errors.New("the template expands past its bound")

// expand replaces the $-variables in tmpl, writing at most limit bytes
// (after the header encoding, in a header). Values are never expanded
// again, and each is computed once however often the template names it.
// Past limit, or past maxTemplateVariables variables, it returns what it
// wrote so far, cut, with an error wrapping errExpansion.
func (m *Message) expand(tmpl string, where varContext, limit int) (string, error) {
	var b strings.Builder
	var values map[string]string
	variables := 0
	// write writes s, or what fits of it, and says whether all of it fit.
	write := func(s string) bool {
		if where == inHeader {
			s = latin1(s)
		}
		// Doubling, up to the bound: the builder's own growth is slower
		// for large outputs, and allocates five times what it keeps.
		if need := b.Len() + len(s); need > b.Cap() {
			b.Grow(min(max(need, 2*b.Cap()), limit) - b.Len())
		}
		if b.Len()+len(s) <= limit {
			b.WriteString(s)
			return true
		}
		cut, _ := words.Cut(s, limit-b.Len())
		b.WriteString(cut)
		return false
	}
	tooLong := func() (string, error) {
		return b.String(), fmt.Errorf("%w: it expands to more than %d bytes", errExpansion, limit)
	}
	before, rest, more := strings.Cut(tmpl, "$")
	if !write(before) {
		return tooLong()
	}
	for more {
		var part string
		part, rest, more = strings.Cut(rest, "$")
		if name, ok := m.variableName(part, where); ok {
			var value string
			if variables++; variables > maxTemplateVariables {
				return b.String(), fmt.Errorf("%w: it holds more than %d $-variables", errExpansion, maxTemplateVariables)
			}
			if value, ok = values[name]; !ok {
				value = m.value(name, where)
				if values == nil {
					values = map[string]string{}
				}
				values[name] = value
			}
			if !write(value) || !write(part[len(name):]) {
				return tooLong()
			}
		} else if !write("$" + part) {
			return tooLong()
		}
	}
	return b.String(), nil
}

// variableName is the name of the variable text starts with: the longest
// that matches, $BODY and $BODY_JSON only in a body, $TAG<n> only for a
// tag the check has.
func (m *Message) variableName(text string, where varContext) (string, bool) {
	for _, name := range fixedVars {
		if strings.HasPrefix(text, name) {
			if (name == "BODY" || name == "BODY_JSON") && where != inBody {
				return "", false
			}
			return name, true
		}
	}
	if rest, found := strings.CutPrefix(text, "TAG"); found {
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if i, err := strconv.Atoi(rest[:n]); err == nil && i >= 1 && i <= len(m.Check.Tags) {
			return text[:3+n], true
		}
	}
	return "", false
}

// value is the value of the variable name (one variableName found).
func (m *Message) value(name string, where varContext) string {
	c := &m.Check
	enc := func(s string) string {
		if where == inURL {
			return pyQuote(s)
		}
		return s
	}
	switch name {
	case "CODE":
		return c.UUID
	case "STATUS":
		return m.status()
	case "NOW":
		return enc(m.flipTime().Format("2006-01-02T15:04:05") + "+00:00")
	case "NAME_JSON":
		return enc(jsonString(c.name()))
	case "NAME":
		return enc(c.name())
	case "SLUG":
		return c.Slug
	case "DESC":
		return enc(c.Desc)
	case "TAGS":
		return enc(strings.Join(c.Tags, " "))
	case "PING_URL":
		return enc(c.PingURL)
	case "EXITSTATUS":
		if c.ExitStatus == nil {
			return "-1"
		}
		return strconv.Itoa(*c.ExitStatus)
	case "JSON":
		return enc(string(m.checkJSON()))
	case "SUMMARY":
		return enc(m.summary())
	case "REASON_TEXT":
		return enc(m.reasonText())
	case "REASON":
		if m.Up {
			return ""
		}
		return enc(m.Reason)
	case "NOTICE":
		return enc(string(m.Notice))
	case "DETAILS_URL":
		return enc(c.DetailsURL)
	case "BODY_JSON", "BODY":
		body, _ := words.Cut(strings.ToValidUTF8(string(c.LastPingBody), "\uFFFD"), webhookBodyLimit)
		if name == "BODY_JSON" {
			body = jsonString(body)
		}
		return body
	}
	// $TAG<n>: variableName found n within the tags.
	i, _ := strconv.Atoi(strings.TrimPrefix(name, "TAG"))
	return enc(c.Tags[i-1])
}

// checkJSON is $JSON: CheckInfo.JSON when set, else a summary with the
// field names of the reference's "Get a single check".
func (m *Message) checkJSON() []byte {
	c := &m.Check
	if len(c.JSON) > 0 {
		return c.JSON
	}
	doc := struct {
		Name     string  `json:"name"`
		Slug     string  `json:"slug"`
		Tags     string  `json:"tags"`
		Desc     string  `json:"desc"`
		Grace    int64   `json:"grace"`
		NPings   int64   `json:"n_pings"`
		Status   string  `json:"status"`
		LastPing *string `json:"last_ping"`
		UUID     string  `json:"uuid,omitempty"`
		PingURL  string  `json:"ping_url,omitempty"`
		Timeout  int64   `json:"timeout,omitempty"`
		Schedule string  `json:"schedule,omitempty"`
		TZ       string  `json:"tz,omitempty"`
	}{
		Name: c.name(), Slug: c.Slug, Tags: strings.Join(c.Tags, " "), Desc: c.Desc,
		Grace: int64(c.Grace.Seconds()), NPings: c.NPings, Status: m.status(),
		UUID: c.UUID, PingURL: c.PingURL,
	}
	if !c.LastPing.IsZero() {
		s := c.LastPing.UTC().Format("2006-01-02T15:04:05") + "+00:00"
		doc.LastPing = &s
	}
	if c.Schedule != "" {
		doc.Schedule, doc.TZ = c.Schedule, c.TZ
		if doc.TZ == "" {
			doc.TZ = "UTC"
		}
	} else {
		doc.Timeout = int64(c.Timeout.Seconds())
	}
	return []byte(pyJSON(doc))
}

func jsonString(s string) string { return pyJSON(s) }

// pyJSON encodes v as Python's json.dumps does by default: non-ASCII
// characters as \uXXXX escapes, and "&", "<", ">" as they are.
func pyJSON(v any) string {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	var b strings.Builder
	for _, r := range strings.TrimSuffix(buf.String(), "\n") {
		switch {
		case r < 0x80:
			b.WriteRune(r)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			fmt.Fprintf(&b, "\\u%04x\\u%04x", r1, r2)
		default:
			fmt.Fprintf(&b, "\\u%04x", r)
		}
	}
	return b.String()
}

// pyQuote percent-encodes s as Python's urllib.parse.quote does: letters,
// digits, "_.-~" and "/" stay, every other byte becomes %XX.
func pyQuote(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.-~/", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// latin1 prepares a header value: control characters become spaces,
// characters up to U+00FF become one Latin-1 byte and the rest XML character
// references, as the reference sends header values.
func latin1(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == utf8.RuneError:
			b.WriteString("&#65533;")
		case (r < ' ' && r != '\t') || r == 0x7f:
			b.WriteByte(' ')
		case r <= 0xff:
			b.WriteByte(byte(r))
		default:
			fmt.Fprintf(&b, "&#%d;", r)
		}
	}
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
