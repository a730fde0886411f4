package notify

import (
	"context"
	"errors"
	"net/http"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelSpike, spikeKind{}) }

// spikeKind triggers and resolves Spike.sh incidents through the webhook
// of a Spike integration (kept in a Secret): a POST of JSON with check_id
// (incidentKey: Spike groups a check's events into one incident), title,
// message (the message as text) and status, "down" or "up"; an "up"
// resolves the incident the "down" opened, as Spike's Healthchecks.io
// integration does.
type spikeKind struct{ tracker }

func (spikeKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Spike == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.Spike.URLSecretRef}
}

type spikeEvent struct {
	CheckID string `json:"check_id"`
	Title   string `json:"title"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

func (spikeKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Spike
	if s == nil {
		return Permanent(errors.New("the channel has no spike settings"))
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
	status := "down"
	if m.Up {
		status = "up"
	}
	return d.do(ctx, request{method: http.MethodPost, target: t, json: spikeEvent{
		CheckID: incidentKey(m), Title: m.shortTitle(), Message: m.plainText(chatBodyLimit), Status: status}})
}
