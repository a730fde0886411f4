package notify

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Credentials of the paging kinds under test.
const (
	opsgenieKey    = "og-key-5e1f0c2a-opsgenieSecret"
	victorOpsToken = "victoropsApiKeySecret42/ops-routing"
	pagerTreeToken = "int_pagerTreeSecret777"
	spikeToken     = "spikeHookSecret31337"
)

func opsgenieChannel(base string) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelOpsgenie, Opsgenie: &v1.OpsgenieChannel{
		APIKeySecretRef: ref("og", "key"), URL: base, Priority: "P2"}})
}

func init() {
	addHTTPKind(httpKindCase{v1.ChannelOpsgenie, opsgenieChannel,
		func(string) map[string]string { return map[string]string{"og/key": opsgenieKey} }}, opsgenieKey)
	for kind, token := range map[v1.ChannelKind]string{
		v1.ChannelVictorOps: "integrations/generic/20131114/alert/" + victorOpsToken,
		v1.ChannelPagerTree: "integration/" + pagerTreeToken,
		v1.ChannelSpike:     "hooks/" + spikeToken + "/push-events",
	} {
		addHTTPKind(httpKindCase{kind, func(string) *v1.Channel { return urlKindChannel(kind) },
			func(base string) map[string]string { return map[string]string{"hook/url": base + "/" + token} }})
	}
	allCredentials = append(allCredentials, "victoropsApiKeySecret42", pagerTreeToken, spikeToken)
}

// urlKindChannel is a channel of a kind whose only credential is a URL,
// read from the Secret key hook/url.
func urlKindChannel(kind v1.ChannelKind) *v1.Channel {
	r := v1.IncomingWebhookChannel{URLSecretRef: ref("hook", "url")}
	spec := v1.ChannelSpec{Kind: kind}
	switch kind {
	case v1.ChannelVictorOps:
		spec.VictorOps = &r
	case v1.ChannelSpike:
		spec.Spike = &r
	case v1.ChannelPagerTree:
		spec.PagerTree = &v1.PagerTreeChannel{URLSecretRef: r.URLSecretRef, Urgency: "critical"}
	}
	return testChannel(spec)
}

func TestOpsgenieCreatesAndClosesByAlias(t *testing.T) {
	srv := newRecorder(t, http.StatusAccepted, `{"result":"Request will be processed","took":0.2,"requestId":"x"}`)
	secrets := map[string]string{"og/key": opsgenieKey}
	mustSend(t, opsgenieChannel(srv.URL), downMessage(), secrets)
	mustSend(t, opsgenieChannel(srv.URL), upMessage(), secrets)
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	down, up := reqs[0], reqs[1]
	alias := "vigil-" + fixtureUUID
	if down.Method != http.MethodPost || down.Path != "/v2/alerts" || down.RawQuery != "" {
		t.Errorf("down: %s %s?%s", down.Method, down.Path, down.RawQuery)
	}
	for _, r := range reqs {
		checkHeader(t, r.Header, "Authorization", "GenieKey "+opsgenieKey)
		checkHeader(t, r.Header, "Content-Type", "application/json")
		checkUserAgent(t, r.Header)
	}
	var a struct {
		Message, Alias, Description, Entity, Source, Priority string
		Tags                                                  []string
		Details                                               map[string]string
	}
	decodeStrict(t, down.Body, &a)
	if a.Message != "Nightly backup is DOWN" || a.Alias != alias || a.Priority != "P2" || a.Source != "Vigil" ||
		a.Entity != "team-a/nightly-backup" || strings.Join(a.Tags, ",") != "prod,db" {
		t.Errorf("alert: %+v", a)
	}
	for _, want := range []string{"Reason: success signal did not arrive on time", "Namespace: team-a", "backup done: 3 files", "https://vigil.example.com/checks/"} {
		if !strings.Contains(a.Description, want) {
			t.Errorf("description lacks %q:\n%s", want, a.Description)
		}
	}
	if a.Details["Reason"] != "success signal did not arrive on time, grace time passed" || a.Details["Last Ping"] != "Success, 10 minutes ago" ||
		a.Details["Link"] != "https://vigil.example.com/checks/"+fixtureUUID || a.Details["Period"] != "1 day" {
		t.Errorf("details: %v", a.Details)
	}

	if up.Method != http.MethodPost || up.Path != "/v2/alerts/"+alias+"/close" || up.RawQuery != "identifierType=alias" {
		t.Errorf("up: %s %s?%s", up.Method, up.Path, up.RawQuery)
	}
	var c struct{ Source, Note string }
	decodeStrict(t, up.Body, &c)
	if c.Source != "Vigil" || !strings.HasPrefix(c.Note, "“Nightly backup” is UP.") {
		t.Errorf("close: %+v", c)
	}

	// A test alert lives under its own alias.
	test := downMessage()
	test.Test = true
	mustSend(t, opsgenieChannel(srv.URL), test, secrets)
	decodeStrict(t, srv.requests()[2].Body, &a)
	if a.Alias != "vigil-test-"+fixtureUUID || !strings.HasPrefix(a.Message, "[Test] ") {
		t.Errorf("test alert: %+v", a)
	}
}

func TestOpsgenieBaseAndLimits(t *testing.T) {
	for _, tc := range []struct {
		s    v1.OpsgenieChannel
		want string
	}{
		{v1.OpsgenieChannel{}, "https://api.opsgenie.com"},
		{v1.OpsgenieChannel{Region: "us"}, "https://api.opsgenie.com"},
		{v1.OpsgenieChannel{Region: "eu"}, "https://api.eu.opsgenie.com"},
		{v1.OpsgenieChannel{Region: "eu", URL: "https://api.atlassian.com/jsm/ops/integration"}, "https://api.atlassian.com/jsm/ops/integration"},
	} {
		if got := opsgenieBase(&tc.s); got != tc.want {
			t.Errorf("opsgenieBase(%+v) = %s, want %s", tc.s, got, tc.want)
		}
	}
	m := downMessage()
	m.Check.Name = strings.Repeat("n", 300)
	for i := range 30 {
		m.Check.Tags = append(m.Check.Tags, strings.Repeat("t", 60)+string(rune('a'+i)))
	}
	a := opsgenieAlert(&m, "vigil-x", "")
	if n := len([]rune(a.Message)); n != ogMessageMax || len(a.Tags) != ogTagsMax || len([]rune(a.Tags[2])) != ogTagMax || a.Priority != "P3" {
		t.Errorf("message %d characters, %d tags of %d, priority %s", n, len(a.Tags), len([]rune(a.Tags[2])), a.Priority)
	}
}

// A JSM base URL keeps its path: alerts go under it.
func TestOpsgenieUnderAJSMBase(t *testing.T) {
	srv := newRecorder(t, http.StatusAccepted, "")
	mustSend(t, opsgenieChannel(srv.URL+"/jsm/ops/integration"), upMessage(), map[string]string{"og/key": opsgenieKey})
	if p := srv.only(t).Path; p != "/jsm/ops/integration/v2/alerts/vigil-"+fixtureUUID+"/close" {
		t.Errorf("path %s", p)
	}
}

func TestVictorOpsCriticalThenRecovery(t *testing.T) {
	srv := newRecorder(t, 200, `{"result":"success","entity_id":"x"}`)
	secrets := map[string]string{"hook/url": srv.URL + "/integrations/generic/20131114/alert/" + victorOpsToken}
	mustSend(t, urlKindChannel(v1.ChannelVictorOps), downMessage(), secrets)
	mustSend(t, urlKindChannel(v1.ChannelVictorOps), upMessage(), secrets)
	reqs := srv.requests()
	type wire struct {
		MessageType       string `json:"message_type"`
		EntityID          string `json:"entity_id"`
		EntityDisplayName string `json:"entity_display_name"`
		StateMessage      string `json:"state_message"`
		StateStartTime    int64  `json:"state_start_time"`
		MonitoringTool    string `json:"monitoring_tool"`
		VigilURL          string `json:"vigil_url"`
		VigilNamespace    string `json:"vigil_namespace"`
	}
	var down, up wire
	decodeStrict(t, reqs[0].Body, &down)
	decodeStrict(t, reqs[1].Body, &up)
	if reqs[0].Method != http.MethodPost || reqs[0].Path != "/integrations/generic/20131114/alert/"+victorOpsToken {
		t.Errorf("request: %s %s", reqs[0].Method, reqs[0].Path)
	}
	checkHeader(t, reqs[0].Header, "Content-Type", "application/json")
	checkUserAgent(t, reqs[0].Header)
	if down.MessageType != "CRITICAL" || down.EntityID != "vigil-"+fixtureUUID || down.EntityDisplayName != "Nightly backup is DOWN" ||
		down.StateStartTime != fixedFlip.Unix() || down.MonitoringTool != "Vigil" || down.VigilNamespace != "team-a" ||
		down.VigilURL != "https://vigil.example.com/checks/"+fixtureUUID || !strings.Contains(down.StateMessage, "Reason: success signal") ||
		!strings.Contains(down.StateMessage, "backup done") {
		t.Errorf("down: %+v", down)
	}
	if up.MessageType != "RECOVERY" || up.EntityID != down.EntityID {
		t.Errorf("up: %+v", up)
	}
}

func TestPagerTreeCreateThenResolve(t *testing.T) {
	srv := newRecorder(t, 200, "")
	secrets := map[string]string{"hook/url": srv.URL + "/integration/" + pagerTreeToken}
	mustSend(t, urlKindChannel(v1.ChannelPagerTree), downMessage(), secrets)
	mustSend(t, urlKindChannel(v1.ChannelPagerTree), upMessage(), secrets)
	reqs := srv.requests()
	type wire struct {
		EventType   string            `json:"event_type"`
		ID          string            `json:"Id"`
		Title       string            `json:"Title"`
		Description string            `json:"Description"`
		Tags        []string          `json:"Tags"`
		Urgency     string            `json:"urgency"`
		Meta        map[string]string `json:"Meta"`
	}
	var down, up wire
	decodeStrict(t, reqs[0].Body, &down)
	decodeStrict(t, reqs[1].Body, &up)
	if reqs[0].Method != http.MethodPost || reqs[0].Path != "/integration/"+pagerTreeToken {
		t.Errorf("request: %s %s", reqs[0].Method, reqs[0].Path)
	}
	checkHeader(t, reqs[0].Header, "Content-Type", "application/json")
	if down.EventType != "create" || down.ID != "vigil-"+fixtureUUID || down.Title != "Nightly backup is DOWN" || down.Urgency != "critical" ||
		strings.Join(down.Tags, " ") != "prod db" || down.Meta["namespace"] != "team-a" || down.Meta["check"] != "nightly-backup" ||
		down.Meta["url"] != "https://vigil.example.com/checks/"+fixtureUUID || !strings.Contains(down.Meta["reason"], "success signal") ||
		!strings.Contains(down.Description, "Last Ping: Success, 10 minutes ago") {
		t.Errorf("down: %+v", down)
	}
	if up.EventType != "resolve" || up.ID != down.ID || up.Urgency != "" {
		t.Errorf("up: %+v", up)
	}
}

func TestSpikeDownThenUp(t *testing.T) {
	srv := newRecorder(t, 200, "")
	secrets := map[string]string{"hook/url": srv.URL + "/hooks/" + spikeToken + "/push-events"}
	mustSend(t, urlKindChannel(v1.ChannelSpike), downMessage(), secrets)
	mustSend(t, urlKindChannel(v1.ChannelSpike), upMessage(), secrets)
	reqs := srv.requests()
	var down, up struct {
		CheckID string `json:"check_id"`
		Title   string `json:"title"`
		Message string `json:"message"`
		Status  string `json:"status"`
	}
	decodeStrict(t, reqs[0].Body, &down)
	decodeStrict(t, reqs[1].Body, &up)
	if reqs[0].Path != "/hooks/"+spikeToken+"/push-events" || reqs[0].Method != http.MethodPost {
		t.Errorf("request: %s %s", reqs[0].Method, reqs[0].Path)
	}
	if down.CheckID != "vigil-"+fixtureUUID || down.Status != "down" || down.Title != "Nightly backup is DOWN" ||
		!strings.Contains(down.Message, "https://vigil.example.com/checks/") {
		t.Errorf("down: %+v", down)
	}
	if up.CheckID != down.CheckID || up.Status != "up" || up.Title != "Nightly backup is UP" {
		t.Errorf("up: %+v", up)
	}
}

// Incident trackers hear of no failure notice nor maintenance: those
// would open an incident for a check that is not down.
func TestPagingKindsSkipNotices(t *testing.T) {
	srv := newRecorder(t, 200, "")
	for _, notice := range []string{"failure", "maintenance-start", "maintenance-end"} {
		m := downMessage()
		m.Notice = notice
		mustSend(t, opsgenieChannel(srv.URL), m, map[string]string{"og/key": opsgenieKey})
		for _, k := range []v1.ChannelKind{v1.ChannelVictorOps, v1.ChannelPagerTree, v1.ChannelSpike} {
			mustSend(t, urlKindChannel(k), m, map[string]string{"hook/url": srv.URL + "/x"})
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests for notices", n)
	}
}

// A 429 is retried no sooner than the service asks.
func TestPagingRateLimits(t *testing.T) {
	srv := newRecorder(t, http.StatusTooManyRequests, `{"message":"Rate limit exceeded"}`)
	srv.header.Set("Retry-After", "30")
	err := send(t, opsgenieChannel(srv.URL), downMessage(), map[string]string{"og/key": opsgenieKey})
	var se *StatusError
	if !errors.As(err, &se) || se.RetryAfter != 30*time.Second || IsPermanent(err) {
		t.Errorf("Send = %v", err)
	}
	for _, k := range []v1.ChannelKind{v1.ChannelVictorOps, v1.ChannelPagerTree, v1.ChannelSpike} {
		err := send(t, urlKindChannel(k), downMessage(), map[string]string{"hook/url": srv.URL + "/x"})
		if !errors.As(err, &se) || se.RetryAfter != 30*time.Second || IsPermanent(err) {
			t.Errorf("%s: Send = %v", k, err)
		}
	}
}
