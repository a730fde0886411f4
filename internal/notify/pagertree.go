package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelPagerTree, pagerTreeKind{}) }

// pagerTreeKind creates and resolves PagerTree alerts through a Webhook
// integration (https://pagertree.com/docs/integration-guides/webhook): it
// posts JSON to the integration's endpoint URL
// (https://api.pagertree.com/integration/int_...), kept in a Secret since
// whoever knows it can page the team.
//
// On a down flip it sends {event_type "create", Id, Title (the short
// title), Description (the message in HTML, which PagerTree renders: the
// linked title, reason, facts and last ping body excerpt), Urgency (the
// channel's: low, medium, high or critical; high by default), Tags (the
// check's), Meta (reason, the Channel's own text, link, facts and body
// excerpt, as strings)}. A re-alert or an escalation sends it again, which
// PagerTree de-duplicates into the open alert (or opens a new one if
// someone resolved it while the check stayed down). On an up flip it sends
// the same with event_type "resolve", which resolves the alert with that
// Id. The Id is "vigil-<check uuid>" ("vigil-test-<uuid>" for test
// messages, so a test never touches a real alert). Failure and maintenance
// notices are not sent (see Send). Any 2xx answer is success.
//
// PagerTree documents no length limits; the parts are bounded by the
// Check's own (a description of at most 10,000 characters) and the last
// ping body excerpt's (1,000 bytes). The Meta keys PagerTree reads itself
// (incident, incident_severity, incident_message) are never sent, so an
// alert never declares a PagerTree incident.
type pagerTreeKind struct{ tracker }

func (pagerTreeKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.PagerTree == nil {
		return nil
	}
	return append([]v1.SecretKeyRef{spec.PagerTree.URLSecretRef}, optional(spec.PagerTree.TokenSecretRef)...)
}

// pagerTreeEvent is the Webhook integration's request body.
type pagerTreeEvent struct {
	EventType   string            `json:"event_type"`
	ID          string            `json:"Id"`
	Title       string            `json:"Title"`
	Description string            `json:"Description"`
	Urgency     string            `json:"Urgency"`
	Tags        []string          `json:"Tags"`
	Meta        map[string]string `json:"Meta"`
}

func (pagerTreeKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.PagerTree
	if s == nil {
		return Permanent(errors.New("the channel has no pagertree settings"))
	}
	urgency, err := pagerTreeUrgency(s.Urgency)
	if err != nil {
		return err
	}
	raw, err := d.secret(ctx, s.URLSecretRef)
	if err != nil {
		return err
	}
	t, err := parseTarget(raw, true)
	if err != nil {
		return err
	}
	h := http.Header{}
	if s.TokenSecretRef != nil {
		// An integration with a token refuses requests without it.
		token, err := d.secret(ctx, *s.TokenSecretRef)
		if err != nil {
			return err
		}
		if !validHeaderValue(token) {
			return Permanent(errors.New("the PagerTree token contains control characters"))
		}
		h.Set("pagertree-token", token)
	}
	return d.do(ctx, request{method: http.MethodPost, target: t, header: h, json: pagerTreePayload(&d.Message, urgency)})
}

// pagerTreeUrgency checks the channel's urgency; empty means high.
func pagerTreeUrgency(u string) (string, error) {
	switch u {
	case "":
		return "high", nil
	case "low", "medium", "high", "critical":
		return u, nil
	}
	return "", Permanent(fmt.Errorf("unknown PagerTree urgency %q (want low, medium, high or critical)", u))
}

func pagerTreePayload(m *Message, urgency string) pagerTreeEvent {
	ev := pagerTreeEvent{
		EventType:   "create",
		ID:          incidentKey(m),
		Title:       m.shortTitle(),
		Description: m.htmlText("<br>", chatBodyLimit),
		Urgency:     urgency,
		Tags:        append([]string{}, m.Check.Tags...),
		Meta:        map[string]string{},
	}
	if m.Up {
		ev.EventType = "resolve"
	}
	// The keys are the facts' titles ("Reason", "Namespace", ...), never
	// the ones PagerTree reads itself.
	for _, f := range m.pagingFields() {
		ev.Meta[f.Key] = f.Value
	}
	return ev
}
