package notify

import (
	"context"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func TestNtfy(t *testing.T) {
	for _, tc := range []struct {
		name          string
		msg           Message
		priority      int32
		token         bool
		wantTitle     string
		wantPriority  string
		wantTags      string
		wantBodyLines []string
	}{
		{"down with token", downMessage(), 4, true, "Nightly backup is DOWN", "4", "red_circle,prod,db",
			[]string{"Reason: success signal did not arrive on time, grace time passed.", "Last ping: Success, 10 minutes ago.", "Namespace: team-a"}},
		{"down, default priority", downMessage(), 0, false, "Nightly backup is DOWN", "5", "red_circle,prod,db", nil},
		{"up uses priority 3", upMessage(), 5, true, "Nightly backup is UP", "3", "green_circle,prod,db",
			[]string{"Last ping: Success, 10 minutes ago.", "Namespace: team-a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusOK, `{"id":"x"}`)
			settings := &v1.NtfyChannel{URL: srv.URL + "/vigil-alerts", Priority: tc.priority}
			if tc.token {
				settings.TokenSecretRef = &v1.SecretKeyRef{Name: "ntfy", Key: "token"}
			}
			mustSend(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelNtfy, Ntfy: settings}), tc.msg,
				map[string]string{"ntfy/token": "tk_AbCdEf0123456789\n"})
			req := srv.only(t)
			if req.Method != http.MethodPost || req.Path != "/vigil-alerts" {
				t.Errorf("request %s %s", req.Method, req.Path)
			}
			checkHeader(t, req.Header, "Title", tc.wantTitle)
			checkHeader(t, req.Header, "Priority", tc.wantPriority)
			checkHeader(t, req.Header, "Tags", tc.wantTags)
			checkHeader(t, req.Header, "Click", tc.msg.Check.DetailsURL)
			checkHeader(t, req.Header, "Content-Type", "text/plain; charset=utf-8")
			checkUserAgent(t, req.Header)
			wantAuth := ""
			if tc.token {
				wantAuth = "Bearer tk_AbCdEf0123456789"
			}
			checkHeader(t, req.Header, "Authorization", wantAuth)
			if tc.wantBodyLines != nil {
				if got := strings.Split(string(req.Body), "\n"); strings.Join(got, "|") != strings.Join(tc.wantBodyLines, "|") {
					t.Errorf("body lines %q, want %q", got, tc.wantBodyLines)
				}
			}
		})
	}
}

func TestNtfyEncodesNonASCIIHeaders(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	m := downMessage()
	m.Check.Name = "Sauvegarde café ☕"
	m.Check.Tags = []string{"prod", "données"}
	mustSend(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelNtfy, Ntfy: &v1.NtfyChannel{URL: srv.URL + "/t"}}), m, nil)
	req := srv.only(t)
	dec := new(mime.WordDecoder)
	for name, want := range map[string]string{"Title": "Sauvegarde café ☕ is DOWN", "Tags": "red_circle,prod,données"} {
		raw := req.Header.Get(name)
		if !strings.HasPrefix(raw, "=?utf-8?b?") {
			t.Errorf("%s = %q is not RFC 2047 encoded", name, raw)
		}
		if got, err := dec.DecodeHeader(raw); err != nil || got != want {
			t.Errorf("%s decodes to %q (%v), want %q", name, got, err, want)
		}
	}
}

// The PagerDuty Events API v2 event.
type pdWireEvent struct {
	RoutingKey  string `json:"routing_key"`
	EventAction string `json:"event_action"`
	DedupKey    string `json:"dedup_key"`
	Client      string `json:"client"`
	ClientURL   string `json:"client_url"`
	Payload     *struct {
		Summary       string         `json:"summary"`
		Source        string         `json:"source"`
		Severity      string         `json:"severity"`
		Timestamp     string         `json:"timestamp"`
		Component     string         `json:"component"`
		Group         string         `json:"group"`
		Class         string         `json:"class"`
		CustomDetails map[string]any `json:"custom_details"`
	} `json:"payload"`
}

// validate applies the Events API v2's documented requirements.
func (e *pdWireEvent) validate(t *testing.T) {
	t.Helper()
	if len(e.RoutingKey) == 0 || e.DedupKey == "" || len(e.DedupKey) > 255 {
		t.Errorf("routing_key %q dedup_key %q", e.RoutingKey, e.DedupKey)
	}
	switch e.EventAction {
	case "trigger":
		p := e.Payload
		if p == nil {
			t.Fatal("a trigger needs a payload")
		}
		if p.Summary == "" || len(p.Summary) > 1024 || p.Source == "" {
			t.Errorf("summary %q source %q", p.Summary, p.Source)
		}
		if !map[string]bool{"critical": true, "error": true, "warning": true, "info": true}[p.Severity] {
			t.Errorf("severity %q", p.Severity)
		}
		if _, err := time.Parse(time.RFC3339, p.Timestamp); err != nil {
			t.Errorf("timestamp %q: %v", p.Timestamp, err)
		}
	case "resolve", "acknowledge":
	default:
		t.Errorf("event_action %q", e.EventAction)
	}
}

func TestPagerDuty(t *testing.T) {
	const key = "R0UT1NGK3Y0123456789abcdefABCDEF"
	srv := newRecorder(t, http.StatusAccepted, `{"status":"success","message":"Event processed","dedup_key":"x"}`)
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelPagerDuty, PagerDuty: &v1.PagerDutyChannel{
		RoutingKeySecretRef: ref("pd", "key"), URL: srv.URL + "/v2/enqueue"}})
	secrets := map[string]string{"pd/key": key}
	mustSend(t, ch, downMessage(), secrets)
	mustSend(t, ch, upMessage(), secrets)
	test := downMessage()
	test.Test = true
	mustSend(t, ch, test, secrets)

	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	var events [3]pdWireEvent
	for i, req := range reqs {
		if req.Method != http.MethodPost || req.Path != "/v2/enqueue" {
			t.Errorf("request %s %s", req.Method, req.Path)
		}
		checkHeader(t, req.Header, "Content-Type", "application/json")
		checkUserAgent(t, req.Header)
		decodeStrict(t, req.Body, &events[i])
		events[i].validate(t)
		if events[i].RoutingKey != key {
			t.Errorf("routing_key %q", events[i].RoutingKey)
		}
	}
	down, up, tst := events[0], events[1], events[2]
	if down.EventAction != "trigger" || up.EventAction != "resolve" || tst.EventAction != "trigger" {
		t.Errorf("actions %s %s %s", down.EventAction, up.EventAction, tst.EventAction)
	}
	if down.DedupKey != "vigil-"+fixtureUUID || up.DedupKey != down.DedupKey || tst.DedupKey != "vigil-test-"+fixtureUUID {
		t.Errorf("dedup keys %q %q %q", down.DedupKey, up.DedupKey, tst.DedupKey)
	}
	p := down.Payload
	if p.Summary != "Nightly backup is DOWN" || p.Source != "team-a/nightly-backup" || p.Severity != "critical" ||
		p.Timestamp != "2024-05-01T12:00:00.000Z" || p.Group != "team-a" || p.Class != "timeout" || p.Component != "Nightly backup" {
		t.Errorf("payload %+v", p)
	}
	if p.CustomDetails["Last Ping"] != "Success, 10 minutes ago" || p.CustomDetails["Period"] != "1 day" ||
		p.CustomDetails["Reason"] != "success signal did not arrive on time, grace time passed" {
		t.Errorf("custom_details %v", p.CustomDetails)
	}
	if down.Client != "Vigil" || down.ClientURL != downMessage().Check.DetailsURL {
		t.Errorf("client %q %q", down.Client, down.ClientURL)
	}
	if up.Payload != nil || tst.Payload.Summary != "[Test] Nightly backup is DOWN" {
		t.Errorf("resolve payload %+v, test summary %q", up.Payload, tst.Payload.Summary)
	}
}

// TestPagerDutyDefaultURL: a channel without a URL posts to PagerDuty's
// Events API. The context is over before the request starts, so nothing
// leaves the test; the error names where it was going.
func TestPagerDutyDefaultURL(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelPagerDuty, PagerDuty: &v1.PagerDutyChannel{RoutingKeySecretRef: ref("pd", "key")}})
	err := Send(ctx, Delivery{Channel: ch, Message: downMessage(), Secret: secretMap(map[string]string{"pd/key": "k0123456789"})})
	if want := "pagerduty: POST https://events.pagerduty.com/v2/enqueue: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Send = %v, want an error starting %q", err, want)
	}
}

// An Alertmanager API v2 PostableAlert.
type amWireAlert struct {
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     string            `json:"startsAt"`
	EndsAt       string            `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
}

var labelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// validate applies what Alertmanager checks of posted alerts.
func (a *amWireAlert) validate(t *testing.T) (startsAt, endsAt time.Time) {
	t.Helper()
	if len(a.Labels) == 0 {
		t.Error("an alert needs labels")
	}
	for k, v := range a.Labels {
		if !labelName.MatchString(k) || v == "" {
			t.Errorf("label %q=%q", k, v)
		}
	}
	var err error
	if startsAt, err = time.Parse(time.RFC3339Nano, a.StartsAt); err != nil {
		t.Errorf("startsAt %q: %v", a.StartsAt, err)
	}
	if a.EndsAt != "" {
		if endsAt, err = time.Parse(time.RFC3339Nano, a.EndsAt); err != nil {
			t.Errorf("endsAt %q: %v", a.EndsAt, err)
		}
		if endsAt.Before(startsAt) {
			t.Errorf("endsAt %s before startsAt %s", a.EndsAt, a.StartsAt)
		}
	}
	if a.GeneratorURL != "" {
		if u, err := url.Parse(a.GeneratorURL); err != nil || !u.IsAbs() {
			t.Errorf("generatorURL %q is not an absolute URI", a.GeneratorURL)
		}
	}
	return startsAt, endsAt
}

func TestAlertmanager(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelAlertmanager, Alertmanager: &v1.AlertmanagerChannel{
		URL:                  srv.URL + "/am/",
		Labels:               map[string]string{"severity": "page", "alertname": "Overridden", "team": "a"},
		BearerTokenSecretRef: &v1.SecretKeyRef{Name: "am", Key: "token"},
	}})
	secrets := map[string]string{"am/token": "am-bearer-0123456789"}
	down, up, test := downMessage(), upMessage(), downMessage()
	up.Time = fixedFlip.Add(30 * time.Minute)
	test.Test = true
	for _, m := range []Message{down, up, test} {
		mustSend(t, ch, m, secrets)
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	alerts := make([]amWireAlert, 3)
	for i, req := range reqs {
		if req.Method != http.MethodPost || req.Path != "/am/api/v2/alerts" {
			t.Errorf("request %s %s", req.Method, req.Path)
		}
		checkHeader(t, req.Header, "Content-Type", "application/json")
		checkHeader(t, req.Header, "Authorization", "Bearer am-bearer-0123456789")
		checkUserAgent(t, req.Header)
		var posted []amWireAlert
		decodeStrict(t, req.Body, &posted)
		if len(posted) != 1 {
			t.Fatalf("posted %d alerts", len(posted))
		}
		alerts[i] = posted[0]
	}
	wantLabels := map[string]string{"alertname": "VigilCheckDown", "namespace": "team-a", "check": "nightly-backup", "severity": "page", "team": "a"}

	d := alerts[0]
	start, end := d.validate(t)
	if !start.Equal(fixedFlip) || !end.Equal(fixedFlip.Add(365*24*time.Hour)) {
		t.Errorf("down alert startsAt %s endsAt %s", d.StartsAt, d.EndsAt)
	}
	if !equalMaps(d.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", d.Labels, wantLabels)
	}
	if d.Annotations["summary"] != "Nightly backup is DOWN" || d.Annotations["ping_url"] != down.Check.PingURL ||
		d.Annotations["description"] != "Reason: success signal did not arrive on time, grace time passed.\nLast ping: Success, 10 minutes ago.\nBacks up the orders database." ||
		d.GeneratorURL != down.Check.DetailsURL {
		t.Errorf("annotations %v generatorURL %q", d.Annotations, d.GeneratorURL)
	}

	u := alerts[1]
	start, end = u.validate(t)
	if !start.Equal(up.Time) || !end.Equal(up.Time) {
		t.Errorf("resolving alert startsAt %s endsAt %s, want both at the up flip", u.StartsAt, u.EndsAt)
	}
	if !equalMaps(u.Labels, d.Labels) {
		t.Errorf("resolving alert labels %v differ from the firing alert's %v", u.Labels, d.Labels)
	}

	ta := alerts[2]
	ta.validate(t)
	if ta.Labels["vigil_test"] != "true" || ta.EndsAt != "" || !strings.HasPrefix(ta.Annotations["summary"], "[Test] ") {
		t.Errorf("test alert %+v", ta)
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || v != w {
			return false
		}
	}
	return true
}
