package notify

import (
	"net/http"
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func ackMessage() Message {
	m := downMessage()
	m.Notice, m.Detail = "ack", "API key hcw_1234abcd"
	return m
}

// TestAcknowledgementReachesTheIncident: an acknowledged down is
// acknowledged where its incident was opened, under the same key;
// PagerDuty and Opsgenie alone carry it.
func TestAcknowledgementReachesTheIncident(t *testing.T) {
	srv := newRecorder(t, http.StatusAccepted, `{"status":"success"}`)
	pd := testChannel(v1.ChannelSpec{Kind: v1.ChannelPagerDuty, PagerDuty: &v1.PagerDutyChannel{
		RoutingKeySecretRef: ref("pd", "key"), URL: srv.URL + "/v2/enqueue"}})
	mustSend(t, pd, ackMessage(), map[string]string{"pd/key": "R0UT1NGK3Y0123456789abcdefABCDEF"})
	var ev pdWireEvent
	decodeStrict(t, srv.only(t).Body, &ev)
	ev.validate(t)
	if ev.EventAction != "acknowledge" || ev.DedupKey != "vigil-"+fixtureUUID || ev.Payload != nil {
		t.Errorf("PagerDuty event %+v, want an acknowledge of the down's dedup_key", ev)
	}

	og := newRecorder(t, http.StatusAccepted, `{"result":"Request will be processed"}`)
	mustSend(t, opsgenieChannel(&v1.OpsgenieChannel{URL: og.URL}), ackMessage(), map[string]string{"og/key": ogAPIKey})
	req := og.only(t)
	if req.Method != http.MethodPost || req.Path != "/v2/alerts/vigil-"+fixtureUUID+"/acknowledge" || req.RawQuery != "identifierType=alias" {
		t.Errorf("Opsgenie request %s %s?%s", req.Method, req.Path, req.RawQuery)
	}
	var body struct{ Source, Note string }
	decodeStrict(t, req.Body, &body)
	if body.Note != "Acknowledged in Vigil by API key hcw_1234abcd" || body.Source == "" {
		t.Errorf("Opsgenie body %+v", body)
	}

	// A webhook, a chat: nothing is sent.
	hook := newRecorder(t, http.StatusOK, "")
	mustSend(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{
		Down: &v1.WebhookRequest{URL: hook.URL + "/down"}}}), ackMessage(), nil)
	if n := len(hook.requests()); n != 0 {
		t.Errorf("a webhook got %d requests for an acknowledgement", n)
	}
	for kind, want := range map[v1.ChannelKind]bool{v1.ChannelPagerDuty: true, v1.ChannelOpsgenie: true,
		v1.ChannelWebhook: false, v1.ChannelSlack: false, v1.ChannelAlertmanager: false} {
		if got := Acknowledges(kind); got != want {
			t.Errorf("Acknowledges(%s) = %v, want %v", kind, got, want)
		}
	}
}
