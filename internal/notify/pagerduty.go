package notify

import (
	"context"
	"errors"
	"net/http"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelPagerDuty, pagerDutyKind{}) }

// pagerDutyKind sends PagerDuty Events API v2 events: on a down flip a
// "trigger" with payload {summary "<name> is DOWN", source
// "<namespace>/<check>", severity "critical", timestamp, component (the
// check's name), group (the namespace), class (the reason), custom_details}; on an up flip a "resolve". Both carry the same dedup_key,
// "vigil-<uuid>" ("vigil-test-<uuid>" for test messages, so a test never
// touches a real incident). Any 2xx answer (PagerDuty's is 202) is success.
//
// An acknowledgement of the down (Notice "ack") sends an "acknowledge"
// event with the same dedup_key: the incident is acknowledged in
// PagerDuty too, and stops escalating there.
type pagerDutyKind struct{ tracker }

func (pagerDutyKind) acknowledges() {}

// PagerDutyEventsURL is the Events API v2 endpoint used when a channel sets
// no URL.
const PagerDutyEventsURL = "https://events.pagerduty.com/v2/enqueue"

func (pagerDutyKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.PagerDuty == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.PagerDuty.RoutingKeySecretRef}
}

type pdEvent struct {
	RoutingKey  string     `json:"routing_key"`
	EventAction string     `json:"event_action"`
	DedupKey    string     `json:"dedup_key"`
	Payload     *pdPayload `json:"payload,omitempty"`
	Client      string     `json:"client,omitempty"`
	ClientURL   string     `json:"client_url,omitempty"`
}

type pdPayload struct {
	Summary       string            `json:"summary"`
	Source        string            `json:"source"`
	Severity      string            `json:"severity"`
	Timestamp     string            `json:"timestamp"`
	Component     string            `json:"component,omitempty"`
	Group         string            `json:"group,omitempty"`
	Class         string            `json:"class,omitempty"`
	CustomDetails map[string]string `json:"custom_details"`
}

// Limits of the Events API v2.
const (
	pdSummaryMax  = 1024
	pdDedupKeyMax = 255
)

func (pagerDutyKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.PagerDuty
	if s == nil {
		return Permanent(errors.New("the channel has no pagerduty settings"))
	}
	raw := s.URL
	if raw == "" {
		raw = PagerDutyEventsURL
	}
	t, err := parseTarget(raw, false)
	if err != nil {
		return err
	}
	key, err := d.secret(ctx, s.RoutingKeySecretRef)
	if err != nil {
		return err
	}
	return d.do(ctx, request{method: http.MethodPost, target: t, json: pagerDutyEvent(&d.Message, key)})
}

func pagerDutyEvent(m *Message, routingKey string) pdEvent {
	c := &m.Check
	ev := pdEvent{
		RoutingKey:  routingKey,
		EventAction: "resolve",
		DedupKey:    incidentKey(m),
	}
	if m.Notice == monitor.NoticeAck {
		ev.EventAction = "acknowledge"
		return ev
	}
	if m.Up {
		return ev
	}
	ev.EventAction = "trigger"
	ev.Client, ev.ClientURL = "Vigil", c.DetailsURL
	details := map[string]string{}
	for _, f := range m.facts() {
		details[f.Title] = f.Value
	}
	if r := m.reasonText(); r != "" {
		details["Reason"] = r
	}
	if m.Text != "" {
		details["Message"] = m.Text
	}
	ev.Payload = &pdPayload{
		Summary:       words.Ellipsize(m.shortTitle(), pdSummaryMax),
		Source:        c.Namespace + "/" + c.Object,
		Severity:      "critical",
		Timestamp:     m.flipTime().Format("2006-01-02T15:04:05.000Z07:00"),
		Component:     c.name(),
		Group:         c.Namespace,
		Class:         m.Reason,
		CustomDetails: details,
	}
	return ev
}

// incidentKey is the key every incident tracker opens and resolves a
// check's incident under, stable per check: "vigil-<uuid>" (or the
// namespace and name of a check without one), "vigil-test-<uuid>" for a
// test message, so that a test never touches a real incident.
func incidentKey(m *Message) string {
	id := m.Check.UUID
	if id == "" {
		id = m.Check.Namespace + "/" + m.Check.Object
	}
	prefix := "vigil-"
	if m.Test {
		prefix = "vigil-test-"
	}
	k, _ := words.Cut(prefix+id, pdDedupKeyMax)
	return k
}
