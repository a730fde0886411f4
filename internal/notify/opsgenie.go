package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

func init() { register(v1.ChannelOpsgenie, opsgenieKind{}) }

// opsgenieKind creates and closes Opsgenie alerts through the Alert API v2
// (https://docs.opsgenie.com/docs/alert-api), authenticated with
// "Authorization: GenieKey <API integration key>".
//
// On a down flip it creates an alert: POST <base>/v2/alerts with
// {message (the short title, at most 130 characters), alias, description
// (the message as plain text: reason, facts, last ping body excerpt and
// link; at most 15,000 characters), priority (the channel's, P3 by
// default), source "Vigil", tags (the check's: at most 20 of at most 50
// characters), entity ("<namespace>/<check>") and details (reason, the
// Channel's own text, link, facts and body excerpt; at most 8,000
// characters in all)}. A re-alert or an escalation creates it again: while
// the alert is open Opsgenie only counts the repeat (alias
// de-duplication), and if someone closed it while the check stayed down,
// it opens a new one. On an up flip it closes the alert: POST
// <base>/v2/alerts/<alias>/close?identifierType=alias with {source, note}
// (the message as plain text). The alias is "vigil-<check uuid>"
// ("vigil-test-<uuid>" for test messages, so a test never touches a real
// alert). Failure and maintenance notices are not sent (see Send). Opsgenie
// answers 202 Accepted and processes requests asynchronously; any 2xx
// answer is success.
//
// The base is https://api.opsgenie.com, or https://api.eu.opsgenie.com for
// the eu region; the channel's url replaces it. Jira Service Management's
// operations integration API, Opsgenie's successor, takes the same
// requests with the same GenieKey header under
// https://api.atlassian.com/jsm/ops/integration
// (https://developer.atlassian.com/cloud/jira/service-desk-ops/rest/v1/api-group-integration-events/):
// set url to it and use the key of a JSM API integration.
//
// An acknowledgement of the down (Notice "ack") posts to
// /v2/alerts/<alias>/acknowledge?identifierType=alias, with a note that
// says who acknowledged it in Vigil.
type opsgenieKind struct{ tracker }

func (opsgenieKind) acknowledges() {}

// Opsgenie's API base URLs, used when a channel sets no URL.
const (
	// OpsgenieURL is the base of the us region, the default.
	OpsgenieURL = "https://api.opsgenie.com"
	// OpsgenieEUURL is the base of the eu region.
	OpsgenieEUURL = "https://api.eu.opsgenie.com"
)

// Limits of the Alert API v2, in characters.
const (
	opsgenieMessageMax     = 130
	opsgenieDescriptionMax = 15000
	opsgenieTagsMax        = 20
	opsgenieTagMax         = 50
	opsgenieDetailsMax     = 8000 // keys and values, in all
	opsgenieEntityMax      = 512
	opsgenieNoteMax        = 25000
)

// opsgenieSource is the alerts' source field (at most 100 characters).
const opsgenieSource = "Vigil"

func (opsgenieKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Opsgenie == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.Opsgenie.APIKeySecretRef}
}

// opsgenieAlert is the Create Alert request's body.
type opsgenieAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description"`
	Priority    string            `json:"priority"`
	Source      string            `json:"source"`
	Tags        []string          `json:"tags,omitempty"`
	Entity      string            `json:"entity"`
	Details     map[string]string `json:"details"`
}

// opsgenieClose is the Close Alert request's body.
type opsgenieClose struct {
	Source string `json:"source"`
	Note   string `json:"note"`
}

func (opsgenieKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Opsgenie
	if s == nil {
		return Permanent(errors.New("the channel has no opsgenie settings"))
	}
	base, err := opsgenieBase(s)
	if err != nil {
		return err
	}
	priority, err := opsgeniePriority(s.Priority)
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
	header := http.Header{}
	header.Set("Authorization", "GenieKey "+key)

	m := &d.Message
	alias := incidentKey(m) // at most 255 characters; Opsgenie takes 512
	req := request{method: http.MethodPost, header: header}
	switch {
	case m.Notice == monitor.NoticeAck:
		u := base.JoinPath("v2", "alerts", url.PathEscape(alias), "acknowledge")
		q := u.Query()
		q.Set("identifierType", "alias")
		u.RawQuery = q.Encode()
		req.target = target{u: u}
		req.json = opsgenieClose{Source: opsgenieSource, Note: ellipsizeUTF16("Acknowledged in Vigil by "+m.Detail, opsgenieNoteMax)}
	case m.Up:
		u := base.JoinPath("v2", "alerts", url.PathEscape(alias), "close")
		q := u.Query()
		q.Set("identifierType", "alias")
		u.RawQuery = q.Encode()
		req.target = target{u: u}
		req.json = opsgenieClose{Source: opsgenieSource, Note: ellipsizeUTF16(m.plainText(chatBodyLimit), opsgenieNoteMax)}
	default:
		req.target = target{u: base.JoinPath("v2", "alerts")}
		req.json = opsgenieCreate(m, alias, priority)
	}
	return d.do(ctx, req)
}

// opsgenieBase is the API base URL of the channel: its url, or its
// region's.
func opsgenieBase(s *v1.OpsgenieChannel) (*url.URL, error) {
	raw := s.URL
	if raw == "" {
		switch s.Region {
		case "", "us":
			raw = OpsgenieURL
		case "eu":
			raw = OpsgenieEUURL
		default:
			return nil, Permanent(fmt.Errorf("unknown Opsgenie region %q (want us or eu)", s.Region))
		}
	}
	t, err := parseTarget(raw, false)
	if err != nil {
		return nil, err
	}
	return t.u, nil
}

// opsgeniePriority checks the channel's priority; empty means P3,
// Opsgenie's default.
func opsgeniePriority(p string) (string, error) {
	switch p {
	case "":
		return "P3", nil
	case "P1", "P2", "P3", "P4", "P5":
		return p, nil
	}
	return "", Permanent(fmt.Errorf("unknown Opsgenie priority %q (want P1 to P5)", p))
}

func opsgenieCreate(m *Message, alias, priority string) opsgenieAlert {
	c := &m.Check
	return opsgenieAlert{
		Message:     ellipsizeUTF16(m.shortTitle(), opsgenieMessageMax),
		Alias:       alias,
		Description: ellipsizeUTF16(m.plainText(chatBodyLimit), opsgenieDescriptionMax),
		Priority:    priority,
		Source:      opsgenieSource,
		Tags:        opsgenieTags(c.Tags),
		Entity:      ellipsizeUTF16(c.Namespace+"/"+c.Object, opsgenieEntityMax),
		Details:     opsgenieDetails(m.pagingFields()),
	}
}

// opsgenieTags bounds the check's tags to Opsgenie's limits: at most 20
// distinct tags of at most 50 characters.
func opsgenieTags(tags []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range tags {
		t = ellipsizeUTF16(strings.TrimSpace(t), opsgenieTagMax)
		if t == "" || seen[t] {
			continue
		}
		if len(out) == opsgenieTagsMax {
			break
		}
		seen[t] = true
		out = append(out, t)
	}
	return out
}

// opsgenieDetails puts fields into Opsgenie's details, in order, within
// its limit of 8,000 characters of keys and values: each field whole while
// it fits; one that does not is cut to the room left, or left out when it
// must stay whole or not even its key fits (a later, shorter field may
// still fit).
func opsgenieDetails(fields []pagingField) map[string]string {
	details := map[string]string{}
	room := opsgenieDetailsMax
	for _, f := range fields {
		if _, dup := details[f.Key]; dup {
			continue
		}
		need := utf16Len(f.Key)
		if need >= room {
			continue
		}
		v := f.Value
		if utf16Len(v) > room-need {
			if f.Whole {
				continue
			}
			v = ellipsizeUTF16(v, room-need)
		}
		details[f.Key] = v
		room -= need + utf16Len(v)
	}
	return details
}
