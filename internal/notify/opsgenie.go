package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelOpsgenie, opsgenieKind{}) }

// opsgenieKind creates and closes alerts through Opsgenie's Alert API v2
// (https://docs.opsgenie.com/docs/alert-api), authenticated with an API
// integration's key ("Authorization: GenieKey <key>"):
//
//   - Down, re-alert and escalation: POST <base>/v2/alerts with message
//     (the title, at most 130 characters), alias (incidentKey: Opsgenie
//     de-duplicates a re-alert into the open alert), description (the
//     message as text), priority (the Channel's, P3 by default), source
//     "Vigil", entity (namespace/check), tags (the check's) and details (the
//     facts, the reason and the link).
//   - Up: POST <base>/v2/alerts/<alias>/close?identifierType=alias with
//     source and a note.
//
// The base is https://api.opsgenie.com, https://api.eu.opsgenie.com for
// region eu, or the Channel's url: Jira Service Management's operations
// API (https://api.atlassian.com/jsm/ops/integration), where Opsgenie's
// integrations move, takes the same requests under its own base. Opsgenie
// answers 202 (the request is processed asynchronously).
type opsgenieKind struct{ tracker }

// The Opsgenie API bases of the regions.
const (
	OpsgenieUSURL = "https://api.opsgenie.com"
	OpsgenieEUURL = "https://api.eu.opsgenie.com"
)

// Limits of the Alert API, in characters.
const (
	ogMessageMax     = 130
	ogDescriptionMax = 15000
	ogEntityMax      = 512
	ogTagMax         = 50
	ogTagsMax        = 20
	ogNoteMax        = 25000
	ogDetailMax      = 8000
)

func (opsgenieKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Opsgenie == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.Opsgenie.APIKeySecretRef}
}

type ogAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description"`
	Tags        []string          `json:"tags,omitempty"`
	Details     map[string]string `json:"details"`
	Entity      string            `json:"entity"`
	Source      string            `json:"source"`
	Priority    string            `json:"priority"`
}

type ogClose struct {
	Source string `json:"source"`
	Note   string `json:"note"`
}

func (opsgenieKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Opsgenie
	if s == nil {
		return Permanent(errors.New("the channel has no opsgenie settings"))
	}
	t, err := parseTarget(opsgenieBase(s), false)
	if err != nil {
		return err
	}
	key, err := d.secret(ctx, s.APIKeySecretRef)
	if err != nil {
		return err
	}
	if !validHeaderValue(key) {
		return Permanent(errors.New("the Opsgenie API key contains control characters"))
	}
	h := http.Header{}
	h.Set("Authorization", "GenieKey "+key)
	m := &d.Message
	alias := incidentKey(m)
	if m.Up {
		t.u = t.u.JoinPath("v2", "alerts", alias, "close")
		t.u.RawQuery = url.Values{"identifierType": {"alias"}}.Encode()
		note := ellipsize(m.plainText(0), ogNoteMax)
		return d.do(ctx, request{method: http.MethodPost, target: t, header: h, json: ogClose{Source: "Vigil", Note: note}})
	}
	t.u = t.u.JoinPath("v2", "alerts")
	return d.do(ctx, request{method: http.MethodPost, target: t, header: h, json: opsgenieAlert(m, alias, s.Priority)})
}

func opsgenieAlert(m *Message, alias, priority string) ogAlert {
	if priority == "" {
		priority = "P3"
	}
	details := map[string]string{}
	for _, f := range m.facts() {
		details[f.Title] = ellipsize(f.Value, ogDetailMax)
	}
	if r := m.reasonText(); r != "" {
		details["Reason"] = r
	}
	if u := m.Check.DetailsURL; u != "" {
		details["Link"] = u
	}
	var tags []string
	for _, tag := range m.Check.Tags {
		if len(tags) == ogTagsMax {
			break
		}
		tags = append(tags, ellipsize(tag, ogTagMax))
	}
	return ogAlert{
		Message:     ellipsize(m.shortTitle(), ogMessageMax),
		Alias:       alias,
		Description: ellipsize(m.plainText(chatBodyLimit), ogDescriptionMax),
		Tags:        tags,
		Details:     details,
		Entity:      ellipsize(strings.TrimPrefix(fmt.Sprintf("%s/%s", m.Check.Namespace, m.Check.Object), "/"), ogEntityMax),
		Source:      "Vigil",
		Priority:    priority,
	}
}

// opsgenieBase is the API base a Channel sends to: its url, or its region's.
func opsgenieBase(s *v1.OpsgenieChannel) string {
	switch {
	case s.URL != "":
		return s.URL
	case s.Region == "eu":
		return OpsgenieEUURL
	}
	return OpsgenieUSURL
}
