package notify

import (
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// spikeToken is the webhook URL's token, the credential.
const spikeToken = "spikeWebhookToken-93ab71c0"

func init() {
	addHTTPKind(httpKindCase{v1.ChannelSpike, func(string) *v1.Channel { return spikeChannel() },
		func(base string) map[string]string {
			return map[string]string{"spike/url": base + "/" + spikeToken + "/healthchecks"}
		}}, spikeToken)
}

func spikeChannel() *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelSpike, Spike: &v1.IncomingWebhookChannel{URLSecretRef: ref("spike", "url")}})
}

// spikeWireEvent is the body of Spike.sh's Healthchecks integration.
type spikeWireEvent struct {
	CheckID string `json:"check_id"`
	Title   string `json:"title"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

func TestSpike(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"Ok":true}`)
	secrets := map[string]string{"spike/url": srv.URL + "/" + spikeToken + "/healthchecks"}
	test := downMessage()
	test.Test = true
	for _, m := range []Message{downMessage(), upMessage(), test} {
		mustSend(t, spikeChannel(), m, secrets)
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	events := make([]spikeWireEvent, len(reqs))
	for i, req := range reqs {
		if req.Method != http.MethodPost || req.Path != "/"+spikeToken+"/healthchecks" || req.RawQuery != "" {
			t.Errorf("request %s %s?%s", req.Method, req.Path, req.RawQuery)
		}
		checkHeader(t, req.Header, "Content-Type", "application/json")
		checkUserAgent(t, req.Header)
		decodeStrict(t, req.Body, &events[i])
	}
	want := spikeWireEvent{CheckID: "vigil-" + fixtureUUID, Title: "Nightly backup is DOWN", Message: pagingPlainDown, Status: "down"}
	if events[0] != want {
		t.Errorf("down\n got %#v\nwant %#v", events[0], want)
	}
	// The up resolves by the same check_id.
	if up := events[1]; up.CheckID != want.CheckID || up.Status != "up" || up.Title != "Nightly backup is UP" ||
		!strings.HasPrefix(up.Message, "“Nightly backup” is UP.\n") || !strings.HasSuffix(up.Message, "\nhttps://vigil.example.com/checks/"+fixtureUUID) {
		t.Errorf("up %#v", up)
	}
	if tst := events[2]; tst.CheckID != "vigil-test-"+fixtureUUID || tst.Status != "down" || tst.Title != "[Test] Nightly backup is DOWN" {
		t.Errorf("test %#v", tst)
	}
}

// An escalation triggers again under the same check_id, and the Channel's
// own subject and text take the place of the title and the reason.
func TestSpikeEscalationWithTemplate(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	m := downMessage()
	m.Notice, m.Since = "escalation", fixedFlip.Add(-time.Hour)
	m.Subject, m.Text = "Backups are late", "Page the DBA on call."
	mustSend(t, spikeChannel(), m, map[string]string{"spike/url": srv.URL + "/" + spikeToken})
	var ev spikeWireEvent
	decodeStrict(t, srv.only(t).Body, &ev)
	if ev.CheckID != "vigil-"+fixtureUUID || ev.Status != "down" || ev.Title != "Backups are late" ||
		!strings.HasPrefix(ev.Message, "Backups are late\nPage the DBA on call.\n\nDescription: ") {
		t.Errorf("escalation %#v", ev)
	}
}

func TestSpikeRateLimit(t *testing.T) {
	srv := newRecorder(t, http.StatusTooManyRequests, "{}")
	srv.header.Set("Retry-After", "5")
	err := send(t, spikeChannel(), downMessage(), map[string]string{"spike/url": srv.URL + "/" + spikeToken})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.RetryAfter != 5*time.Second || IsPermanent(err) {
		t.Errorf("Send = %v (%+v), want a retryable 429 with a 5 s Retry-After", err, se)
	}
	if err != nil && strings.Contains(err.Error(), spikeToken) {
		t.Errorf("error %v shows the token", err)
	}
}

func TestSpikeSettings(t *testing.T) {
	err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelSpike}), downMessage(), nil)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "the channel has no spike settings") {
		t.Errorf("Send without settings = %v", err)
	}
	k, _ := Lookup(v1.ChannelSpike)
	spec := spikeChannel().Spec
	if got := k.SecretRefs(&spec); !reflect.DeepEqual(got, []v1.SecretKeyRef{ref("spike", "url")}) {
		t.Errorf("SecretRefs = %v", got)
	}
	if _, ok := k.(incidentTracker); !ok {
		t.Error("spike is not an incident tracker")
	}
}
