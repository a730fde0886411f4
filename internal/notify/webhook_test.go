package notify

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

// allVariables uses every webhook variable once.
const allVariables = `code=$CODE status=$STATUS now=$NOW name=$NAME name_json=$NAME_JSON slug=$SLUG desc=$DESC ` +
	`tags=$TAGS tag1=$TAG1 tag2=$TAG2 ping_url=$PING_URL exit=$EXITSTATUS json=$JSON body=$BODY body_json=$BODY_JSON`

func TestWebhookBodyExpandsEveryVariable(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	m := downMessage()
	m.Check.Name = `Nightly "backup"`
	exit := 3
	m.Check.ExitStatus = &exit
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{
		Down: &v1.WebhookRequest{URL: srv.URL + "/hook", Method: "POST", Body: allVariables},
	}})
	mustSend(t, ch, m, nil)

	req := srv.only(t)
	if req.Method != http.MethodPost || req.Path != "/hook" {
		t.Errorf("request %s %s, want POST /hook", req.Method, req.Path)
	}
	checkUserAgent(t, req.Header)
	jsonDoc := string(m.checkJSON())
	want := `code=` + fixtureUUID + ` status=down now=2024-05-01T12:00:00+00:00 name=Nightly "backup" ` +
		`name_json="Nightly \"backup\"" slug=nightly-backup desc=Backs up the orders database. ` +
		`tags=prod db tag1=prod tag2=db ping_url=https://vigil.example.com/ping/` + fixtureUUID +
		` exit=3 json=` + jsonDoc + ` body=backup done: 3 files` + "\n" + ` body_json="backup done: 3 files\n"`
	if got := string(req.Body); got != want {
		t.Errorf("body:\n got %s\nwant %s", got, want)
	}

	// $JSON is a document with the reference's field names.
	var doc struct {
		Name     string  `json:"name"`
		Slug     string  `json:"slug"`
		Tags     string  `json:"tags"`
		Desc     string  `json:"desc"`
		Grace    int64   `json:"grace"`
		NPings   int64   `json:"n_pings"`
		Status   string  `json:"status"`
		LastPing *string `json:"last_ping"`
		UUID     string  `json:"uuid"`
		PingURL  string  `json:"ping_url"`
		Timeout  int64   `json:"timeout"`
	}
	decodeStrict(t, []byte(jsonDoc), &doc)
	if doc.Name != m.Check.Name || doc.Tags != "prod db" || doc.Grace != 3600 || doc.Timeout != 86400 ||
		doc.NPings != 42 || doc.Status != "down" || doc.LastPing == nil || *doc.LastPing != "2024-05-01T12:00:00+00:00" ||
		doc.UUID != fixtureUUID {
		t.Errorf("$JSON = %s", jsonDoc)
	}
}

func TestWebhookUpRequestAndDefaults(t *testing.T) {
	srv := newRecorder(t, http.StatusNoContent, "")
	m := upMessage()
	m.Check.LastPingBody = nil
	m.Check.JSON = []byte(`{"from":"api"}`)
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{
		Down: &v1.WebhookRequest{URL: srv.URL + "/down"},
		Up:   &v1.WebhookRequest{URL: srv.URL + "/up", Method: "PUT", Body: `{"s":"$STATUS","c":$JSON,"b":$BODY_JSON,"x":$EXITSTATUS}`},
	}})
	mustSend(t, ch, m, nil)
	req := srv.only(t)
	if req.Method != http.MethodPut || req.Path != "/up" {
		t.Errorf("request %s %s, want PUT /up", req.Method, req.Path)
	}
	if got, want := string(req.Body), `{"s":"up","c":{"from":"api"},"b":"","x":-1}`; got != want {
		t.Errorf("body %s, want %s", got, want)
	}
	if ct := req.Header.Get("Content-Type"); ct != "" {
		t.Errorf("Content-Type %q set without being configured", ct)
	}
}

func TestWebhookSkipsEventWithoutRequest(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	for _, tc := range []struct {
		name string
		hook v1.WebhookChannel
		msg  Message
	}{
		{"no up request", v1.WebhookChannel{Down: &v1.WebhookRequest{URL: srv.URL}}, upMessage()},
		{"no down request", v1.WebhookChannel{Up: &v1.WebhookRequest{URL: srv.URL}}, downMessage()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook := tc.hook
			if err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &hook}), tc.msg, nil); err != nil {
				t.Fatalf("Send = %v, want nil", err)
			}
		})
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("server received %d requests, want none", n)
	}
}

func TestWebhookURLVariablesAreEncoded(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	m := downMessage()
	m.Check.Name = "a b/c&d?é"
	m.Check.Tags = []string{"x&y", "z"}
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{
		Down: &v1.WebhookRequest{URL: srv.URL + "/$SLUG/$CODE?name=$NAME&tags=$TAGS&t1=$TAG1&now=$NOW&s=$STATUS&body=$BODY&j=$NAME_JSON", Method: "GET", Body: "ignored for GET"},
	}})
	mustSend(t, ch, m, nil)
	req := srv.only(t)
	if req.Method != http.MethodGet || len(req.Body) != 0 {
		t.Errorf("request %s with body %q, want GET without body", req.Method, req.Body)
	}
	if req.Path != "/nightly-backup/"+fixtureUUID {
		t.Errorf("path %q", req.Path)
	}
	wantQuery := "name=a%20b/c%26d%3F%C3%A9&tags=x%26y%20z&t1=x%26y&now=2024-05-01T12%3A00%3A00%2B00%3A00&s=down&body=$BODY&j=%22a%20b/c%26d%3F%5Cu00e9%22"
	if req.RawQuery != wantQuery {
		t.Errorf("query:\n got %s\nwant %s", req.RawQuery, wantQuery)
	}
	q, _ := url.ParseQuery(req.RawQuery)
	if q.Get("name") != m.Check.Name || q.Get("tags") != "x&y z" || q.Get("now") != "2024-05-01T12:00:00+00:00" {
		t.Errorf("decoded query %v", q)
	}
}

func TestWebhookHeaders(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	m := downMessage()
	m.Check.Name = "Café ☕\r\nX-Injected: 1"
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{
		Down: &v1.WebhookRequest{
			URL:     srv.URL,
			Headers: map[string]string{"X-Check": "$NAME is $STATUS", "Content-Type": "application/json", "X-Body": "$BODY"},
			HeaderSecretRefs: map[string]v1.SecretKeyRef{
				"Authorization": ref("hook", "auth"),
				"X-Api-Key":     ref("hook", "key"),
			},
		},
	}})
	mustSend(t, ch, m, map[string]string{"hook/auth": "Bearer s3cr3t-token\n", "hook/key": "k-123456"})
	req := srv.only(t)
	// Latin-1 bytes for é, a character reference for ☕, no line breaks.
	checkHeader(t, req.Header, "X-Check", "Caf\xe9 &#9749;  X-Injected: 1 is down")
	checkHeader(t, req.Header, "X-Injected", "")
	checkHeader(t, req.Header, "X-Body", "$BODY")
	checkHeader(t, req.Header, "Content-Type", "application/json")
	checkHeader(t, req.Header, "Authorization", "Bearer s3cr3t-token")
	checkHeader(t, req.Header, "X-Api-Key", "k-123456")
	checkUserAgent(t, req.Header)
}

func TestWebhookURLFromSecret(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{
		Down: &v1.WebhookRequest{URLSecretRef: &v1.SecretKeyRef{Name: "hook", Key: "url"}, Body: "$NAME"},
	}})
	mustSend(t, ch, downMessage(), map[string]string{"hook/url": srv.URL + "/t/$SLUG?token=abc123def\n"})
	req := srv.only(t)
	if req.Path != "/t/nightly-backup" || req.RawQuery != "token=abc123def" || string(req.Body) != "Nightly backup" {
		t.Errorf("got %s?%s %q", req.Path, req.RawQuery, req.Body)
	}
}

func TestWebhookConfigErrorsArePermanent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		req     v1.WebhookRequest
		secrets map[string]string
	}{
		{"not a URL", v1.WebhookRequest{URL: "ftp://example.com/x"}, nil},
		{"relative URL", v1.WebhookRequest{URL: "/x"}, nil},
		{"bad header name", v1.WebhookRequest{URL: "http://127.0.0.1:1", Headers: map[string]string{"Bad Name": "x"}}, nil},
		{"secret header with newline", v1.WebhookRequest{URL: "http://127.0.0.1:1",
			HeaderSecretRefs: map[string]v1.SecretKeyRef{"X-A": ref("h", "a")}}, map[string]string{"h/a": "a\nb"}},
		{"secret URL not a URL", v1.WebhookRequest{URLSecretRef: &v1.SecretKeyRef{Name: "h", Key: "u"}}, map[string]string{"h/u": "not a url"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &r}}), downMessage(), tc.secrets)
			if err == nil || !IsPermanent(err) {
				t.Fatalf("Send = %v, want a permanent error", err)
			}
			if strings.Contains(err.Error(), "not a url") {
				t.Errorf("error repeats the Secret's URL: %v", err)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	m := downMessage()
	m.Check.Tags = strings.Fields("t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12")
	m.Check.Name = "$STATUS $TAG1"
	for _, tc := range []struct{ tmpl, want string }{
		{"$TAG12/$TAG1/$TAG13/$TAG0/$TAG", "t12/t1/$TAG13/$TAG0/$TAG"},
		{"$NAME", "$STATUS $TAG1"}, // values are not expanded again
		{"$$NAME$", "$$STATUS $TAG1$"},
		{"$NAMEX $UNKNOWN $name", "$STATUS $TAG1X $UNKNOWN $name"},
		{"$BODY_JSONx", `"backup done: 3 files\n"x`},
		{"no variables", "no variables"},
	} {
		if got, err := m.expand(tc.tmpl, inBody, maxWebhookBody); got != tc.want || err != nil {
			t.Errorf("expand(%q) = %q, %v, want %q", tc.tmpl, got, err, tc.want)
		}
	}
}

// TestExpandBounds: an expansion stops at its bound, with what it wrote
// so far and an error that says which bound.
func TestExpandBounds(t *testing.T) {
	m := downMessage()
	m.Check.LastPingBody = []byte(strings.Repeat("\x01", 10_000)) // control bytes: $BODY_JSON six times as long
	manyVars := strings.Repeat("$SLUG ", maxTemplateVariables+1)
	for _, tc := range []struct {
		name, tmpl string
		where      varContext
		limit      int
		want       string // the output, or its prefix when cut
		err        string // "" for none
	}{
		{"within the bound", "$SLUG/$STATUS", inBody, 100, "nightly-backup/down", ""},
		{"exactly the bound", "$SLUG", inBody, len("nightly-backup"), "nightly-backup", ""},
		{"a value past the bound is cut", "x $SLUG", inBody, 5, "x nig", "more than 5 bytes"},
		{"the text after a value past the bound", "$STATUS and then some", inBody, 8, "down and", "more than 8 bytes"},
		{"literal text past the bound", "0123456789", inBody, 4, "0123", "more than 4 bytes"},
		{"the hostile body: $BODY_JSON a thousand times", strings.Repeat("$BODY_JSON", 1000), inBody, maxWebhookBody, `"\u0001`, "more than 1048576 bytes"},
		{"more variables than allowed", manyVars, inBody, maxWebhookBody, "nightly-backup nightly-backup ", "more than 1000 $-variables"},
		{"$ signs that are not variables are text", strings.Repeat("$x", maxTemplateVariables+1), inBody, maxWebhookBody, strings.Repeat("$x", maxTemplateVariables+1), ""},
		{"a header's bound counts its encoding", "é $SLUG", inHeader, 3, "\xe9 n", "more than 3 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := m.expand(tc.tmpl, tc.where, tc.limit)
			if len(got) > tc.limit {
				t.Errorf("expanded to %d bytes, past the bound of %d", len(got), tc.limit)
			}
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Errorf("expand = %.80q, %v; want %.80q", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, errExpansion) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("error %v, want one wrapping errExpansion that says %q", err, tc.err)
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("expand = %.80q, want it to start %.80q", got, tc.want)
			}
		})
	}
}

// TestWebhookExpansionBounds: a webhook whose URL, body or headers expand
// past their bound fails for good, saying which and how much, and sends
// nothing.
func TestWebhookExpansionBounds(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	m := downMessage()
	m.Check.LastPingBody = []byte(strings.Repeat("\x01", 10_000))
	for _, tc := range []struct {
		name string
		req  v1.WebhookRequest
		want string
	}{
		{"body", v1.WebhookRequest{URL: srv.URL, Body: strings.Repeat("$BODY_JSON", 3000)}, "the webhook body: the template expands past its bound: it expands to more than 1048576 bytes"},
		{"URL", v1.WebhookRequest{URL: srv.URL + "/" + strings.Repeat("$DESC", 400)}, "the webhook URL: the template expands past its bound: it expands to more than 8192 bytes"},
		{"headers together", v1.WebhookRequest{URL: srv.URL, Headers: map[string]string{
			"X-A": strings.Repeat("a", 4096), "X-B": strings.Repeat("b", 4096), "X-C": "c"}}, "the webhook headers, at X-C"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.req
			err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: &r}}), m, nil)
			if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Send = %v, want a permanent error that says %q", err, tc.want)
			}
		})
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent; want none", n)
	}
}

func TestCheckJSONForCronCheck(t *testing.T) {
	m := upMessage()
	m.Check.Schedule, m.Check.Timeout = "0 3 * * *", 0
	var doc map[string]any
	if err := json.Unmarshal(m.checkJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc["schedule"] != "0 3 * * *" || doc["tz"] != "UTC" || doc["status"] != "up" {
		t.Errorf("cron $JSON = %v", doc)
	}
	if _, ok := doc["timeout"]; ok {
		t.Errorf("cron $JSON has a timeout: %v", doc)
	}
}

// TestExpandStory: Vigil's variables tell a re-alert, an up and a reason
// in the alert policy's words, in the body and encoded in the URL.
func TestExpandStory(t *testing.T) {
	down := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	realert := Message{Check: CheckInfo{Object: "backup"}, Time: down.Add(2 * time.Hour), Since: down,
		Notice: monitor.NoticeRealert, Reason: "runtime", Detail: "ran longer than 2 hours"}
	up := Message{Check: CheckInfo{Object: "backup"}, Up: true, Time: down.Add(90 * time.Minute), Since: down, Reason: "fail"}
	for _, tc := range []struct {
		m     Message
		where varContext
		tmpl  string
		want  string
	}{
		{realert, inBody, "$SUMMARY|$REASON|$REASON_TEXT|$NOTICE", "backup is still DOWN (for 2 hours)|runtime|the run ran longer than 2 hours|realert"},
		{up, inBody, "$SUMMARY|$REASON|$REASON_TEXT|$NOTICE", "backup is UP (was down for 1 hour 30 minutes)|||"},
		{realert, inURL, "/alert?s=$SUMMARY&r=$REASON", "/alert?s=backup%20is%20still%20DOWN%20%28for%202%20hours%29&r=runtime"},
	} {
		if got, err := tc.m.expand(tc.tmpl, tc.where, maxWebhookBody); got != tc.want || err != nil {
			t.Errorf("expand(%q) = %q, %v, want %q", tc.tmpl, got, err, tc.want)
		}
	}
}

// BenchmarkHostileWebhookBody expands the body of #46's probe: 300 ×
// $BODY_JSON of a fail ping's 10 kB of control bytes (18,000,600 bytes
// before the bound). Its B/op is what one delivery of it builds.
func BenchmarkHostileWebhookBody(b *testing.B) {
	m := downMessage()
	m.Check.LastPingBody = []byte(strings.Repeat("\x01", 10_000))
	tmpl := strings.Repeat("$BODY_JSON", 300) // the 3,000 characters of the probe
	b.ReportAllocs()
	for b.Loop() {
		out, err := m.expand(tmpl, inBody, maxWebhookBody)
		if err == nil || len(out) > maxWebhookBody {
			b.Fatalf("%d bytes, %v", len(out), err)
		}
	}
}
