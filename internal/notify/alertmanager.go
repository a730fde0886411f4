package notify

import v1 "github.com/vigil-operator/vigil/api/v1alpha1"

func init() { register(v1.ChannelAlertmanager, alertmanagerKind{}) }

type alertmanagerKind struct{}

func (alertmanagerKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Alertmanager == nil {
		return nil
	}
	return optional(spec.Alertmanager.BearerTokenSecretRef)
}
