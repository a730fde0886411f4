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

const signalTestToken = "signalProxyToken8642"

func signalChannel(base string, recipients ...string) *v1.Channel {
	if len(recipients) == 0 {
		recipients = []string{"+15557654321"}
	}
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelSignal, Signal: &v1.SignalChannel{
		URL: base, Number: "+15551234567", Recipients: recipients,
		TokenSecretRef: &v1.SecretKeyRef{Name: "signal", Key: "token"}}})
}

var signalSecrets = map[string]string{"signal/token": signalTestToken}

func init() {
	addHTTPKind(httpKindCase{v1.ChannelSignal, func(base string) *v1.Channel { return signalChannel(base) },
		func(string) map[string]string { return signalSecrets }}, signalTestToken)
}

// signalWireSend is the v2 send request as the REST API's Swagger
// documents it (api.SendMessageV2), with the fields Vigil sets.
type signalWireSend struct {
	Message    string   `json:"message"`
	Number     string   `json:"number"`
	Recipients []string `json:"recipients"`
	TextMode   string   `json:"text_mode"`
}

func signalRequest(t *testing.T, req captured) signalWireSend {
	t.Helper()
	if req.Method != http.MethodPost || req.Path != "/signal/v2/send" || req.RawQuery != "" {
		t.Errorf("request %s %s?%s, want POST /signal/v2/send", req.Method, req.Path, req.RawQuery)
	}
	checkHeader(t, req.Header, "Authorization", "Bearer "+signalTestToken)
	checkHeader(t, req.Header, "Content-Type", "application/json")
	checkUserAgent(t, req.Header)
	var s signalWireSend
	decodeStrict(t, req.Body, &s)
	if s.Number != "+15551234567" || s.TextMode != "styled" {
		t.Errorf("number %q text_mode %q", s.Number, s.TextMode)
	}
	return s
}

func TestSignal(t *testing.T) {
	srv := newRecorder(t, http.StatusCreated, `{"timestamp":"1714565400000"}`)
	ch := signalChannel(srv.URL + "/signal")
	mustSend(t, ch, downMessage(), signalSecrets)
	mustSend(t, ch, upMessage(), signalSecrets)
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	facts := "**Description:** Backs up the orders database.\n**Namespace:** team-a\n**Tags:** `prod db`\n" +
		"**Period:** 1 day\n**Total Pings:** 42\n**Last Ping:** Success, 10 minutes ago\n\n" +
		"**Last ping body:**\n`backup done: 3 files`\n\n" + phoneDetailsURL
	for i, want := range []string{
		"**“Nightly backup” is DOWN.**\nReason: success signal did not arrive on time, grace time passed.\n\n" + facts,
		"**“Nightly backup” is UP.**\n\n" + facts,
	} {
		s := signalRequest(t, reqs[i])
		if s.Message != want {
			t.Errorf("message %d = %q, want %q", i, s.Message, want)
		}
		if !reflect.DeepEqual(s.Recipients, []string{"+15557654321"}) {
			t.Errorf("recipients %q", s.Recipients)
		}
	}
}

func TestSignalEscapesMarkers(t *testing.T) {
	srv := newRecorder(t, http.StatusCreated, "")
	m := downMessage()
	m.Check.Name = "*nightly* `backup` ~a|b~ C:\\"
	m.Check.Tags = nil
	m.Check.Desc = ""
	m.Check.LastPingBody = []byte("**done**")
	m.Check.DetailsURL = ""
	mustSend(t, signalChannel(srv.URL+"/signal"), m, signalSecrets)
	s := signalRequest(t, srv.only(t))
	title := "**“\\*nightly\\* \\`backup\\` \\~a\\|b\\~ C:\\” is DOWN.**"
	if !strings.HasPrefix(s.Message, title+"\n") {
		t.Errorf("message opens %q, want %q", s.Message[:min(len(s.Message), len(title)+1)], title)
	}
	if !strings.HasSuffix(s.Message, "**Last ping body:**\n`\\*\\*done\\*\\*`") {
		t.Errorf("message ends %q", s.Message[len(s.Message)-30:])
	}
}

func TestSignalEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain text":     "plain text",
		"*bold* _x_":     `\*bold\* _x_`,
		"a`b`c":          "a\\`b\\`c",
		"~strike~ ||s||": `\~strike\~ \|\|s\|\|`,
		`C:\dir\`:        "C:\\dir\\\u200b",
		`\*`:             `\\*`,
	} {
		if got := signalEscape(in); got != want {
			t.Errorf("signalEscape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSignalBatches(t *testing.T) {
	const group1 = "group.ZmFrZUdyb3VwSWQxMjM0NTY3ODkwMTIzNDU2Nzg5MDEyMzQ1Ng=="
	const group2 = "group.b3RoZXJHcm91cElkMTIzNDU2Nzg5MDEyMzQ1Njc4OTAxMjM0NQ=="
	const accountUUID = "0b1d5f3a-4c2e-4f6a-8b9c-0d1e2f3a4b5c"
	for _, tc := range []struct {
		name string
		in   []string
		want [][]string
	}{
		{"numbers together", []string{"+15550000001", "+15550000002"}, [][]string{{"+15550000001", "+15550000002"}}},
		{"a UUID with the numbers", []string{"+15550000001", accountUUID}, [][]string{{"+15550000001", accountUUID}}},
		{"usernames apart", []string{"alice.01", "+15550000001", "bob.42"}, [][]string{{"+15550000001"}, {"alice.01", "bob.42"}}},
		{"one request per group", []string{group1, "+15550000001", group2}, [][]string{{"+15550000001"}, {group1}, {group2}}},
		{"duplicates and blanks dropped", []string{"+15550000001", " ", "+15550000001 "}, [][]string{{"+15550000001"}}},
		{"none", []string{" "}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := signalBatches(tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("signalBatches(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestSignalSendsOneRequestPerBatch(t *testing.T) {
	const group = "group.ZmFrZUdyb3VwSWQxMjM0NTY3ODkwMTIzNDU2Nzg5MDEyMzQ1Ng=="
	srv := newRecorder(t, http.StatusCreated, "")
	mustSend(t, signalChannel(srv.URL+"/signal", "+15550000001", group, "alice.01", "+15550000002"), downMessage(), signalSecrets)
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	var got [][]string
	for _, r := range reqs {
		got = append(got, signalRequest(t, r).Recipients)
	}
	if want := [][]string{{"+15550000001", "+15550000002"}, {"alice.01"}, {group}}; !reflect.DeepEqual(got, want) {
		t.Errorf("recipients %q, want %q", got, want)
	}
}

func TestSignalLength(t *testing.T) {
	m := downMessage()
	m.Check.LastPingBody = []byte(strings.Repeat("a line of the job's log\n", 100))
	m.Check.Desc = strings.Repeat("d", 1000)
	text := signalText(&m)
	if n := utf16Len(text); n > signalMessageMax || !strings.Contains(text, "[truncated]`") || !strings.HasSuffix(text, phoneDetailsURL) {
		t.Errorf("message of %d code units: …%q", n, text[len(text)-120:])
	}
	m.Check.Desc = strings.Repeat("*", 3000)
	text = signalText(&m)
	if n := utf16Len(text); n > signalMessageMax || !strings.HasPrefix(text, "“Nightly backup” is DOWN.\n") || !strings.HasSuffix(text, "…") {
		t.Errorf("message of %d code units: %q…", n, text[:60])
	}
}

func TestSignalErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ch       *v1.Channel
		contains string
	}{
		{"without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelSignal}), "no signal settings"},
		{"no recipients", signalChannel("http://signal.example.com", " "), "no recipients"},
	} {
		err := send(t, tc.ch, downMessage(), signalSecrets)
		if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), tc.contains) {
			t.Errorf("%s: Send = %v, want a permanent error containing %q", tc.name, err, tc.contains)
		}
	}
	k, _ := Lookup(v1.ChannelSignal)
	if got := k.SecretRefs(&signalChannel("").Spec); len(got) != 1 || got[0] != ref("signal", "token") {
		t.Errorf("SecretRefs = %v", got)
	}
}

func TestSignalRateLimit(t *testing.T) {
	expectRetryAfter429(t, func(base string) *v1.Channel { return signalChannel(base) }, signalSecrets)
}

// signalFailed is how signal-cli lists the recipients a send failed for
// (each line "<recipient>: <failure>"), then the timestamp and the
// summary, as the REST API passes them on in {"error": …}.
func signalFailed(summary string, lines ...string) string {
	return `{"error":"Failed to send (some) messages:\n` + strings.Join(lines, `\n`) + `\n1714565400000\n` + summary + `\n"}`
}

// The REST API answers 400 to almost every failure of a send, so what its
// error says decides whether a retry may help. The bodies are worded as
// the REST API (src/api, src/client) and signal-cli (SendCommand,
// SendMessageResultUtils) word them.
func TestSignalFailureClasses(t *testing.T) {
	const to = `+15557654321: `
	// An answer longer than the excerpt d.do reads is no JSON once cut:
	// its words still count.
	limited := make([]string, 20)
	for i := range limited {
		limited[i] = to + `Rate limit failure for \"+15557654321\", retry after 45 seconds`
	}
	manyLimited := signalFailed("Failed to send message due to rate limiting", limited...)
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		permanent  bool
		retryAfter time.Duration
	}{
		// Rate limits: retried, no sooner than the delay they name.
		{"rate limit naming a delay", http.StatusBadRequest,
			signalFailed("Failed to send message due to rate limiting", to+`Rate limit failure for \"+15557654321\", retry after 30 seconds`),
			false, 30 * time.Second},
		{"captcha proof required", http.StatusBadRequest,
			signalFailed("Failed to send message", to+`CAPTCHA proof required for sending to \"+15557654321\", available options \"CAPTCHA\" with challenge token \"0a1b2c3d\", or wait \"600\" seconds.`),
			false, 10 * time.Minute},
		{"rate limit naming no delay", http.StatusBadRequest,
			`{"error":"Failed to send message: [429] Rate limit exceeded: 429 (RateLimitException) (UnexpectedErrorException)"}`,
			false, signalRateLimitWait},
		{"rate limit answered 429 (json-rpc mode)", http.StatusTooManyRequests,
			`{"error":"Failed to send message due to rate limiting. Use the attached challenge tokens to lift the rate limit restrictions via the '/v1/accounts/{number}/rate-limit-challenge' endpoint.","challenge_tokens":["0a1b2c3d"],"account":"+15551234567"}`,
			false, signalRateLimitWait},
		{"rate limit in an answer cut short", http.StatusBadRequest, manyLimited, false, 45 * time.Second},
		// Network failures: retried with the usual backoff.
		{"network failure", http.StatusBadRequest,
			signalFailed("Failed to send message", to+`Network failure for \"+15557654321\"`), false, 0},
		{"Signal service unreachable", http.StatusBadRequest,
			`{"error":"Failed to send message: Unable to connect to the Signal service (PushNetworkException)"}`, false, 0},
		{"signal-cli timed out", http.StatusBadRequest, `{"error":"process killed as timeout reached"}`, false, 0},
		{"json-rpc failure without details", http.StatusBadRequest, `{"error":"Failed to send message"}`, false, 0},
		{"a network failure beside an unregistered recipient", http.StatusBadRequest,
			signalFailed("Failed to send message", `+15550000001: Unregistered user \"+15550000001\"`, to+`Network failure for \"+15557654321\"`),
			false, 0},
		// What only a person can fix: not retried.
		{"unregistered recipient", http.StatusBadRequest,
			signalFailed("Failed to send message", to+`Unregistered user \"+15557654321\"`), true, 0},
		{"untrusted identity", http.StatusBadRequest,
			signalFailed("Failed to send message due to untrusted identities", to+`Untrusted Identity for \"+15557654321\"`), true, 0},
		{"sender not registered", http.StatusBadRequest, `{"error":"User +15551234567 is not registered.\n"}`, true, 0},
		{"invalid recipient", http.StatusBadRequest, `{"error":"Invalid identifier group.abc"}`, true, 0},
		{"bad request shape", http.StatusBadRequest, `{"error":"Couldn't process request - invalid request"}`, true, 0},
		// Anything else is judged by its status code, as for every kind.
		{"unrecognised error", http.StatusBadRequest, `{"error":"Something new went wrong"}`, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, tc.status, tc.body)
			err := send(t, signalChannel(srv.URL+"/signal"), downMessage(), signalSecrets)
			var se *StatusError
			if !errors.As(err, &se) || se.Code != tc.status {
				t.Fatalf("Send = %v, want an HTTP %d StatusError", err, tc.status)
			}
			if IsPermanent(err) != tc.permanent {
				t.Errorf("IsPermanent = %v, want %v: %v", IsPermanent(err), tc.permanent, err)
			}
			if se.RetryAfter != tc.retryAfter {
				t.Errorf("RetryAfter = %s, want %s", se.RetryAfter, tc.retryAfter)
			}
			srv.only(t)
		})
	}
}

func TestSignalRetryAfter(t *testing.T) {
	for text, want := range map[string]time.Duration{
		"rate limit failure for \"+1\", retry after 30 seconds": 30 * time.Second,
		`or wait \"600\" seconds.`:                              10 * time.Minute,
		"retry after 5 seconds; retry after 90 seconds":         90 * time.Second,
		"retry after 999999999 seconds":                         24 * time.Hour,
		"failed to send message due to rate limiting":           0,
		"retry after a while":                                   0,
	} {
		if got := signalRetryAfter(text); got != want {
			t.Errorf("signalRetryAfter(%q) = %s, want %s", text, got, want)
		}
	}
}
