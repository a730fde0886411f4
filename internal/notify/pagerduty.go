package notify

import v1 "github.com/vigil-operator/vigil/api/v1alpha1"

func init() { register(v1.ChannelPagerDuty, pagerDutyKind{}) }

type pagerDutyKind struct{}

func (pagerDutyKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.PagerDuty == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.PagerDuty.RoutingKeySecretRef}
}
