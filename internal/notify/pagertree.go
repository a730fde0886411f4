package notify

import (
	"context"
	"errors"
	"net/http"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelPagerTree, pagerTreeKind{}) }

// pagerTreeKind creates and resolves PagerTree alerts through a webhook
// integration (https://pagertree.com/docs/integration-guides/webhook): a
// POST of JSON to the integration's endpoint URL, kept in a Secret.
//
//   - Down, re-alert and escalation: event_type "create" with Id
//     (incidentKey, which PagerTree keeps as the alert's third-party id),
//     Title (the title), Description (the message as text), Tags (the
//     check's), urgency (the Channel's) and Meta (namespace, check, reason,
//     link).
//   - Up: event_type "resolve" with the same Id, Title and Description.
type pagerTreeKind struct{ tracker }

// PagerTree accepts messages up to 32,768 characters.
const ptDescriptionMax = 32000

func (pagerTreeKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.PagerTree == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.PagerTree.URLSecretRef}
}

type ptEvent struct {
	EventType   string            `json:"event_type"`
	ID          string            `json:"Id"`
	Title       string            `json:"Title"`
	Description string            `json:"Description"`
	Tags        []string          `json:"Tags"`
	Urgency     string            `json:"urgency,omitempty"`
	Meta        map[string]string `json:"Meta"`
}

func (pagerTreeKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.PagerTree
	if s == nil {
		return Permanent(errors.New("the channel has no pagertree settings"))
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
	ev := ptEvent{
		EventType:   "create",
		ID:          incidentKey(m),
		Title:       m.shortTitle(),
		Description: ellipsize(m.plainText(chatBodyLimit), ptDescriptionMax),
		Tags:        append([]string{}, m.Check.Tags...),
		Urgency:     s.Urgency,
		Meta:        map[string]string{"namespace": m.Check.Namespace, "check": m.Check.Object},
	}
	if r := m.reasonText(); r != "" {
		ev.Meta["reason"] = r
	}
	if u := m.Check.DetailsURL; u != "" {
		ev.Meta["url"] = u
	}
	if m.Up {
		ev.EventType, ev.Urgency = "resolve", ""
	}
	return d.do(ctx, request{method: http.MethodPost, target: t, json: ev})
}
