package notify

import (
	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// victorOpsKind opens and recovers Splunk On-Call (formerly VictorOps)
// incidents through the REST endpoint integration
// (https://docs.splunk.com/observability/en/sp-oncall/spoc-integrations/rest-endpoint-integration-guide.html):
// it posts JSON to the integration's URL, kept in a Secret because it holds
// the REST endpoint key (https://alert.victorops.com/integrations/generic/
// 20131114/alert/<key>/<routing key>).
//
// On a down flip it sends {message_type "CRITICAL", entity_id,
// entity_display_name (the short title), state_message (the message as
// plain text: reason, facts, last ping body excerpt and link),
// state_start_time (the flip's time, in Unix seconds), monitoring_tool
// "Vigil", "vo_annotate.u.Check" (the link to the check's page, as a URL
// annotation)}, which opens an incident; a re-alert or an escalation sends
// it again, which Splunk On-Call rolls up into the open incident (or opens
// a new one if someone resolved it while the check stayed down). On an up
// flip it sends the same with message_type "RECOVERY" and no annotation
// (Splunk On-Call annotates only INFO, WARNING and CRITICAL alerts), which
// resolves the incident. Both carry the entity_id "vigil-<check uuid>"
// ("vigil-test-<uuid>" for test messages, so a test never touches a real
// incident). Failure and maintenance notices are not sent (see Send). Any
// 2xx answer is success.
//
// Fields are bounded to Splunk On-Call's documented limits
// (https://docs.splunk.com/observability/en/sp-oncall/alerts/incident-fields-glossary.html):
// 512 characters for entity_id, 20,480 for state_message, 1,024 for the
// other fields and 1,124 for annotations; a link too long for an
// annotation is left to state_message.
type victorOpsKind struct {
	tracker
	incomingWebhookKind
}

func init() {
	register(v1.ChannelVictorOps, victorOpsKind{incomingWebhookKind: incomingWebhookKind{
		settings: func(s *v1.ChannelSpec) *v1.IncomingWebhookChannel { return s.VictorOps },
		payload:  victorOpsPayload,
	}})
}

// Limits of Splunk On-Call's alert fields, in characters.
const (
	victorOpsFieldMax        = 1024
	victorOpsStateMessageMax = 20480
	victorOpsAnnotationMax   = 1124
)

// victorOpsAlert is a REST endpoint alert.
type victorOpsAlert struct {
	MessageType       string `json:"message_type"`
	EntityID          string `json:"entity_id"`
	EntityDisplayName string `json:"entity_display_name"`
	StateMessage      string `json:"state_message"`
	StateStartTime    int64  `json:"state_start_time"`
	MonitoringTool    string `json:"monitoring_tool"`
	// LinkAnnotation is a URL annotation titled "Check".
	LinkAnnotation string `json:"vo_annotate.u.Check,omitempty"`
}

func victorOpsPayload(m *Message) any {
	a := victorOpsAlert{
		MessageType:       "CRITICAL",
		EntityID:          incidentKey(m), // at most 255 characters; entity_id takes 512
		EntityDisplayName: ellipsizeUTF16(m.shortTitle(), victorOpsFieldMax),
		StateMessage:      ellipsizeUTF16(m.plainText(chatBodyLimit), victorOpsStateMessageMax),
		StateStartTime:    m.flipTime().Unix(),
		MonitoringTool:    "Vigil",
	}
	if m.Up {
		a.MessageType = "RECOVERY"
	} else if u := m.Check.DetailsURL; utf16Len(u) <= victorOpsAnnotationMax {
		a.LinkAnnotation = u
	}
	return a
}
