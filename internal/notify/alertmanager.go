package notify

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelAlertmanager, alertmanagerKind{}) }

// alertmanagerKind posts one PostableAlert to <url>/api/v2/alerts (API v2):
//
//   - labels: alertname "VigilCheckDown", namespace, check (the Check
//     object's name), then the channel's labels, which cannot replace those
//     three; test messages add vigil_test="true", so they are separate alerts.
//   - annotations: summary ("<name> is DOWN"), description (reason, last
//     ping, description of the check), ping_url.
//   - startsAt: the flip's time.
//   - endsAt: on an up flip its time, which resolves the alert. On a down
//     flip, one year later: without endsAt Alertmanager resolves an alert
//     after its resolve_timeout (5 minutes by default) unless it is sent
//     again, but a down check stays down until it comes up. Test alerts
//     leave endsAt out and so resolve by themselves.
//   - generatorURL: CheckInfo.DetailsURL, when set.
//
// A bearer token is sent when the channel has one. Any 2xx answer is success.
type alertmanagerKind struct{ tracker }

func (alertmanagerKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Alertmanager == nil {
		return nil
	}
	return optional(spec.Alertmanager.BearerTokenSecretRef)
}

// AlertmanagerAlertName is the alertname label of Vigil's alerts.
const AlertmanagerAlertName = "VigilCheckDown"

// alertmanagerFiringFor is how long after a down flip a down alert's endsAt
// lies: long enough to stay firing until the up flip resolves it.
const alertmanagerFiringFor = 365 * 24 * time.Hour

type postableAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     string            `json:"startsAt"`
	EndsAt       string            `json:"endsAt,omitempty"`
	GeneratorURL string            `json:"generatorURL,omitempty"`
}

func (alertmanagerKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Alertmanager
	if s == nil {
		return Permanent(errors.New("the channel has no alertmanager settings"))
	}
	t, err := parseTarget(s.URL, false)
	if err != nil {
		return err
	}
	t.u = t.u.JoinPath("api", "v2", "alerts")
	h := http.Header{}
	if err := d.setBearer(ctx, h, s.BearerTokenSecretRef, "the bearer token"); err != nil {
		return err
	}
	alerts := []postableAlert{alertmanagerAlert(&d.Message, s.Labels)}
	return d.do(ctx, request{method: http.MethodPost, target: t, header: h, json: alerts})
}

func alertmanagerAlert(m *Message, extra map[string]string) postableAlert {
	c := &m.Check
	labels := map[string]string{}
	for k, v := range extra {
		labels[k] = v
	}
	labels["alertname"] = AlertmanagerAlertName
	labels["namespace"] = c.Namespace
	labels["check"] = c.Object
	if m.Test {
		labels["vigil_test"] = "true"
	}

	var desc []string
	if m.Test {
		desc = append(desc, "This is a test notification.")
	}
	if l := m.reasonLine(); l != "" {
		desc = append(desc, l)
	}
	desc = append(desc, "Last ping: "+c.lastPingText()+".")
	if c.Desc != "" {
		desc = append(desc, c.Desc)
	}
	annotations := map[string]string{
		"summary":     m.shortTitle(),
		"description": strings.Join(desc, "\n"),
	}
	if c.PingURL != "" {
		annotations["ping_url"] = c.PingURL
	}

	at := m.flipTime()
	a := postableAlert{
		Labels:       labels,
		Annotations:  annotations,
		StartsAt:     at.Format(time.RFC3339Nano),
		GeneratorURL: c.DetailsURL,
	}
	switch {
	case m.Up:
		a.EndsAt = a.StartsAt
	case !m.Test:
		a.EndsAt = at.Add(alertmanagerFiringFor).Format(time.RFC3339Nano)
	}
	return a
}
