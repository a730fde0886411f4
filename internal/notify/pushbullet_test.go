package notify

import (
	"net/http"
	"strings"
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

const pushbulletTestToken = "o.pushbulletAccessToken97531"

var pushbulletSecrets = map[string]string{"pushbullet/token": pushbulletTestToken}

func pushbulletChannel(base, device string) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelPushbullet, Pushbullet: &v1.PushbulletChannel{
		TokenSecretRef: ref("pushbullet", "token"), DeviceIden: device, URL: base}})
}

func init() {
	addHTTPKind(httpKindCase{v1.ChannelPushbullet, func(base string) *v1.Channel { return pushbulletChannel(base, "") },
		func(string) map[string]string { return pushbulletSecrets }}, pushbulletTestToken)
}

// pushbulletWirePush is a push as Pushbullet's "Create push" documents it,
// with the fields Vigil sets.
type pushbulletWirePush struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Body       string `json:"body"`
	URL        string `json:"url"`
	DeviceIden string `json:"device_iden"`
}

func pushbulletRequest(t *testing.T, req captured) pushbulletWirePush {
	t.Helper()
	if req.Method != http.MethodPost || req.Path != "/v2/pushes" || req.RawQuery != "" {
		t.Errorf("request %s %s?%s, want POST /v2/pushes", req.Method, req.Path, req.RawQuery)
	}
	checkHeader(t, req.Header, "Access-Token", pushbulletTestToken)
	checkHeader(t, req.Header, "Authorization", "")
	checkHeader(t, req.Header, "Content-Type", "application/json")
	checkUserAgent(t, req.Header)
	var p pushbulletWirePush
	decodeStrict(t, req.Body, &p)
	return p
}

const pushbulletFacts = "Description: Backs up the orders database.\nNamespace: team-a\nTags: prod db\nPeriod: 1 day\n" +
	"Total Pings: 42\nLast Ping: Success, 10 minutes ago\n\nLast ping body:\nbackup done: 3 files"

func TestPushbullet(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"active":true,"iden":"ujpah72o0sjAoRtnM0jc","type":"link"}`)
	ch := pushbulletChannel(srv.URL, "ujpah72o0sjAoRtnM0jc")
	mustSend(t, ch, downMessage(), pushbulletSecrets)
	mustSend(t, ch, upMessage(), pushbulletSecrets)
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, want := range []pushbulletWirePush{
		{Type: "link", Title: "Nightly backup is DOWN", URL: phoneDetailsURL, DeviceIden: "ujpah72o0sjAoRtnM0jc",
			Body: "Reason: success signal did not arrive on time, grace time passed.\n\n" + pushbulletFacts},
		{Type: "link", Title: "Nightly backup is UP", URL: phoneDetailsURL, DeviceIden: "ujpah72o0sjAoRtnM0jc", Body: pushbulletFacts},
	} {
		if got := pushbulletRequest(t, reqs[i]); got != want {
			t.Errorf("push %d = %+v\nwant %+v", i, got, want)
		}
	}
}

// TestPushbulletNote: without a page to link to, a note to every device,
// marked as a test when it is one.
func TestPushbulletNote(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{}`)
	m := downMessage()
	m.Check.DetailsURL, m.Test = "", true
	mustSend(t, pushbulletChannel(srv.URL, ""), m, pushbulletSecrets)
	want := pushbulletWirePush{Type: "note", Title: "[Test] Nightly backup is DOWN",
		Body: "Reason: success signal did not arrive on time, grace time passed.\n\n" + pushbulletFacts}
	if got := pushbulletRequest(t, srv.only(t)); got != want {
		t.Errorf("push = %+v\nwant %+v", got, want)
	}
	if !strings.Contains(string(srv.only(t).Body), `"type":"note"`) || strings.Contains(string(srv.only(t).Body), "device_iden") {
		t.Errorf("body %s", srv.only(t).Body)
	}
}

func TestPushbulletErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ch       *v1.Channel
		secrets  map[string]string
		contains string
	}{
		{"without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelPushbullet}), nil, "no pushbullet settings"},
		{"token with a new line inside", pushbulletChannel("http://pb.example.com", ""), map[string]string{"pushbullet/token": "o.abc\ndef"}, "control characters"},
	} {
		err := send(t, tc.ch, downMessage(), tc.secrets)
		if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: Send = %v, want a permanent error containing %q", tc.name, err, tc.contains)
		}
	}
	k, _ := Lookup(v1.ChannelPushbullet)
	if got := k.SecretRefs(&pushbulletChannel("", "").Spec); len(got) != 1 || got[0] != ref("pushbullet", "token") {
		t.Errorf("SecretRefs = %v", got)
	}
}

func TestPushbulletRateLimit(t *testing.T) {
	expectRetryAfter429(t, func(base string) *v1.Channel { return pushbulletChannel(base, "") }, pushbulletSecrets)
}
