package notify

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelPushover, pushoverKind{}) }

// pushoverKind sends a Pushover notification: a form-encoded POST to
// <url>/1/messages.json of token (the application's), user (the user or
// group key), title (the short title, "backup is DOWN"), message (HTML,
// html=1: the reason, the facts, the last ping body), priority, sound,
// timestamp (the flip's) and url (CheckInfo.DetailsURL) with url_title.
//
// A down flip, a re-alert and an escalation go at the channel's priority;
// at 2 (emergency) Pushover repeats them every retry seconds until someone
// acknowledges them or expire passes, and they carry the tag
// "vigil-<uuid>" ("vigil-test-<uuid>" for tests). The matching up flip
// first cancels what still repeats under that tag
// (POST <url>/1/receipts/cancel_by_tag/<tag>.json), then goes at the
// channel's upPriority, as maintenance notices do. A failure notice (the
// check is still up) goes at the channel's priority but never as an
// emergency, which no up would cancel.
type pushoverKind struct{}

// PushoverAPIURL is the base of Pushover's API, used when a channel sets no
// URL.
const PushoverAPIURL = "https://api.pushover.net"

// Pushover's limits.
const (
	pushoverMessageMax    = 1024 // characters
	pushoverTitleMax      = 250
	pushoverURLMax        = 512
	pushoverRetryMin      = 30 // seconds
	pushoverExpireMax     = 10800
	pushoverEmergency     = 2
	pushoverDefaultRetry  = 300
	pushoverDefaultExpire = 3600
)

// pushoverURLTitle names the link under the message.
const pushoverURLTitle = "Check details"

func (pushoverKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Pushover == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.Pushover.TokenSecretRef, spec.Pushover.UserKeySecretRef}
}

func (pushoverKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Pushover
	if s == nil {
		return Permanent(errors.New("the channel has no pushover settings"))
	}
	base, err := parseTarget(cmp.Or(s.URL, PushoverAPIURL), false)
	if err != nil {
		return err
	}
	token, err := d.secret(ctx, s.TokenSecretRef)
	if err != nil {
		return err
	}
	user, err := d.secret(ctx, s.UserKeySecretRef)
	if err != nil {
		return err
	}
	m := &d.Message
	if m.Up && s.Priority == pushoverEmergency {
		cancel := joinTargetPath(base, "1", "receipts", "cancel_by_tag", pushoverTag(m)+".json")
		if err := d.do(ctx, request{method: http.MethodPost, target: cancel, form: url.Values{"token": {token}}}); err != nil {
			return err
		}
	}
	t := joinTargetPath(base, "1", "messages.json")
	return d.do(ctx, request{method: http.MethodPost, target: t, form: pushoverForm(s, m, token, user)})
}

func pushoverForm(s *v1.PushoverChannel, m *Message, token, user string) url.Values {
	priority := pushoverPriority(s, m)
	form := url.Values{
		"token":     {token},
		"user":      {user},
		"title":     {words.Ellipsize(m.shortTitle(), pushoverTitleMax)},
		"priority":  {strconv.Itoa(priority)},
		"timestamp": {strconv.FormatInt(m.flipTime().Unix(), 10)},
	}
	link := m.Check.DetailsURL
	if utf8.RuneCountInString(link) > pushoverURLMax {
		link = "" // a link cut short leads nowhere; the message keeps it
	}
	message, html := pushoverMessage(m, link != "")
	form.Set("message", message)
	if html {
		form.Set("html", "1")
	}
	if link != "" {
		form.Set("url", link)
		form.Set("url_title", pushoverURLTitle)
	}
	if s.Sound != "" {
		form.Set("sound", s.Sound)
	}
	if priority == pushoverEmergency {
		retry := max(int(cmp.Or(s.Retry, pushoverDefaultRetry)), pushoverRetryMin)
		expire := min(int(cmp.Or(s.Expire, pushoverDefaultExpire)), pushoverExpireMax)
		form.Set("retry", strconv.Itoa(retry))
		form.Set("expire", strconv.Itoa(max(expire, retry)))
		form.Set("tags", pushoverTag(m))
	}
	return form
}

// pushoverPriority is the priority of the message, -2 to 2.
func pushoverPriority(s *v1.PushoverChannel, m *Message) int {
	switch {
	case m.calm():
		return clampInt(int(s.UpPriority), -2, 1)
	case m.aside():
		return clampInt(int(s.Priority), -2, 1)
	}
	return clampInt(int(s.Priority), -2, pushoverEmergency)
}

// pushoverMessage is the message in Pushover's HTML and true, within its
// limit; or, should even the shortest HTML be too long, plain text cut
// short and false. Without the title line, which is Pushover's title,
// when the link goes in the url field; with it, linked, otherwise.
func pushoverMessage(m *Message, linkApart bool) (string, bool) {
	render := func(text string) string {
		if linkApart {
			return withoutTitleLine(m, text)
		}
		return text
	}
	if text, ok := fitWithExcerpt(func(n int) string { return render(pushoverHTML(m.htmlText("\n", n))) },
		pushoverMessageMax, utf8.RuneCountInString); ok {
		return text, true
	}
	return words.Ellipsize(render(m.plainText(0)), pushoverMessageMax), false
}

// pushoverHTML keeps to the tags Pushover documents (b, i, u, font and
// a): htmlText's code and pre go, their text stays. htmlText escapes the
// check's own text, so every tag in it is one of its own.
var pushoverHTML = strings.NewReplacer("<code>", "", "</code>", "", "<pre>", "", "</pre>", "").Replace

// pushoverTag names a check's emergency notifications, so its up can
// cancel them: "vigil-<uuid>", "vigil-test-<uuid>" for tests.
func pushoverTag(m *Message) string {
	id := m.Check.UUID
	if id == "" {
		id = m.Check.Namespace + "-" + m.Check.Object
	}
	prefix := "vigil-"
	if m.Test {
		prefix = "vigil-test-"
	}
	return prefix + pushoverTagUnsafe.ReplaceAllString(id, "-")
}

var pushoverTagUnsafe = regexp.MustCompile(`[^A-Za-z0-9_-]`)
