package notify

import (
	"sort"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelWebhook, webhookKind{}) }

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
		headers := make([]string, 0, len(r.HeaderSecretRefs))
		for h := range r.HeaderSecretRefs {
			headers = append(headers, h)
		}
		sort.Strings(headers)
		for _, h := range headers {
			refs = append(refs, r.HeaderSecretRefs[h])
		}
	}
	return refs
}
