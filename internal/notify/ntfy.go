package notify

import v1 "github.com/vigil-operator/vigil/api/v1alpha1"

func init() { register(v1.ChannelNtfy, ntfyKind{}) }

type ntfyKind struct{}

func (ntfyKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Ntfy == nil {
		return nil
	}
	return optional(spec.Ntfy.TokenSecretRef)
}
