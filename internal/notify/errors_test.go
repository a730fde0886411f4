package notify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Credentials of the HTTP kinds under test; none may appear in an error.
const (
	slackToken    = "T0SLACK/B0SLACK/slackSecretToken123"
	teamsToken    = "workflows/abc/triggers/manual/paths/invoke?sig=teamsSignature456"
	discordToken  = "123456/discordWebhookToken789"
	webhookToken  = "webhookQueryToken321"
	headerSecret  = "Bearer headerSecretValue654"
	ntfyToken     = "tk_ntfySecretToken987"
	pdRoutingKey  = "pdRoutingKeySecret0123456789abcd"
	amBearerToken = "amBearerSecret246"
)

var allCredentials = []string{"slackSecretToken123", "teamsSignature456", "discordWebhookToken789",
	webhookToken, "headerSecretValue654", ntfyToken, pdRoutingKey, amBearerToken}

// moreHTTPKinds are the cases of the kinds whose test files add their own
// (addHTTPKind, from init), so every kind runs the error, egress and gate
// tests below.
var moreHTTPKinds []httpKindCase

// successAnswers are the bodies that kinds which read the service's answer
// need to see success (a list of open issues, an Apprise result): the
// shared tests' servers answer them; other kinds get an empty body.
var successAnswers = map[v1.ChannelKind]string{}

// emptyMeansFailure are the kinds for which a 204 is the service saying it
// did nothing (Apprise: no configuration, no valid URL).
var emptyMeansFailure = map[v1.ChannelKind]bool{}

// addHTTPKind adds a kind's case and the credentials its secrets hold,
// none of which may appear in an error.
func addHTTPKind(c httpKindCase, credentials ...string) {
	moreHTTPKinds = append(moreHTTPKinds, c)
	allCredentials = append(allCredentials, credentials...)
}

// httpKindCase is one HTTP kind pointed at a base URL.
type httpKindCase struct {
	kind    v1.ChannelKind
	channel func(base string) *v1.Channel
	secrets func(base string) map[string]string
}

func httpKinds() []httpKindCase {
	chat := func(kind v1.ChannelKind, token string) httpKindCase {
		return httpKindCase{kind, func(string) *v1.Channel { return chatChannel(kind) },
			func(base string) map[string]string { return map[string]string{"chat/url": base + "/" + token} }}
	}
	cases := []httpKindCase{
		{v1.ChannelWebhook, func(string) *v1.Channel {
			return testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &v1.WebhookRequest{
				URLSecretRef:     &v1.SecretKeyRef{Name: "hook", Key: "url"},
				HeaderSecretRefs: map[string]v1.SecretKeyRef{"Authorization": ref("hook", "auth")},
			}}})
		}, func(base string) map[string]string {
			return map[string]string{"hook/url": base + "/hook?token=" + webhookToken, "hook/auth": headerSecret}
		}},
		chat(v1.ChannelSlack, "services/"+slackToken),
		chat(v1.ChannelMSTeams, teamsToken),
		chat(v1.ChannelDiscord, "api/webhooks/"+discordToken),
		{v1.ChannelNtfy, func(base string) *v1.Channel {
			return testChannel(v1.ChannelSpec{Kind: v1.ChannelNtfy, Ntfy: &v1.NtfyChannel{
				URL: base + "/topic", TokenSecretRef: &v1.SecretKeyRef{Name: "ntfy", Key: "token"}}})
		}, func(string) map[string]string { return map[string]string{"ntfy/token": ntfyToken} }},
		{v1.ChannelPagerDuty, func(base string) *v1.Channel {
			return testChannel(v1.ChannelSpec{Kind: v1.ChannelPagerDuty, PagerDuty: &v1.PagerDutyChannel{
				URL: base + "/v2/enqueue", RoutingKeySecretRef: ref("pd", "key")}})
		}, func(string) map[string]string { return map[string]string{"pd/key": pdRoutingKey} }},
		{v1.ChannelAlertmanager, func(base string) *v1.Channel {
			return testChannel(v1.ChannelSpec{Kind: v1.ChannelAlertmanager, Alertmanager: &v1.AlertmanagerChannel{
				URL: base, BearerTokenSecretRef: &v1.SecretKeyRef{Name: "am", Key: "token"}}})
		}, func(string) map[string]string { return map[string]string{"am/token": amBearerToken} }},
	}
	return append(cases, moreHTTPKinds...)
}

func checkNoCredentials(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	for _, c := range allCredentials {
		if strings.Contains(msg, c) {
			t.Errorf("error contains the credential %q: %s", c, msg)
		}
	}
	var se *StatusError
	if errors.As(err, &se) {
		for _, c := range allCredentials {
			if strings.Contains(se.Body, c) || strings.Contains(se.Target, c) {
				t.Errorf("StatusError fields contain the credential %q: %+v", c, se)
			}
		}
	}
}

// echoServer answers every request with status, echoing the request's URL,
// headers and body back, as some services do in their errors.
func echoServer(t *testing.T, status int, extra http.Header) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		for k, vs := range extra {
			w.Header()[k] = vs
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, "bad request to %s auth=%q body=%s", r.URL.RequestURI(), r.Header.Get("Authorization"), b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestHTTPStatusClassification(t *testing.T) {
	for _, code := range []struct {
		status     int
		permanent  bool
		retryAfter time.Duration
	}{
		{http.StatusBadRequest, true, 0},
		{http.StatusUnauthorized, true, 0},
		{http.StatusNotFound, true, 0},
		{http.StatusGone, true, 0},
		{http.StatusRequestTimeout, false, 0},
		{http.StatusTooManyRequests, false, 7 * time.Second},
		{http.StatusInternalServerError, false, 0},
		{http.StatusServiceUnavailable, false, 0},
		{http.StatusFound, false, 0},
	} {
		for _, k := range httpKinds() {
			t.Run(fmt.Sprintf("%d/%s", code.status, k.kind), func(t *testing.T) {
				extra := http.Header{}
				if code.retryAfter > 0 {
					extra.Set("Retry-After", "7")
				}
				if code.status == http.StatusFound {
					extra.Set("Location", "http://127.0.0.1:1/elsewhere")
				}
				srv := echoServer(t, code.status, extra)
				err := send(t, k.channel(srv.URL), downMessage(), k.secrets(srv.URL))
				if err == nil {
					t.Fatal("Send succeeded on an error status")
				}
				if IsPermanent(err) != code.permanent {
					t.Errorf("IsPermanent = %v, want %v: %v", IsPermanent(err), code.permanent, err)
				}
				var se *StatusError
				if !errors.As(err, &se) || se.Code != code.status || se.RetryAfter != code.retryAfter {
					t.Errorf("StatusError %+v, want code %d retry-after %s", se, code.status, code.retryAfter)
				}
				if !strings.Contains(err.Error(), fmt.Sprintf("HTTP %d", code.status)) || !strings.HasPrefix(err.Error(), string(k.kind)+": ") {
					t.Errorf("error %q does not name the kind and status", err)
				}
				checkNoCredentials(t, err)
			})
		}
	}
}

func TestHTTPTimeoutAndConnectionErrorsAreRetryable(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); slow.Close() })
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	for _, k := range httpKinds() {
		for _, tc := range []struct {
			name string
			base string
		}{{"timeout", slow.URL}, {"refused", closedURL}} {
			t.Run(string(k.kind)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				err := Send(ctx, Delivery{Channel: k.channel(tc.base), Message: downMessage(),
					Secret: secretMap(k.secrets(tc.base)), Egress: loopbackEgress})
				if err == nil || IsPermanent(err) {
					t.Fatalf("Send = %v, want a retryable error", err)
				}
				if tc.name == "timeout" {
					var ne net.Error
					if !errors.As(err, &ne) || !ne.Timeout() {
						t.Errorf("error %v is not a timeout", err)
					}
				}
				checkNoCredentials(t, err)
			})
		}
	}
}

func TestSuccessOnAny2xx(t *testing.T) {
	for _, status := range []int{200, 201, 202, 204} {
		for _, k := range httpKinds() {
			if status == http.StatusNoContent && emptyMeansFailure[k.kind] {
				continue
			}
			srv := newRecorder(t, status, successAnswers[k.kind])
			if status == http.StatusNoContent {
				srv.body = ""
			}
			if err := send(t, k.channel(srv.URL), downMessage(), k.secrets(srv.URL)); err != nil {
				t.Errorf("%s with %d: %v", k.kind, status, err)
			}
		}
	}
}

func TestSecretURLsShowOnlyTheirHost(t *testing.T) {
	srv := echoServer(t, http.StatusNotFound, nil)
	err := send(t, chatChannel(v1.ChannelSlack), downMessage(), map[string]string{"chat/url": srv.URL + "/services/" + slackToken})
	want := "slack: POST " + srv.URL + ": HTTP 404 Not Found: "
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %v, want it to start with %q", err, want)
	}
	// A URL that is not from a Secret is shown with its path, never its query.
	srv2 := echoServer(t, http.StatusNotFound, nil)
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{
		Down: &v1.WebhookRequest{URL: srv2.URL + "/path?q=1"}}})
	err = send(t, ch, downMessage(), nil)
	if err == nil || !strings.HasPrefix(err.Error(), "webhook: POST "+srv2.URL+"/path: HTTP 404") {
		t.Errorf("error %v", err)
	}
}

func TestSendErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ch        *v1.Channel
		secrets   map[string]string
		permanent bool
		contains  string
	}{
		{"no channel", nil, nil, true, "no channel"},
		{"unknown kind", testChannel(v1.ChannelSpec{Kind: "carrier-pigeon"}), nil, true, "unknown channel kind"},
		{"missing settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelSlack}), nil, true, "no slack settings"},
		{"missing secret", chatChannel(v1.ChannelDiscord), nil, false, `Secret "chat" key "url"`},
		{"empty secret", chatChannel(v1.ChannelDiscord), map[string]string{"chat/url": " \n"}, false, "is empty"},
		{"ntfy without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelNtfy}), nil, true, "no ntfy settings"},
		{"pagerduty without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelPagerDuty}), nil, true, "no pagerduty settings"},
		{"alertmanager without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelAlertmanager}), nil, true, "no alertmanager settings"},
		{"email without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelEmail}), nil, true, "no email settings"},
		{"webhook without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook}), nil, true, "no webhook settings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := send(t, tc.ch, downMessage(), tc.secrets)
			if err == nil || IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("Send = %v (permanent %v), want an error containing %q, permanent %v", err, IsPermanent(err), tc.contains, tc.permanent)
			}
		})
	}
}

func TestPermanent(t *testing.T) {
	base := errors.New("boom")
	p := Permanent(base)
	if !IsPermanent(p) || !errors.Is(p, base) || p.Error() != "boom" {
		t.Errorf("Permanent(boom) = %v", p)
	}
	if Permanent(nil) != nil || IsPermanent(nil) || IsPermanent(base) {
		t.Error("nil and unmarked errors are not permanent")
	}
	if wrapped := fmt.Errorf("ctx: %w", p); !IsPermanent(wrapped) || Permanent(wrapped) != wrapped { //nolint:errorlint // identity is the point
		t.Error("wrapping keeps the mark, and marking twice is a no-op")
	}
	r := &redactedError{err: fmt.Errorf("x: %w", p), secrets: []string{"boom"}}
	if !IsPermanent(r) || r.Error() != "x: [redacted]" {
		t.Errorf("redacted %q permanent %v", r.Error(), IsPermanent(r))
	}
}

// A Secret echoed where the error excerpt is cut short is still hidden,
// not cut in half.
func TestRedactionBeforeTruncation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "%s %s and more text after it", strings.Repeat("x", maxErrorBody-10), pdRoutingKey)
	}))
	t.Cleanup(srv.Close)
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelPagerDuty, PagerDuty: &v1.PagerDutyChannel{
		URL: srv.URL, RoutingKeySecretRef: ref("pd", "key")}})
	err := send(t, ch, downMessage(), map[string]string{"pd/key": pdRoutingKey})
	if err == nil || strings.Contains(err.Error(), pdRoutingKey[:8]) {
		t.Fatalf("error %v shows part of the routing key", err)
	}
	if !strings.Contains(err.Error(), " [redact") {
		t.Errorf("error %v does not mark the redaction", err)
	}
}

func TestUserAgent(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	err := Send(t.Context(), Delivery{Channel: testChannel(v1.ChannelSpec{Kind: v1.ChannelNtfy, Ntfy: &v1.NtfyChannel{URL: srv.URL}}),
		Message: upMessage(), Egress: loopbackEgress})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	checkUserAgent(t, srv.only(t).Header)
	if !strings.HasPrefix(UserAgent(), "Vigil/") {
		t.Errorf("UserAgent() = %q", UserAgent())
	}
}
