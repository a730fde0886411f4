package notify

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/monitor"
)

// appriseURLs are Apprise URLs, each holding a service's credentials.
const appriseURLs = "tgram://123456789:appriseTelegramToken0123/987654 json://hooks.example.com/x?token=appriseJsonToken4567"

func init() {
	addHTTPKind(httpKindCase{v1.ChannelApprise,
		func(base string) *v1.Channel { return appriseChannel(base, "", "") },
		func(string) map[string]string { return map[string]string{"apprise/urls": appriseURLs} }},
		"appriseTelegramToken0123", "appriseJsonToken4567")
	successAnswers[v1.ChannelApprise] = appriseOK
	emptyMeansFailure[v1.ChannelApprise] = true
}

// appriseChannel posts to a saved configuration when key is set, else to
// the URLs in the Secret.
func appriseChannel(base, key, tag string) *v1.Channel {
	s := &v1.AppriseChannel{URL: base, Key: key, Tag: tag}
	if key == "" {
		s.URLsSecretRef = &v1.SecretKeyRef{Name: "apprise", Key: "urls"}
	}
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelApprise, Apprise: s})
}

// appriseOK is the server's answer to a notification it sent, when asked
// for JSON.
const appriseOK = `{"error": null, "details": [["INFO", "2024-05-01 12:10:00,000", "Sent Telegram notification."]]}`

// The documented request bodies of /notify/<key> and /notify/.
type (
	appriseWireKeyed struct {
		Title  string `json:"title"`
		Body   string `json:"body"`
		Type   string `json:"type"`
		Format string `json:"format"`
		Tag    string `json:"tag"`
	}
	appriseWireStateless struct {
		URLs   string `json:"urls"`
		Title  string `json:"title"`
		Body   string `json:"body"`
		Type   string `json:"type"`
		Format string `json:"format"`
	}
)

const appriseDownBody = "Reason: success signal did not arrive on time, grace time passed.\n\n" +
	"- **Description:** Backs up the orders database.\n- **Namespace:** team-a\n- **Tags:** `prod db`\n" +
	"- **Period:** 1 day\n- **Total Pings:** 42\n- **Last Ping:** Success, 10 minutes ago\n\n" +
	"**Last ping body:**\n```\nbackup done: 3 files\n```\n\n" +
	"https://vigil.example.com/checks/" + fixtureUUID

func checkAppriseRequest(t *testing.T, req captured, path string) {
	t.Helper()
	if req.Method != http.MethodPost || req.Path != path || req.RawQuery != "" {
		t.Errorf("request %s %s?%s, want POST %s", req.Method, req.Path, req.RawQuery, path)
	}
	checkHeader(t, req.Header, "Content-Type", "application/json")
	checkHeader(t, req.Header, "Accept", "application/json")
	checkHeader(t, req.Header, "Authorization", "")
	checkUserAgent(t, req.Header)
}

func TestAppriseKey(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, appriseOK)
	ch := appriseChannel(srv.URL+"/apprise", "ops-alerts_1", "devops, on-call")
	mustSend(t, ch, downMessage(), nil)
	req := srv.only(t)
	checkAppriseRequest(t, req, "/apprise/notify/ops-alerts_1")
	var n appriseWireKeyed
	decodeStrict(t, req.Body, &n)
	want := appriseWireKeyed{Title: "“Nightly backup” is DOWN.", Body: appriseDownBody, Type: "failure", Format: "markdown", Tag: "devops, on-call"}
	if n != want {
		t.Errorf("notification\n%+v\nwant\n%+v", n, want)
	}
}

// Apprise URLs name addresses the Apprise server connects to, past the
// egress guard: unless the guard allows relays, none is sent, and the
// Secret is not even read.
func TestAppriseURLsNeedRelaysAllowed(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, appriseOK)
	ch := appriseChannel(srv.URL, "", "")
	read := false
	secret := func(_ context.Context, _ v1.SecretKeyRef) (string, error) {
		read = true
		return "json://169.254.169.254/latest/meta-data", nil
	}
	err := Send(context.Background(), Delivery{Channel: ch, Message: downMessage(), Secret: secret,
		Egress: egress.New(egress.Options{Allow: egress.Loopback})})
	if !IsPermanent(err) || !errors.Is(err, egress.ErrRelayRefused) || !strings.Contains(err.Error(), "name them by key") {
		t.Fatalf("Send = %v, want a permanent refusal of the relay", err)
	}
	if n := len(srv.requests()); n != 0 || read {
		t.Errorf("%d requests reached the Apprise server; Secret read: %v", n, read)
	}
	// A saved configuration, named by key, still goes.
	mustSend(t, appriseChannel(srv.URL, "ops", ""), downMessage(), nil)
}

func TestAppriseStatelessURLs(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, appriseOK)
	// A tag chooses among a saved configuration's URLs: with URLs, it is
	// not sent.
	ch := appriseChannel(srv.URL, "", "devops")
	mustSend(t, ch, upMessage(), map[string]string{"apprise/urls": "\n" + appriseURLs + "\n"})
	req := srv.only(t)
	checkAppriseRequest(t, req, "/notify/")
	var n appriseWireStateless
	decodeStrict(t, req.Body, &n)
	if n.URLs != appriseURLs || n.Title != "“Nightly backup” is UP." || n.Type != "success" || n.Format != "markdown" {
		t.Errorf("notification %+v", n)
	}
	if want := "- **Description:** Backs up the orders database.\n"; !strings.HasPrefix(n.Body, want) ||
		!strings.HasSuffix(n.Body, "\n\nhttps://vigil.example.com/checks/"+fixtureUUID) {
		t.Errorf("body %q", n.Body)
	}
}

func TestAppriseTypes(t *testing.T) {
	notice := func(kind string, test bool) Message {
		m := downMessage()
		m.Notice, m.Test = monitor.Notice(kind), test
		if strings.HasPrefix(kind, "maintenance") {
			m.Held, m.Until = "nightly-restore", fixedNow.Add(time.Hour)
		}
		return m
	}
	testUp := upMessage()
	testUp.Test = true
	for _, tc := range []struct {
		name  string
		msg   Message
		typ   string
		title string
	}{
		{"down", downMessage(), "failure", "“Nightly backup” is DOWN."},
		{"up", upMessage(), "success", "“Nightly backup” is UP."},
		{"re-alert", notice("realert", false), "warning", "“Nightly backup” is still DOWN."},
		{"escalation", notice("escalation", false), "warning", "“Nightly backup” is still DOWN."},
		{"failure notice", notice("failure", false), "warning", "“Nightly backup” had a failed run."},
		{"maintenance start", notice("maintenance-start", false), "info",
			"“Nightly backup” is in maintenance (window nightly-restore holds its notifications until 2024-05-01 13:10 UTC)."},
		{"maintenance end", notice("maintenance-end", false), "info", "“Nightly backup” is out of maintenance (window nightly-restore ended)."},
		{"test down", notice("", true), "info", "[Test] “Nightly backup” is DOWN."},
		{"test up", testUp, "info", "[Test] “Nightly backup” is UP."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusOK, appriseOK)
			mustSend(t, appriseChannel(srv.URL, "ops", ""), tc.msg, nil)
			var n appriseWireKeyed
			decodeStrict(t, srv.only(t).Body, &n)
			if n.Type != tc.typ || n.Title != tc.title {
				t.Errorf("type %q title %q, want %q %q", n.Type, n.Title, tc.typ, tc.title)
			}
		})
	}
}

// TestAppriseAnswers: 200 is success, whatever its body; 204 (nobody to
// notify) and 424 (a service failed) are permanent; 5xx and 429 retry.
func TestAppriseAnswers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		key        string
		status     int
		body       string
		retryAfter string
		ok         bool
		permanent  bool
		contains   string
	}{
		{"200 JSON", "ops", 200, appriseOK, "", true, false, ""},
		{"200 text from an older server", "ops", 200, "2024-05-01 12:10:00,000 - INFO - Sent Telegram notification.", "", true, false, ""},
		{"204 no configuration", "ops", 204, "", "", false, true, "the Apprise server notified nobody: no configuration (or an empty one) is saved under the key ops"},
		{"204 no valid URL", "", 204, "", "", false, true, "the Apprise server notified nobody: none of the Apprise URLs is valid"},
		{"424 a service failed", "ops", 424, `{"error": "One or more notification could not be sent", "details": []}`, "", false, true,
			"HTTP 424 Failed Dependency: {\"error\": \"One or more notification could not be sent\""},
		{"400", "ops", 400, `{"error": "Unsupported characters found in tag definition"}`, "", false, true, "HTTP 400"},
		{"500", "ops", 500, `{"error": "An error occurred accessing configuration"}`, "", false, false, "HTTP 500"},
		{"429", "ops", 429, "slow down", "5", false, false, "HTTP 429"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, tc.status, tc.body)
			if tc.retryAfter != "" {
				srv.header.Set("Retry-After", tc.retryAfter)
			}
			err := send(t, appriseChannel(srv.URL, tc.key, ""), downMessage(), map[string]string{"apprise/urls": appriseURLs})
			if tc.ok {
				if err != nil {
					t.Errorf("Send = %v", err)
				}
				return
			}
			if err == nil || IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("Send = %v (permanent %v), want an error containing %q, permanent %v", err, IsPermanent(err), tc.contains, tc.permanent)
			}
			var se *StatusError
			if tc.retryAfter != "" && (!errors.As(err, &se) || se.RetryAfter != 5*time.Second) {
				t.Errorf("StatusError %+v, want Retry-After 5s", se)
			}
			checkNoCredentials(t, err)
		})
	}
	// A connection closed before any answer is not the 204's empty answer:
	// it may be retried.
	closing := closingServer(t)
	err := send(t, appriseChannel(closing.URL, "ops", ""), downMessage(), nil)
	if err == nil || IsPermanent(err) || strings.Contains(err.Error(), "notified nobody") {
		t.Errorf("connection closed: Send = %v, want a retryable error", err)
	}
}

func TestAppriseSettingsErrors(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, appriseOK)
	both := appriseChannel(srv.URL, "ops", "").Spec.Apprise
	both.URLsSecretRef = &v1.SecretKeyRef{Name: "apprise", Key: "urls"}
	for _, tc := range []struct {
		name      string
		spec      *v1.AppriseChannel
		permanent bool
		contains  string
	}{
		{"no settings", nil, true, "the channel has no apprise settings"},
		{"neither key nor URLs", &v1.AppriseChannel{URL: srv.URL}, true, "exactly one of key and urlsSecretRef"},
		{"both", both, true, "exactly one of key and urlsSecretRef"},
		{"bad key", &v1.AppriseChannel{URL: srv.URL, Key: "../config"}, true, "is not 1 to 128 letters"},
		{"bad URL", &v1.AppriseChannel{URL: "apprise:8000", Key: "ops"}, true, "not an absolute"},
		{"missing Secret", &v1.AppriseChannel{URL: srv.URL, URLsSecretRef: &v1.SecretKeyRef{Name: "none", Key: "urls"}}, false, `Secret "none" key "urls"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelApprise, Apprise: tc.spec}), downMessage(), nil)
			if err == nil || IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("Send = %v (permanent %v), want an error containing %q, permanent %v", err, IsPermanent(err), tc.contains, tc.permanent)
			}
		})
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	k, _ := Lookup(v1.ChannelApprise)
	for _, tc := range []struct {
		ch   *v1.Channel
		want int
	}{{appriseChannel("", "ops", ""), 0}, {appriseChannel("", "", ""), 1}} {
		if got := k.SecretRefs(&tc.ch.Spec); len(got) != tc.want {
			t.Errorf("SecretRefs = %v, want %d", got, tc.want)
		}
	}
}

// A token inside an Apprise URL that does not parse as a URL is hidden
// from errors too, however the server repeats it.
func TestAppriseHidesTokensOfEveryURL(t *testing.T) {
	srv := newRecorder(t, http.StatusBadRequest, `{"error": "bad token appriseTelegramToken0123 for chat 987654"}`)
	err := send(t, appriseChannel(srv.URL, "", ""), downMessage(), map[string]string{"apprise/urls": appriseURLs})
	if err == nil || strings.Contains(err.Error(), "appriseTelegramToken0123") || !strings.Contains(err.Error(), "[redacted]") {
		t.Errorf("Send = %v", err)
	}
}
