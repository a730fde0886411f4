package notify

import (
	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// spikeKind triggers and resolves Spike.sh incidents through a Spike.sh
// "Healthchecks" integration (Integrations › New integration ›
// Healthchecks): it posts JSON to the integration's webhook URL, kept in a
// Secret since whoever knows it can page the team. The integration takes
// the reference's payload, {check_id, title, message, status}, and
// resolves by check_id; Spike.sh publishes no further description of it,
// so Vigil sends exactly those fields.
//
// On a down flip it sends {check_id, title (the short title), message (the
// message as plain text: reason, facts, last ping body excerpt and link),
// status "down"}, which triggers an incident; a re-alert or an escalation
// sends it again, which Spike.sh groups into the open incident. On an up
// flip it sends the same with status "up", which resolves the incident with
// that check_id. The check_id is "vigil-<check uuid>" ("vigil-test-<uuid>"
// for test messages, so a test never touches a real incident). Failure and
// maintenance notices are not sent (see Send). Any 2xx answer is success.
//
// Spike.sh's generic webhook (https://docs.spike.sh/integrations-guideline/integrating-with-webhooks)
// is not used: it groups and resolves incidents by their title, which
// changes between a down and its up.
type spikeKind struct {
	tracker
	incomingWebhookKind
}

func init() {
	register(v1.ChannelSpike, spikeKind{incomingWebhookKind: incomingWebhookKind{
		settings: func(s *v1.ChannelSpec) *v1.IncomingWebhookChannel { return s.Spike },
		payload:  spikePayload,
	}})
}

// spikeEvent is the Healthchecks integration's request body.
type spikeEvent struct {
	CheckID string `json:"check_id"`
	Title   string `json:"title"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

func spikePayload(m *Message) any {
	status := "down"
	if m.Up {
		status = "up"
	}
	return spikeEvent{
		CheckID: incidentKey(m),
		Title:   m.shortTitle(),
		Message: m.plainText(chatBodyLimit),
		Status:  status,
	}
}
