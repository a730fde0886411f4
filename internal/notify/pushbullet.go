package notify

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelPushbullet, pushbulletKind{}) }

// pushbulletKind creates a Pushbullet push: a POST to <url>/v2/pushes with
// the account's access token in the Access-Token header and the JSON
// {type, title, body, url, device_iden}. The push is a "link" to the
// check's page (CheckInfo.DetailsURL) when there is one, else a "note";
// its title is the message's short title ("backup is DOWN"), its body the
// rest in plain text (the reason, the facts, the last ping body and, in a
// note, the link); device_iden, when
// the channel names a device, pushes to it alone. Every event is sent, each
// worded by its title; nothing is left to resolve.
type pushbulletKind struct{}

// PushbulletAPIURL is the base of Pushbullet's API, used when a channel
// sets no URL.
const PushbulletAPIURL = "https://api.pushbullet.com"

// pushbulletTitleMax bounds the title, as the other push services do:
// Pushbullet documents no limit.
const pushbulletTitleMax = 250

type pushbulletPush struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Body       string `json:"body"`
	URL        string `json:"url,omitempty"`
	DeviceIden string `json:"device_iden,omitempty"`
}

func (pushbulletKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Pushbullet == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.Pushbullet.TokenSecretRef}
}

func (pushbulletKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Pushbullet
	if s == nil {
		return Permanent(errors.New("the channel has no pushbullet settings"))
	}
	t, err := parseTarget(cmp.Or(s.URL, PushbulletAPIURL), false)
	if err != nil {
		return err
	}
	t = joinTargetPath(t, "v2", "pushes")
	token, err := d.secret(ctx, s.TokenSecretRef)
	if err != nil {
		return err
	}
	if !validHeaderValue(token) {
		return Permanent(errors.New("the pushbullet access token contains control characters"))
	}
	h := http.Header{}
	h.Set("Access-Token", token)
	return d.do(ctx, request{method: http.MethodPost, target: t, header: h, json: pushbulletPushOf(&d.Message, s.DeviceIden)})
}

func pushbulletPushOf(m *Message, device string) pushbulletPush {
	p := pushbulletPush{
		Type:       "note",
		Title:      words.Ellipsize(m.shortTitle(), pushbulletTitleMax),
		Body:       withoutTitleLine(m, m.plainText(chatBodyLimit)),
		DeviceIden: device,
	}
	if u := m.Check.DetailsURL; u != "" {
		// A link push shows its URL: the body need not end with it too.
		p.Type, p.URL, p.Body = "link", u, strings.TrimSuffix(p.Body, "\n\n"+u)
	}
	return p
}
