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

// ptIntegration is the integration id in the endpoint URL, the credential.
const ptIntegration = "int_ptSecretIntegration7Q2"

func init() {
	addHTTPKind(httpKindCase{v1.ChannelPagerTree, func(string) *v1.Channel { return pagerTreeChannel("") },
		func(base string) map[string]string {
			return map[string]string{"pt/url": base + "/integration/" + ptIntegration}
		}}, ptIntegration)
}

func pagerTreeChannel(urgency string) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelPagerTree, PagerTree: &v1.PagerTreeChannel{URLSecretRef: ref("pt", "url"), Urgency: urgency}})
}

// ptWireEvent is the Webhook integration's body as PagerTree documents it
// (https://pagertree.com/docs/integration-guides/webhook), with Urgency,
// which the integration reads too.
type ptWireEvent struct {
	EventType   string            `json:"event_type"`
	ID          string            `json:"Id"`
	Title       string            `json:"Title"`
	Description string            `json:"Description"`
	Urgency     string            `json:"Urgency"`
	Tags        []string          `json:"Tags"`
	Meta        map[string]string `json:"Meta"`
}

// ptHTMLDown is downMessage() in the HTML PagerTree renders.
const ptHTMLDown = `<b><a href="https://vigil.example.com/checks/` + fixtureUUID + `">“Nightly backup” is DOWN.</a></b>` +
	`<br>Reason: success signal did not arrive on time, grace time passed.<br>` +
	`<br><b>Description:</b> Backs up the orders database.` +
	`<br><b>Namespace:</b> team-a` +
	`<br><b>Tags:</b> <code>prod db</code>` +
	`<br><b>Period:</b> 1 day` +
	`<br><b>Total Pings:</b> 42` +
	`<br><b>Last Ping:</b> Success, 10 minutes ago` +
	`<br><br><b>Last ping body:</b><br><pre>backup done: 3 files</pre>`

func TestPagerTree(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	secrets := map[string]string{"pt/url": srv.URL + "/integration/" + ptIntegration}
	test := downMessage()
	test.Test = true
	for _, m := range []Message{downMessage(), upMessage(), test} {
		mustSend(t, pagerTreeChannel("critical"), m, secrets)
	}
	reqs := srv.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	events := make([]ptWireEvent, len(reqs))
	for i, req := range reqs {
		if req.Method != http.MethodPost || req.Path != "/integration/"+ptIntegration || req.RawQuery != "" {
			t.Errorf("request %s %s?%s", req.Method, req.Path, req.RawQuery)
		}
		checkHeader(t, req.Header, "Content-Type", "application/json")
		checkHeader(t, req.Header, "Authorization", "")
		checkUserAgent(t, req.Header)
		decodeStrict(t, req.Body, &events[i])
		if events[i].Title == "" || events[i].Description == "" || events[i].ID == "" {
			t.Errorf("Id, Title and Description must not be empty: %+v", events[i])
		}
	}
	wantMeta := map[string]string{
		"Reason":         "success signal did not arrive on time, grace time passed",
		"Link":           "https://vigil.example.com/checks/" + fixtureUUID,
		"Description":    "Backs up the orders database.",
		"Namespace":      "team-a",
		"Tags":           "prod db",
		"Period":         "1 day",
		"Total Pings":    "42",
		"Last Ping":      "Success, 10 minutes ago",
		"Last Ping Body": "backup done: 3 files",
	}
	want := ptWireEvent{
		EventType:   "create",
		ID:          "vigil-" + fixtureUUID,
		Title:       "Nightly backup is DOWN",
		Description: ptHTMLDown,
		Urgency:     "critical",
		Tags:        []string{"prod", "db"},
		Meta:        wantMeta,
	}
	if !reflect.DeepEqual(events[0], want) {
		t.Errorf("create\n got %#v\nwant %#v", events[0], want)
	}
	// The resolve names the same Id.
	r := events[1]
	if r.EventType != "resolve" || r.ID != want.ID || r.Title != "Nightly backup is UP" || r.Urgency != "critical" ||
		!strings.HasPrefix(r.Description, `<b><a href="https://vigil.example.com/checks/`+fixtureUUID+`">“Nightly backup” is UP.</a></b><br>`) {
		t.Errorf("resolve %#v", r)
	}
	if tst := events[2]; tst.EventType != "create" || tst.ID != "vigil-test-"+fixtureUUID || tst.Title != "[Test] Nightly backup is DOWN" {
		t.Errorf("test event %#v", tst)
	}
}

// The description is HTML: whatever the check holds is escaped.
func TestPagerTreeEscapesHTML(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	m := downMessage()
	m.Check.Name = `<script>alert("x")</script>`
	m.Check.Tags = nil
	m.Check.LastPingBody = []byte("a < b && c")
	mustSend(t, pagerTreeChannel(""), m, map[string]string{"pt/url": srv.URL + "/integration/" + ptIntegration})
	var ev ptWireEvent
	decodeStrict(t, srv.only(t).Body, &ev)
	if strings.Contains(ev.Description, "<script>") || !strings.Contains(ev.Description, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") ||
		!strings.Contains(ev.Description, "<pre>a &lt; b &amp;&amp; c</pre>") {
		t.Errorf("description %q", ev.Description)
	}
	// The title is plain text, and a check without tags sends an empty list.
	if ev.Title != `<script>alert("x")</script> is DOWN` || ev.Tags == nil || len(ev.Tags) != 0 || ev.Urgency != "high" {
		t.Errorf("title %q tags %#v urgency %q", ev.Title, ev.Tags, ev.Urgency)
	}
}

func TestPagerTreeUrgency(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"", "high", true}, {"low", "low", true}, {"medium", "medium", true}, {"high", "high", true}, {"critical", "critical", true},
		{"silent", "", false}, {"HIGH", "", false}, {"urgent", "", false},
	} {
		got, err := pagerTreeUrgency(tc.in)
		if got != tc.want || (err == nil) != tc.ok || (err != nil && !IsPermanent(err)) {
			t.Errorf("pagerTreeUrgency(%q) = %q, %v; want %q, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	// An unknown urgency fails before anything is sent.
	srv := newRecorder(t, http.StatusOK, "")
	err := send(t, pagerTreeChannel("urgent"), downMessage(), map[string]string{"pt/url": srv.URL + "/integration/" + ptIntegration})
	if err == nil || !IsPermanent(err) || len(srv.requests()) != 0 {
		t.Errorf("Send with urgency urgent = %v, %d requests", err, len(srv.requests()))
	}
}

func TestPagerTreeRateLimit(t *testing.T) {
	srv := newRecorder(t, http.StatusTooManyRequests, "")
	srv.header.Set("Retry-After", "60")
	err := send(t, pagerTreeChannel(""), downMessage(), map[string]string{"pt/url": srv.URL + "/integration/" + ptIntegration})
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.RetryAfter != time.Minute || IsPermanent(err) {
		t.Errorf("Send = %v (%+v), want a retryable 429 with a 60 s Retry-After", err, se)
	}
	if err != nil && strings.Contains(err.Error(), ptIntegration) {
		t.Errorf("error %v shows the integration id", err)
	}
}

func TestPagerTreeSettings(t *testing.T) {
	err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelPagerTree}), downMessage(), nil)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "the channel has no pagertree settings") {
		t.Errorf("Send without settings = %v", err)
	}
	err = send(t, pagerTreeChannel(""), downMessage(), map[string]string{"pt/url": "api.pagertree.com/integration/" + ptIntegration})
	if err == nil || !IsPermanent(err) || strings.Contains(err.Error(), ptIntegration) {
		t.Errorf("Send to a URL without a scheme = %v", err)
	}
	k, _ := Lookup(v1.ChannelPagerTree)
	spec := pagerTreeChannel("").Spec
	if got := k.SecretRefs(&spec); !reflect.DeepEqual(got, []v1.SecretKeyRef{ref("pt", "url")}) {
		t.Errorf("SecretRefs = %v", got)
	}
	if got := k.SecretRefs(&v1.ChannelSpec{Kind: v1.ChannelPagerTree}); got != nil {
		t.Errorf("SecretRefs without settings = %v", got)
	}
	if _, ok := k.(incidentTracker); !ok {
		t.Error("pagertree is not an incident tracker")
	}
}

// An integration that requires its token gets it in the pagertree-token
// header, from the Secret, and never in an error.
func TestPagerTreeToken(t *testing.T) {
	const token = "pagerTreeTokenSecret4242"
	srv := newRecorder(t, http.StatusOK, "")
	ch := pagerTreeChannel("")
	ch.Spec.PagerTree.TokenSecretRef = &v1.SecretKeyRef{Name: "pt", Key: "token"}
	secrets := map[string]string{"pt/url": srv.URL + "/integration/" + ptIntegration, "pt/token": token + "\n"}
	mustSend(t, ch, downMessage(), secrets)
	checkHeader(t, srv.only(t).Header, "pagertree-token", token)
	k, _ := Lookup(v1.ChannelPagerTree)
	if refs := k.SecretRefs(&ch.Spec); len(refs) != 2 || refs[1].Key != "token" {
		t.Errorf("SecretRefs = %v", refs)
	}
	srv.status, srv.body = http.StatusUnauthorized, "bad token "+token
	if err := send(t, ch, downMessage(), secrets); err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("Send = %v", err)
	}
}
