package notify

import (
	"context"
	"fmt"
	"net/http"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// incomingWebhookKind covers the chat services whose only setting is an
// incoming-webhook URL kept in a Secret (Slack, Microsoft Teams and
// others): each posts its own JSON payload to that URL. Their files
// register one. Discord, which has a setting more, posts the same way
// (postToWebhook).
type incomingWebhookKind struct {
	// settings returns the kind's settings field of a ChannelSpec.
	settings func(*v1.ChannelSpec) *v1.IncomingWebhookChannel
	// payload builds the JSON document to post.
	payload func(m *Message) any
}

func (k incomingWebhookKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if s := k.settings(spec); s != nil {
		return []v1.SecretKeyRef{s.URLSecretRef}
	}
	return nil
}

// Send posts the payload to the webhook URL; any 2xx answer is success.
func (k incomingWebhookKind) Send(ctx context.Context, d Delivery) error {
	s := k.settings(&d.Channel.Spec)
	if s == nil {
		return Permanent(fmt.Errorf("the channel has no %s settings", d.Channel.Spec.Kind))
	}
	return d.postToWebhook(ctx, s, k.payload(&d.Message))
}

// postToWebhook posts payload as JSON to the webhook URL that s reads from
// a Secret; any 2xx answer is success.
func (d *Delivery) postToWebhook(ctx context.Context, s *v1.IncomingWebhookChannel, payload any) error {
	raw, err := d.secret(ctx, s.URLSecretRef)
	if err != nil {
		return err
	}
	t, err := parseTarget(raw, true)
	if err != nil {
		return err
	}
	return d.do(ctx, request{method: http.MethodPost, target: t, json: payload})
}
