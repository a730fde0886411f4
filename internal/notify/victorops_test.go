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

// voRESTKey is the REST endpoint key in the integration's URL.
const voRESTKey = "voRestEndpointKey-4f2a9c1e8b7d"

// voPath is the path of a REST endpoint integration URL, with the routing
// key "vigil".
const voPath = "/integrations/generic/20131114/alert/" + voRESTKey + "/vigil"

func init() {
	addHTTPKind(httpKindCase{v1.ChannelVictorOps, func(string) *v1.Channel { return victorOpsChannel() },
		func(base string) map[string]string { return map[string]string{"vo/url": base + voPath} }}, voRESTKey)
}

func victorOpsChannel() *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelVictorOps, VictorOps: &v1.IncomingWebhookChannel{URLSecretRef: ref("vo", "url")}})
}

// voWireAlert is a REST endpoint alert as Splunk On-Call documents its
// fields, with those Vigil sends.
type voWireAlert struct {
	MessageType       string `json:"message_type"`
	EntityID          string `json:"entity_id"`
	EntityDisplayName string `json:"entity_display_name"`
	StateMessage      string `json:"state_message"`
	StateStartTime    int64  `json:"state_start_time"`
	MonitoringTool    string `json:"monitoring_tool"`
	LinkAnnotation    string `json:"vo_annotate.u.Check"`
}

// validate applies the documented character limits.
func (a *voWireAlert) validate(t *testing.T) {
	t.Helper()
	if utf16Len(a.EntityID) > 512 || utf16Len(a.StateMessage) > 20480 || utf16Len(a.EntityDisplayName) > 1024 ||
		utf16Len(a.MonitoringTool) > 1024 || utf16Len(a.LinkAnnotation) > 1124 {
		t.Errorf("a field is over its limit: %.200v", *a)
	}
	if a.MessageType != "CRITICAL" && a.MessageType != "RECOVERY" {
		t.Errorf("message_type %q", a.MessageType)
	}
}

func TestVictorOps(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"result":"success","entity_id":"vigil-x"}`)
	secrets := map[string]string{"vo/url": srv.URL + voPath}
	up := upMessage()
	up.Time, up.Since = fixedFlip.Add(90*time.Minute), fixedFlip
	test := downMessage()
	test.Test = true
	for _, m := range []Message{downMessage(), up, test} {
		mustSend(t, victorOpsChannel(), m, secrets)
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	alerts := make([]voWireAlert, len(reqs))
	for i, req := range reqs {
		if req.Method != http.MethodPost || req.Path != voPath || req.RawQuery != "" {
			t.Errorf("request %s %s?%s", req.Method, req.Path, req.RawQuery)
		}
		checkHeader(t, req.Header, "Content-Type", "application/json")
		checkHeader(t, req.Header, "Authorization", "")
		checkUserAgent(t, req.Header)
		decodeStrict(t, req.Body, &alerts[i])
		alerts[i].validate(t)
	}
	want := voWireAlert{
		MessageType:       "CRITICAL",
		EntityID:          "vigil-" + fixtureUUID,
		EntityDisplayName: "Nightly backup is DOWN",
		StateMessage:      pagingPlainDown,
		StateStartTime:    fixedFlip.Unix(),
		MonitoringTool:    "Vigil",
		LinkAnnotation:    "https://vigil.example.com/checks/" + fixtureUUID,
	}
	if alerts[0] != want {
		t.Errorf("down alert\n got %#v\nwant %#v", alerts[0], want)
	}
	// The recovery resolves the same entity; annotations are for
	// INFO, WARNING and CRITICAL alerts only.
	r := alerts[1]
	if r.MessageType != "RECOVERY" || r.EntityID != want.EntityID || r.EntityDisplayName != "Nightly backup is UP (was down for 1 hour 30 minutes)" ||
		r.StateStartTime != fixedFlip.Add(90*time.Minute).Unix() || r.MonitoringTool != "Vigil" || r.LinkAnnotation != "" ||
		!strings.HasPrefix(r.StateMessage, "“Nightly backup” is UP (was down for 1 hour 30 minutes).\n") ||
		!strings.HasSuffix(r.StateMessage, "\nhttps://vigil.example.com/checks/"+fixtureUUID) {
		t.Errorf("recovery %#v", r)
	}
	if strings.Contains(string(reqs[1].Body), "vo_annotate") {
		t.Errorf("the recovery carries an annotation: %s", reqs[1].Body)
	}
	if tst := alerts[2]; tst.EntityID != "vigil-test-"+fixtureUUID || tst.EntityDisplayName != "[Test] Nightly backup is DOWN" || tst.MessageType != "CRITICAL" {
		t.Errorf("test alert %#v", tst)
	}
}

// A re-alert sends the CRITICAL again under the same entity_id, which
// Splunk On-Call rolls up into the open incident.
func TestVictorOpsRealert(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	m := downMessage()
	m.Notice, m.Since = "realert", fixedFlip.Add(-3*time.Hour)
	mustSend(t, victorOpsChannel(), m, map[string]string{"vo/url": srv.URL + voPath})
	var a voWireAlert
	decodeStrict(t, srv.only(t).Body, &a)
	if a.MessageType != "CRITICAL" || a.EntityID != "vigil-"+fixtureUUID || a.EntityDisplayName != "Nightly backup is still DOWN (for 3 hours)" {
		t.Errorf("re-alert %#v", a)
	}
}

func TestVictorOpsLimits(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	m := downMessage()
	m.Check.Name = strings.Repeat("n", 2000)
	m.Check.Desc = strings.Repeat("d", 10000)
	m.Text = strings.Repeat("t", 4000)
	m.Check.Tags = []string{strings.Repeat("g", 8000)}
	m.Check.DetailsURL = "https://vigil.example.com/checks/" + strings.Repeat("u", 1100)
	mustSend(t, victorOpsChannel(), m, map[string]string{"vo/url": srv.URL + voPath})
	var a voWireAlert
	decodeStrict(t, srv.only(t).Body, &a)
	a.validate(t)
	if utf16Len(a.EntityDisplayName) != 1024 || utf16Len(a.StateMessage) != 20480 || !strings.HasSuffix(a.StateMessage, "…") {
		t.Errorf("display name of %d, state message of %d characters", utf16Len(a.EntityDisplayName), utf16Len(a.StateMessage))
	}
	// A link too long for an annotation is not cut (it would lead
	// nowhere) but left out.
	if a.LinkAnnotation != "" {
		t.Errorf("annotation of %d characters", len(a.LinkAnnotation))
	}
}

func TestVictorOpsRateLimit(t *testing.T) {
	srv := newRecorder(t, http.StatusTooManyRequests, `{"result":"failure","message":"rate limited"}`)
	srv.header.Set("Retry-After", "12")
	err := send(t, victorOpsChannel(), downMessage(), map[string]string{"vo/url": srv.URL + voPath})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.RetryAfter != 12*time.Second || IsPermanent(err) {
		t.Errorf("Send = %v (%+v), want a retryable 429 with a 12 s Retry-After", err, se)
	}
	if err != nil && strings.Contains(err.Error(), voRESTKey) {
		t.Errorf("error %v shows the REST endpoint key", err)
	}
}

func TestVictorOpsSettings(t *testing.T) {
	err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelVictorOps}), downMessage(), nil)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "the channel has no victorops settings") {
		t.Errorf("Send without settings = %v", err)
	}
	k, _ := Lookup(v1.ChannelVictorOps)
	spec := victorOpsChannel().Spec
	if got := k.SecretRefs(&spec); !reflect.DeepEqual(got, []v1.SecretKeyRef{ref("vo", "url")}) {
		t.Errorf("SecretRefs = %v", got)
	}
	if _, ok := k.(incidentTracker); !ok {
		t.Error("victorops is not an incident tracker")
	}
}
