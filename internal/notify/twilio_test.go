package notify

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

// The Twilio account of the tests; neither value may appear in an error
// (the SID is in the URL path).
const (
	twilioTestSID   = "AC0123456789abcdef0123456789ABCDEF"
	twilioTestToken = "twilioAuthTokenSecret4321"
)

var twilioSecrets = map[string]string{"twilio/accountSID": twilioTestSID, "twilio/authToken": twilioTestToken}

func twilioSettings(base string) v1.TwilioChannel {
	return v1.TwilioChannel{CredentialsSecretRef: v1.LocalSecretRef{Name: "twilio"},
		From: "+15550001111", To: "+15552223333", URL: base}
}

func smsChannel(base string) *v1.Channel {
	s := twilioSettings(base)
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelSMS, SMS: &s})
}

func whatsAppChannel(base, downSID, upSID string) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelWhatsApp, WhatsApp: &v1.WhatsAppChannel{
		TwilioChannel: twilioSettings(base), DownContentSID: downSID, UpContentSID: upSID}})
}

func callChannel(base string) *v1.Channel {
	s := twilioSettings(base)
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelCall, Call: &s})
}

func init() {
	secrets := func(string) map[string]string { return twilioSecrets }
	addHTTPKind(httpKindCase{v1.ChannelSMS, smsChannel, secrets}, twilioTestSID, twilioTestToken)
	addHTTPKind(httpKindCase{v1.ChannelWhatsApp, func(base string) *v1.Channel { return whatsAppChannel(base, "", "") }, secrets})
	addHTTPKind(httpKindCase{v1.ChannelCall, callChannel, secrets})
}

// twilioForm checks a request to Twilio's API for the test account and
// returns its form.
func twilioForm(t *testing.T, req captured, resource string) url.Values {
	t.Helper()
	if want := "/2010-04-01/Accounts/" + twilioTestSID + "/" + resource; req.Method != http.MethodPost || req.Path != want || req.RawQuery != "" {
		t.Errorf("request %s %s?%s, want POST %s", req.Method, req.Path, req.RawQuery, want)
	}
	user, pass, ok := (&http.Request{Header: req.Header}).BasicAuth()
	if !ok || user != twilioTestSID || pass != twilioTestToken {
		t.Errorf("basic auth %q:%q (%v), want the account SID and auth token", user, pass, ok)
	}
	checkHeader(t, req.Header, "Content-Type", "application/x-www-form-urlencoded")
	checkUserAgent(t, req.Header)
	form, err := url.ParseQuery(string(req.Body))
	if err != nil {
		t.Fatalf("body %q is not form-encoded: %v", req.Body, err)
	}
	return form
}

// formExactly compares a form with the fields it must have, and no others.
func formExactly(t *testing.T, got url.Values, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if len(got[k]) != 1 || got[k][0] != v {
			t.Errorf("field %s = %q, want %q", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected field %s = %q", k, got[k])
		}
	}
}

const phoneDetailsURL = "https://vigil.example.com/checks/" + fixtureUUID

func TestSMS(t *testing.T) {
	srv := newRecorder(t, http.StatusCreated, `{"sid":"SM0123","status":"queued"}`)
	ch := smsChannel(srv.URL)
	mustSend(t, ch, downMessage(), twilioSecrets)
	mustSend(t, ch, upMessage(), twilioSecrets)
	test := downMessage()
	test.Test = true
	mustSend(t, ch, test, twilioSecrets)

	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, want := range []string{
		"“Nightly backup” is DOWN. Reason: success signal did not arrive on time, grace time passed.\n" + phoneDetailsURL,
		"“Nightly backup” is UP.\n" + phoneDetailsURL,
		"[Test] “Nightly backup” is DOWN. Reason: success signal did not arrive on time, grace time passed.\n" + phoneDetailsURL,
	} {
		formExactly(t, twilioForm(t, reqs[i], "Messages.json"), map[string]string{"From": "+15550001111", "To": "+15552223333", "Body": want})
	}
}

func TestSMSLengthLimit(t *testing.T) {
	long := strings.Repeat("Disk full on db-1. ", 100) // 1,900 characters
	for _, tc := range []struct {
		name              string
		text              string
		wantLink, wantCut bool
	}{
		{"short text with the link", "Disk full.", true, false},
		{"link left out when it does not fit", strings.Repeat("x", twilioBodyMax-60), false, false},
		{"text cut short", long, false, true},
		{"emoji count twice", strings.Repeat("🔥", 900), false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := downMessage()
			m.Text = tc.text
			body := smsText(&m)
			if n := utf16Len(body); n > twilioBodyMax {
				t.Errorf("body is %d UTF-16 code units long, over %d", n, twilioBodyMax)
			}
			if !utf8.ValidString(body) {
				t.Error("body is not valid UTF-8")
			}
			if got := strings.HasSuffix(body, "\n"+phoneDetailsURL); got != tc.wantLink {
				t.Errorf("ends with the link: %v, want %v", got, tc.wantLink)
			}
			if !strings.HasPrefix(body, "“Nightly backup” is DOWN. ") {
				t.Errorf("body %q does not open with the title", body)
			}
			if got := strings.HasSuffix(body, "…"); got != tc.wantCut {
				t.Errorf("body ends with an ellipsis: %v, want %v", got, tc.wantCut)
			}
		})
	}
}

func TestWhatsApp(t *testing.T) {
	const downSID, upSID = "HX0123456789abcdef0123456789abcdef", "HXfedcba9876543210fedcba9876543210"
	vars := func(name string) string { return `{"1":"` + name + `"}` }
	failure := downMessage()
	failure.Notice, failure.Detail = "failure", "1 of 3 failures in a row"
	test := upMessage()
	test.Test = true
	realert := downMessage()
	realert.Notice = monitor.NoticeRealert
	for _, tc := range []struct {
		name          string
		msg           Message
		down, up      string
		wantSID       string
		wantVars      string
		wantBodyStart string
	}{
		{"down template", downMessage(), downSID, upSID, downSID, vars("Nightly backup"), ""},
		{"up template", upMessage(), downSID, upSID, upSID, vars("Nightly backup"), ""},
		{"re-alert uses the down template", realert, downSID, upSID, downSID, vars("Nightly backup"), ""},
		{"test marked in the variable", test, downSID, upSID, upSID, vars("[Test] Nightly backup"), ""},
		{"no up template: free text", upMessage(), downSID, "", "", "", "“Nightly backup” is UP.\n\nDescription: Backs up the orders database.\n"},
		{"failure notice: free text", failure, downSID, upSID, "", "", "“Nightly backup” had a failed run (1 of 3 failures in a row).\n"},
		{"no templates: free text", downMessage(), "", "", "",
			"", "“Nightly backup” is DOWN.\nReason: success signal did not arrive on time, grace time passed.\n\nDescription: Backs up the orders database.\nNamespace: team-a\nTags: prod db\nPeriod: 1 day\nTotal Pings: 42\nLast Ping: Success, 10 minutes ago\n\nLast ping body:\nbackup done: 3 files\n\n" + phoneDetailsURL},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusCreated, `{"sid":"SM0123"}`)
			mustSend(t, whatsAppChannel(srv.URL, tc.down, tc.up), tc.msg, twilioSecrets)
			form := twilioForm(t, srv.only(t), "Messages.json")
			want := map[string]string{"From": "whatsapp:+15550001111", "To": "whatsapp:+15552223333"}
			if tc.wantSID != "" {
				want["ContentSid"], want["ContentVariables"] = tc.wantSID, tc.wantVars
				formExactly(t, form, want)
				return
			}
			want["Body"] = form.Get("Body")
			formExactly(t, form, want)
			if body := form.Get("Body"); !strings.HasPrefix(body, tc.wantBodyStart) || !strings.HasSuffix(body, phoneDetailsURL) {
				t.Errorf("Body %q, want it to start with %q and end with the link", body, tc.wantBodyStart)
			}
		})
	}
}

func TestWhatsAppVariableAndLength(t *testing.T) {
	if got := whatsAppVariable("Nightly\tbackup\n  of   orders"); got != "Nightly backup of orders" {
		t.Errorf("whatsAppVariable = %q", got)
	}
	m := downMessage()
	m.Check.Desc = strings.Repeat("a long description ", 200)
	m.Check.LastPingBody = []byte(strings.Repeat("log line\n", 200))
	body := whatsAppText(&m)
	if n := utf16Len(body); n > twilioBodyMax || !strings.HasSuffix(body, "…") {
		t.Errorf("free text of %d code units ending %q", n, body[len(body)-10:])
	}
	// A description that leaves room: the excerpt is shortened, the
	// link stays.
	m.Check.Desc = strings.Repeat("d", 900)
	body = whatsAppText(&m)
	if n := utf16Len(body); n > twilioBodyMax || !strings.Contains(body, "[truncated]") || !strings.HasSuffix(body, phoneDetailsURL) {
		t.Errorf("free text of %d code units: %q", n, body[len(body)-120:])
	}
}

func TestCall(t *testing.T) {
	srv := newRecorder(t, http.StatusCreated, `{"sid":"CA0123","status":"queued"}`)
	ch := callChannel(srv.URL)
	escalation := downMessage()
	escalation.Notice, escalation.Since = "escalation", fixedFlip.Add(-2*time.Hour)
	mustSend(t, ch, downMessage(), twilioSecrets)
	mustSend(t, ch, escalation, twilioSecrets)
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, want := range []string{
		"<Response><Say>Hello! A message from Vigil: “Nightly backup” is DOWN. Reason: success signal did not arrive on time, grace time passed.</Say></Response>",
		"<Response><Say>Hello! A message from Vigil: “Nightly backup” is still DOWN (for 2 hours). Reason: success signal did not arrive on time, grace time passed.</Say></Response>",
	} {
		formExactly(t, twilioForm(t, reqs[i], "Calls.json"), map[string]string{"From": "+15550001111", "To": "+15552223333", "Twiml": want})
	}
}

func TestCallNotForGoodNews(t *testing.T) {
	srv := newRecorder(t, http.StatusCreated, "")
	maintenance := downMessage()
	maintenance.Notice, maintenance.Held, maintenance.Reason = "maintenance-start", "nightly-patching", ""
	for _, m := range []Message{upMessage(), maintenance} {
		mustSend(t, callChannel(srv.URL), m, twilioSecrets)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d calls placed for an up and a maintenance notice", n)
	}
}

func TestCallTwiMLEscaping(t *testing.T) {
	m := downMessage()
	m.Check.Name = `Backup <db> & "logs"`
	m.Reason = "fail"
	want := "<Response><Say>Hello! A message from Vigil: “Backup &lt;db&gt; &amp; &#34;logs&#34;” is DOWN. Reason: received a failure signal.</Say></Response>"
	if got := callTwiML(&m); got != want {
		t.Errorf("callTwiML = %q, want %q", got, want)
	}
	// A long template text is cut short; the escaped TwiML stays within
	// Twilio's limit.
	m.Text = strings.Repeat(`<&"> `, 2000)
	got := callTwiML(&m)
	if n := utf8.RuneCountInString(got); n > twilioTwiMLMax || !strings.HasSuffix(got, "…</Say></Response>") {
		t.Errorf("TwiML of %d characters ending %q", n, got[len(got)-30:])
	}
}

func TestTwilioAccountSIDIsChecked(t *testing.T) {
	srv := newRecorder(t, http.StatusCreated, "")
	for _, sid := range []string{"AC0123/../../Calls", "AC0123456789abcdef0123456789abcdeg", "SK0123456789abcdef0123456789abcdef"} {
		err := send(t, smsChannel(srv.URL), downMessage(), map[string]string{"twilio/accountSID": sid, "twilio/authToken": twilioTestToken})
		if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "not a Twilio Account SID") {
			t.Errorf("SID %q: Send = %v, want a permanent error", sid, err)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent with a bad SID", n)
	}
}

func TestTwilioErrors(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ch       *v1.Channel
		secrets  map[string]string
		contains string
		perm     bool
	}{
		{"sms without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelSMS}), nil, "no sms settings", true},
		{"whatsapp without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelWhatsApp}), nil, "no whatsapp settings", true},
		{"call without settings", testChannel(v1.ChannelSpec{Kind: v1.ChannelCall}), nil, "no call settings", true},
		{"missing auth token", smsChannel(""), map[string]string{"twilio/accountSID": twilioTestSID}, `Secret "twilio" key "authToken"`, false},
		{"bad URL", smsChannel("ftp://twilio.example.com"), twilioSecrets, "not an absolute http", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel() // nothing leaves the test
			err := Send(ctx, Delivery{Channel: tc.ch, Message: downMessage(), Secret: secretMap(tc.secrets), Egress: loopbackEgress})
			if err == nil || IsPermanent(err) != tc.perm || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("Send = %v (permanent %v), want %q (permanent %v)", err, IsPermanent(err), tc.contains, tc.perm)
			}
		})
	}
}

// TestTwilioDefaultURL: a channel without a URL posts to Twilio's API. The
// context is over before the request starts, so nothing leaves the test;
// the error names where it was going, without the account SID.
func TestTwilioDefaultURL(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := Send(ctx, Delivery{Channel: callChannel(""), Message: downMessage(), Secret: secretMap(twilioSecrets)})
	if want := "call: POST https://api.twilio.com/2010-04-01/Accounts/[redacted]/Calls.json: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Send = %v, want an error starting %q", err, want)
	}
}

func TestTwilioSecretRefs(t *testing.T) {
	want := []v1.SecretKeyRef{{Name: "twilio", Key: "accountSID"}, {Name: "twilio", Key: "authToken"}}
	for _, ch := range []*v1.Channel{smsChannel(""), whatsAppChannel("", "", ""), callChannel("")} {
		k, _ := Lookup(ch.Spec.Kind)
		if got := k.SecretRefs(&ch.Spec); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
			t.Errorf("%s: SecretRefs = %v, want %v", ch.Spec.Kind, got, want)
		}
		if got := k.SecretRefs(&v1.ChannelSpec{Kind: ch.Spec.Kind}); got != nil {
			t.Errorf("%s without settings: SecretRefs = %v", ch.Spec.Kind, got)
		}
	}
}

func TestTwilioRateLimit(t *testing.T) {
	for _, ch := range []*v1.Channel{smsChannel(""), whatsAppChannel("", "", ""), callChannel("")} {
		t.Run(string(ch.Spec.Kind), func(t *testing.T) {
			expectRetryAfter429(t, func(base string) *v1.Channel {
				c := ch.DeepCopy()
				switch {
				case c.Spec.SMS != nil:
					c.Spec.SMS.URL = base
				case c.Spec.WhatsApp != nil:
					c.Spec.WhatsApp.URL = base
				default:
					c.Spec.Call.URL = base
				}
				return c
			}, twilioSecrets)
		})
	}
}

func TestTwilioEllipsizeUTF16(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello!", 5, "hell…"},
		{"ab🔥cd", 4, "ab…"}, // the emoji takes two units and does not fit
		{"ab🔥cd", 5, "ab🔥…"},
		{"🔥🔥🔥", 6, "🔥🔥🔥"},
	} {
		if got := ellipsizeUTF16(tc.s, tc.max); got != tc.want || utf16Len(got) > tc.max {
			t.Errorf("ellipsizeUTF16(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
	}
}

// expectRetryAfter429: a channel (pointed at base by channel) whose server
// answers 429 Too Many Requests with Retry-After returns a retryable
// StatusError that carries the delay.
func expectRetryAfter429(t *testing.T, channel func(base string) *v1.Channel, secrets map[string]string) {
	t.Helper()
	srv := newRecorder(t, http.StatusTooManyRequests, `{"code":20429,"message":"Too Many Requests","status":429}`)
	srv.header.Set("Retry-After", "17")
	err := send(t, channel(srv.URL), downMessage(), secrets)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.RetryAfter != 17*time.Second {
		t.Fatalf("Send = %v, want a 429 StatusError with RetryAfter 17s", err)
	}
	if IsPermanent(err) {
		t.Errorf("a 429 is permanent: %v", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
