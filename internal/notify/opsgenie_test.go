package notify

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

const ogAPIKey = "ogGenieKeySecret-0123456789abcdef"

func init() {
	addHTTPKind(httpKindCase{v1.ChannelOpsgenie, func(base string) *v1.Channel {
		return opsgenieChannel(&v1.OpsgenieChannel{URL: base})
	}, func(string) map[string]string { return map[string]string{"og/key": ogAPIKey} }}, ogAPIKey)
}

func opsgenieChannel(s *v1.OpsgenieChannel) *v1.Channel {
	s.APIKeySecretRef = ref("og", "key")
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelOpsgenie, Opsgenie: s})
}

// ogWireAlert is the Alert API v2's Create Alert body, as documented
// (https://docs.opsgenie.com/docs/alert-api#create-alert), with the fields
// Vigil sends.
type ogWireAlert struct {
	Message     string            `json:"message"`
	Alias       string            `json:"alias"`
	Description string            `json:"description"`
	Priority    string            `json:"priority"`
	Source      string            `json:"source"`
	Tags        []string          `json:"tags"`
	Entity      string            `json:"entity"`
	Details     map[string]string `json:"details"`
}

// ogWireClose is the Close Alert body (user, source, note), with the fields
// Vigil sends.
type ogWireClose struct {
	Source string `json:"source"`
	Note   string `json:"note"`
}

// pagingPlainDown is downMessage() as plain text.
const pagingPlainDown = "“Nightly backup” is DOWN.\n" +
	"Reason: success signal did not arrive on time, grace time passed.\n" +
	"\n" +
	"Description: Backs up the orders database.\n" +
	"Namespace: team-a\n" +
	"Tags: prod db\n" +
	"Period: 1 day\n" +
	"Total Pings: 42\n" +
	"Last Ping: Success, 10 minutes ago\n" +
	"\n" +
	"Last ping body:\n" +
	"backup done: 3 files\n" +
	"\n" +
	"https://vigil.example.com/checks/" + fixtureUUID

// validate applies the Create Alert limits.
func (a *ogWireAlert) validate(t *testing.T) {
	t.Helper()
	if a.Message == "" || utf16Len(a.Message) > 130 || utf16Len(a.Alias) > 512 ||
		utf16Len(a.Description) > 15000 || utf16Len(a.Entity) > 512 || utf16Len(a.Source) > 100 {
		t.Errorf("a field is over its limit: %+v", a)
	}
	if len(a.Tags) > 20 {
		t.Errorf("%d tags", len(a.Tags))
	}
	for _, tag := range a.Tags {
		if tag == "" || utf16Len(tag) > 50 {
			t.Errorf("tag %q", tag)
		}
	}
	total := 0
	for k, v := range a.Details {
		total += utf16Len(k) + utf16Len(v)
	}
	if total > 8000 {
		t.Errorf("details hold %d characters", total)
	}
	if !map[string]bool{"P1": true, "P2": true, "P3": true, "P4": true, "P5": true}[a.Priority] {
		t.Errorf("priority %q", a.Priority)
	}
}

func TestOpsgenie(t *testing.T) {
	srv := newRecorder(t, http.StatusAccepted, `{"result":"Request will be processed","took":0.302,"requestId":"43a29c5c-3dbf-4fa4-9c26-f4f71023e120"}`)
	ch := opsgenieChannel(&v1.OpsgenieChannel{URL: srv.URL, Priority: "P2"})
	secrets := map[string]string{"og/key": ogAPIKey + "\n"}
	test := downMessage()
	test.Test = true
	for _, m := range []Message{downMessage(), upMessage(), test} {
		mustSend(t, ch, m, secrets)
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for _, req := range reqs {
		if req.Method != http.MethodPost {
			t.Errorf("method %s", req.Method)
		}
		checkHeader(t, req.Header, "Authorization", "GenieKey "+ogAPIKey)
		checkHeader(t, req.Header, "Content-Type", "application/json")
		checkUserAgent(t, req.Header)
	}

	down := reqs[0]
	if down.Path != "/v2/alerts" || down.RawQuery != "" {
		t.Errorf("create went to %s?%s", down.Path, down.RawQuery)
	}
	var a ogWireAlert
	decodeStrict(t, down.Body, &a)
	a.validate(t)
	want := ogWireAlert{
		Message:     "Nightly backup is DOWN",
		Alias:       "vigil-" + fixtureUUID,
		Description: pagingPlainDown,
		Priority:    "P2",
		Source:      "Vigil",
		Tags:        []string{"prod", "db"},
		Entity:      "team-a/nightly-backup",
		Details: map[string]string{
			"Reason":         "success signal did not arrive on time, grace time passed",
			"Link":           "https://vigil.example.com/checks/" + fixtureUUID,
			"Description":    "Backs up the orders database.",
			"Namespace":      "team-a",
			"Tags":           "prod db",
			"Period":         "1 day",
			"Total Pings":    "42",
			"Last Ping":      "Success, 10 minutes ago",
			"Last Ping Body": "backup done: 3 files",
		},
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("create alert\n got %#v\nwant %#v", a, want)
	}

	up := reqs[1]
	if up.Path != "/v2/alerts/vigil-"+fixtureUUID+"/close" || up.RawQuery != "identifierType=alias" {
		t.Errorf("close went to %s?%s", up.Path, up.RawQuery)
	}
	var c ogWireClose
	decodeStrict(t, up.Body, &c)
	if c.Source != "Vigil" || !strings.HasPrefix(c.Note, "“Nightly backup” is UP.\n") ||
		!strings.Contains(c.Note, "\nLast Ping: Success, 10 minutes ago\n") ||
		!strings.HasSuffix(c.Note, "\nhttps://vigil.example.com/checks/"+fixtureUUID) {
		t.Errorf("close body %+v", c)
	}

	var tst ogWireAlert
	decodeStrict(t, reqs[2].Body, &tst)
	if reqs[2].Path != "/v2/alerts" || tst.Alias != "vigil-test-"+fixtureUUID || tst.Message != "[Test] Nightly backup is DOWN" ||
		!strings.HasPrefix(tst.Description, "[Test] “Nightly backup” is DOWN.\n") {
		t.Errorf("test alert to %s: %+v", reqs[2].Path, tst)
	}
}

// A re-alert and an escalation create the alert again, under the same
// alias: Opsgenie counts the repeat while the alert is open.
func TestOpsgenieNoticesRecreateTheAlert(t *testing.T) {
	srv := newRecorder(t, http.StatusAccepted, "")
	ch := opsgenieChannel(&v1.OpsgenieChannel{URL: srv.URL})
	for _, notice := range []monitor.Notice{monitor.NoticeRealert, monitor.NoticeEscalation} {
		m := downMessage()
		m.Notice, m.Since = notice, fixedFlip.Add(-2*time.Hour)
		mustSend(t, ch, m, map[string]string{"og/key": ogAPIKey})
	}
	for _, notice := range []monitor.Notice{monitor.NoticeFailure, monitor.NoticeMaintenanceStart, monitor.NoticeMaintenanceEnd} {
		m := downMessage()
		m.Notice, m.Held = notice, "nightly-window"
		mustSend(t, ch, m, map[string]string{"og/key": ogAPIKey})
	}
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2 (no failure or maintenance notices)", len(reqs))
	}
	for _, req := range reqs {
		var a ogWireAlert
		decodeStrict(t, req.Body, &a)
		if req.Path != "/v2/alerts" || a.Alias != "vigil-"+fixtureUUID || a.Message != "Nightly backup is still DOWN (for 2 hours)" || a.Priority != "P3" {
			t.Errorf("notice to %s: %+v", req.Path, a)
		}
	}
}

// TestOpsgenieBaseURL: the region picks the API base, and url replaces it
// (Jira Service Management's operations API takes the same paths). The
// context is over before the request starts, so nothing leaves the test;
// the error names where it was going.
func TestOpsgenieBaseURL(t *testing.T) {
	const jsm = "https://api.atlassian.com/jsm/ops/integration"
	for _, tc := range []struct {
		region, url string
		up          bool
		want        string // the error's start; "" for a permanent settings error
	}{
		{"", "", false, "POST https://api.opsgenie.com/v2/alerts: "},
		{"us", "", false, "POST https://api.opsgenie.com/v2/alerts: "},
		{"eu", "", false, "POST https://api.eu.opsgenie.com/v2/alerts: "},
		{"eu", "", true, "POST https://api.eu.opsgenie.com/v2/alerts/vigil-" + fixtureUUID + "/close: "},
		{"eu", jsm, false, "POST https://api.atlassian.com/jsm/ops/integration/v2/alerts: "},
		{"", jsm + "/", true, "POST https://api.atlassian.com/jsm/ops/integration/v2/alerts/vigil-" + fixtureUUID + "/close: "},
		{"ap", "", false, ""},
		{"", "ftp://opsgenie.example.com", false, ""},
	} {
		t.Run(tc.region+" "+tc.url, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			m := downMessage()
			if tc.up {
				m = upMessage()
			}
			err := Send(ctx, Delivery{Channel: opsgenieChannel(&v1.OpsgenieChannel{Region: tc.region, URL: tc.url}),
				Message: m, Secret: secretMap(map[string]string{"og/key": ogAPIKey})})
			switch {
			case err == nil:
				t.Fatal("Send succeeded")
			case tc.want == "":
				if !IsPermanent(err) {
					t.Errorf("Send = %v, want a permanent error", err)
				}
			case !strings.HasPrefix(err.Error(), "opsgenie: "+tc.want) || IsPermanent(err):
				t.Errorf("Send = %v, want a retryable error starting %q", err, "opsgenie: "+tc.want)
			}
		})
	}
}

func TestOpsgeniePriority(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "P3", true}, {"P1", "P1", true}, {"P2", "P2", true}, {"P3", "P3", true}, {"P4", "P4", true}, {"P5", "P5", true},
		{"p1", "", false}, {"P0", "", false}, {"P6", "", false}, {"critical", "", false},
	} {
		got, err := opsgeniePriority(tc.in)
		if got != tc.want || (err == nil) != tc.ok || (err != nil && !IsPermanent(err)) {
			t.Errorf("opsgeniePriority(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// Every field stays within the Alert API's limits, counted as Opsgenie
// counts characters, whatever the check holds.
func TestOpsgenieLimits(t *testing.T) {
	srv := newRecorder(t, http.StatusAccepted, "")
	m := downMessage()
	m.Check.Name = strings.Repeat("Sauvegarde \U0001F5C4\uFE0F ", 20)
	m.Check.Desc = strings.Repeat("très long ", 1000)
	m.Text = strings.Repeat("Call the DBA. ", 285)
	m.Check.LastPingBody = []byte(strings.Repeat("x", 5000))
	m.Check.Tags = nil
	for i := range 25 {
		m.Check.Tags = append(m.Check.Tags, fmt.Sprintf("tag%02d-%s", i, strings.Repeat("t", 60)))
	}
	m.Check.Tags = append([]string{"prod", "prod"}, m.Check.Tags...)
	mustSend(t, opsgenieChannel(&v1.OpsgenieChannel{URL: srv.URL}), m, map[string]string{"og/key": ogAPIKey})
	var a ogWireAlert
	decodeStrict(t, srv.only(t).Body, &a)
	a.validate(t)
	if n := utf16Len(a.Message); n < 129 || !strings.HasSuffix(a.Message, "…") || !strings.HasPrefix(a.Message, "Sauvegarde \U0001F5C4\uFE0F Sauvegarde") {
		t.Errorf("message %q (%d characters)", a.Message, utf16Len(a.Message))
	}
	if len(a.Tags) != 20 || a.Tags[0] != "prod" || a.Tags[1] != "tag00-"+strings.Repeat("t", 43)+"…" {
		t.Errorf("tags %q", a.Tags)
	}
	// The reason, the text and the link come first and whole; the
	// description is cut to what is left; the rest does not fit.
	d := a.Details
	if d["Reason"] != "success signal did not arrive on time, grace time passed" || d["Message"] != m.Text ||
		d["Link"] != m.Check.DetailsURL || !strings.HasSuffix(d["Description"], "…") {
		t.Errorf("details %q", d)
	}
	if _, ok := d["Last Ping Body"]; ok {
		t.Error("the body excerpt should not fit")
	}
}

func TestOpsgenieDetailsBudget(t *testing.T) {
	long := strings.Repeat("y", 9000)
	for _, tc := range []struct {
		name   string
		fields []pagingField
		want   map[string]string
	}{
		{"all fit", []pagingField{{Key: "A", Value: "1"}, {Key: "B", Value: "2"}}, map[string]string{"A": "1", "B": "2"}},
		{"the one reaching the limit is cut, the rest dropped",
			[]pagingField{{Key: "A", Value: long}, {Key: "B", Value: "2"}},
			map[string]string{"A": strings.Repeat("y", 7998) + "…"}},
		{"a whole value that does not fit is left out",
			[]pagingField{{Key: "A", Value: strings.Repeat("y", 7990)}, {Key: "Link", Value: "https://example.com/x", Whole: true}, {Key: "B", Value: "2"}},
			map[string]string{"A": strings.Repeat("y", 7990), "B": "2"}},
		{"the first of two equal keys wins", []pagingField{{Key: "A", Value: "1"}, {Key: "A", Value: "2"}}, map[string]string{"A": "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := opsgenieDetails(tc.fields); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("opsgenieDetails = %.80q, want %.80q", got, tc.want)
			}
		})
	}
}

func TestOpsgenieCharacterCounting(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven ch…"},
		{"ééééééééééé", 10, "ééééééééé…"},                                         // two bytes, one character each
		{strings.Repeat("\U0001F5C4\uFE0F", 5), 6, "\U0001F5C4\uFE0F\U0001F5C4…"}, // U+1F5C4 counts twice, U+FE0F once
		{"abc", 0, ""},
	} {
		if got := ellipsizeUTF16(tc.in, tc.max); got != tc.want || utf16Len(got) > tc.max {
			t.Errorf("ellipsizeUTF16(%q, %d) = %q (%d), want %q", tc.in, tc.max, got, utf16Len(got), tc.want)
		}
	}
	if n := utf16Len("a🗄é"); n != 4 {
		t.Errorf("pagingLen = %d, want 4", n)
	}
}

// A check without a UUID gets an alias from its namespace and name, whose
// slash is escaped in the close request's path.
func TestOpsgenieCloseEscapesTheAlias(t *testing.T) {
	var uri string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		uri = r.RequestURI
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	m := upMessage()
	m.Check.UUID = ""
	mustSend(t, opsgenieChannel(&v1.OpsgenieChannel{URL: srv.URL + "/base"}), m, map[string]string{"og/key": ogAPIKey})
	if want := "/base/v2/alerts/vigil-team-a%2Fnightly-backup/close?identifierType=alias"; uri != want {
		t.Errorf("request URI %q, want %q", uri, want)
	}
}

func TestOpsgenieRateLimit(t *testing.T) {
	srv := newRecorder(t, http.StatusTooManyRequests, `{"message":"You are making too many requests!","took":0.0,"requestId":"x"}`)
	srv.header.Set("Retry-After", "30")
	err := send(t, opsgenieChannel(&v1.OpsgenieChannel{URL: srv.URL}), downMessage(), map[string]string{"og/key": ogAPIKey})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.RetryAfter != 30*time.Second || IsPermanent(err) {
		t.Errorf("Send = %v (%+v), want a retryable 429 with a 30 s Retry-After", err, se)
	}
}

func TestOpsgenieSettings(t *testing.T) {
	err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelOpsgenie}), downMessage(), nil)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "the channel has no opsgenie settings") {
		t.Errorf("Send without settings = %v", err)
	}
	err = send(t, opsgenieChannel(&v1.OpsgenieChannel{URL: "https://og.example.com"}), downMessage(), map[string]string{"og/key": "a\nb"})
	if err == nil || !IsPermanent(err) || strings.Contains(err.Error(), "a\nb") {
		t.Errorf("Send with a key holding a newline = %v", err)
	}
	k, _ := Lookup(v1.ChannelOpsgenie)
	spec := opsgenieChannel(&v1.OpsgenieChannel{}).Spec
	if got := k.SecretRefs(&spec); !reflect.DeepEqual(got, []v1.SecretKeyRef{ref("og", "key")}) {
		t.Errorf("SecretRefs = %v", got)
	}
	if got := k.SecretRefs(&v1.ChannelSpec{Kind: v1.ChannelOpsgenie}); got != nil {
		t.Errorf("SecretRefs without settings = %v", got)
	}
	if _, ok := k.(incidentTracker); !ok {
		t.Error("opsgenie is not an incident tracker")
	}
}
