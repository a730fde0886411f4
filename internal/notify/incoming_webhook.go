package notify

import v1 "github.com/vigil-operator/vigil/api/v1alpha1"

func init() {
	register(v1.ChannelSlack, incomingWebhookKind{func(s *v1.ChannelSpec) *v1.IncomingWebhookChannel { return s.Slack }})
	register(v1.ChannelMSTeams, incomingWebhookKind{func(s *v1.ChannelSpec) *v1.IncomingWebhookChannel { return s.MSTeams }})
	register(v1.ChannelDiscord, incomingWebhookKind{func(s *v1.ChannelSpec) *v1.IncomingWebhookChannel { return s.Discord }})
}

// incomingWebhookKind covers the chat services whose only setting is an
// incoming-webhook URL kept in a Secret.
type incomingWebhookKind struct {
	settings func(*v1.ChannelSpec) *v1.IncomingWebhookChannel
}

func (k incomingWebhookKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if s := k.settings(spec); s != nil {
		return []v1.SecretKeyRef{s.URLSecretRef}
	}
	return nil
}
