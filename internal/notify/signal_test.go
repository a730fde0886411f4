package notify

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

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
