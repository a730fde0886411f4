package notify

import (
	"context"
	"errors"
	"net/http"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelVictorOps, victorOpsKind{}) }

// victorOpsKind opens and recovers Splunk On-Call (VictorOps) incidents
// through the REST endpoint integration
// (https://help.victorops.com/knowledge-base/rest-endpoint-integration-guide/):
// a POST of JSON to the integration's URL, which carries the API key and
// the routing key, so it is read from a Secret.
//
//   - Down, re-alert and escalation: message_type CRITICAL, with entity_id
//     (incidentKey: Splunk On-Call keeps one incident per entity, so a
//     re-alert updates it), entity_display_name (the title),
//     state_message (the message as text), state_start_time (the flip, in
//     Unix seconds), monitoring_tool "Vigil", and the check's link and
//     namespace as extra fields.
//   - Up: message_type RECOVERY under the same entity_id, which resolves
//     the incident.
type victorOpsKind struct{ tracker }

// Splunk On-Call's limit of a state_message, in characters.
const voStateMessageMax = 20000

func (victorOpsKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.VictorOps == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.VictorOps.URLSecretRef}
}

type voAlert struct {
	MessageType       string `json:"message_type"`
	EntityID          string `json:"entity_id"`
	EntityDisplayName string `json:"entity_display_name"`
	StateMessage      string `json:"state_message"`
	StateStartTime    int64  `json:"state_start_time"`
	MonitoringTool    string `json:"monitoring_tool"`
	VigilURL          string `json:"vigil_url,omitempty"`
	VigilNamespace    string `json:"vigil_namespace,omitempty"`
}

func (victorOpsKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.VictorOps
	if s == nil {
		return Permanent(errors.New("the channel has no victorops settings"))
	}
	raw, err := d.secret(ctx, s.URLSecretRef)
	if err != nil {
		return err
	}
	t, err := parseTarget(raw, true)
	if err != nil {
		return err
	}
	m := &d.Message
	a := voAlert{
		MessageType:       "CRITICAL",
		EntityID:          incidentKey(m),
		EntityDisplayName: m.shortTitle(),
		StateMessage:      ellipsize(m.plainText(chatBodyLimit), voStateMessageMax),
		StateStartTime:    m.flipTime().Unix(),
		MonitoringTool:    "Vigil",
		VigilURL:          m.Check.DetailsURL,
		VigilNamespace:    m.Check.Namespace,
	}
	if m.Up {
		a.MessageType = "RECOVERY"
	}
	return d.do(ctx, request{method: http.MethodPost, target: t, json: a})
}
