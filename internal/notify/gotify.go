package notify

import (
	"context"
	"errors"
	"net/http"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelGotify, gotifyKind{}) }

// gotifyKind posts a message to a Gotify server: a POST to <url>/message
// with the application's token in the X-Gotify-Key header and the JSON
// {title, message, priority, extras}. The title is the message's short
// title ("backup is DOWN"); the message is the markdown
// rendering (the title linked to the check's page, the reason, the facts,
// the last ping body), shown as markdown by the clients (extras
// "client::display" contentType "text/markdown"); a tap on the Android
// notification opens the check's page ("client::notification" click url,
// when there is one). Down flips, re-alerts, escalations and failure
// notices go at the channel's priority, up flips and maintenance notices at
// 5. Nothing is left to resolve.
type gotifyKind struct{}

const (
	// gotifyCalmPriority is the priority of up messages.
	gotifyCalmPriority = 5
	// gotifyTitleMax bounds the title, as the other push services do:
	// Gotify documents no limit.
	gotifyTitleMax = 250
)

type gotifyMessage struct {
	Title    string         `json:"title"`
	Message  string         `json:"message"`
	Priority int            `json:"priority"`
	Extras   map[string]any `json:"extras"`
}

func (gotifyKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Gotify == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.Gotify.TokenSecretRef}
}

func (gotifyKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Gotify
	if s == nil {
		return Permanent(errors.New("the channel has no gotify settings"))
	}
	t, err := parseTarget(s.URL, false)
	if err != nil {
		return err
	}
	t = joinTargetPath(t, "message")
	token, err := d.secret(ctx, s.TokenSecretRef)
	if err != nil {
		return err
	}
	if !validHeaderValue(token) {
		return Permanent(errors.New("the gotify token contains control characters"))
	}
	h := http.Header{}
	h.Set("X-Gotify-Key", token)
	return d.do(ctx, request{method: http.MethodPost, target: t, header: h, json: gotifyMessageOf(&d.Message, s.Priority)})
}

func gotifyMessageOf(m *Message, priority int32) gotifyMessage {
	p := gotifyCalmPriority
	if !m.calm() {
		p = clampInt(int(priority), 0, 10) // 0 is Gotify's silent priority
	}
	extras := map[string]any{"client::display": map[string]string{"contentType": "text/markdown"}}
	if u := m.Check.DetailsURL; u != "" {
		extras["client::notification"] = map[string]any{"click": map[string]string{"url": u}}
	}
	return gotifyMessage{
		Title:    words.Ellipsize(m.shortTitle(), gotifyTitleMax),
		Message:  m.markdown(),
		Priority: p,
		Extras:   extras,
	}
}
