package notify

import v1 "github.com/vigil-operator/vigil/api/v1alpha1"

func init() { register(v1.ChannelEmail, emailKind{}) }

type emailKind struct{}

func (emailKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Email == nil {
		return nil
	}
	return credentialRefs(spec.Email.CredentialsSecretRef)
}
