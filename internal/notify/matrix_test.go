package notify

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

const matrixToken = "syt_bWF0cml4_matrixAccessTokenSecret99"

func init() {
	addHTTPKind(httpKindCase{v1.ChannelMatrix, matrixChannel, matrixSecrets}, matrixToken)
}

func matrixChannel(base string) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelMatrix, Matrix: &v1.MatrixChannel{
		Homeserver: base, Room: "!abcDEF123:example.org", AccessTokenSecretRef: ref("matrix", "token")}})
}

func matrixSecrets(string) map[string]string { return map[string]string{"matrix/token": matrixToken} }

// An m.room.message event's content as Vigil sends it.
type matrixWireMessage struct {
	MsgType       string         `json:"msgtype"`
	Body          string         `json:"body"`
	Format        string         `json:"format"`
	FormattedBody string         `json:"formatted_body"`
	Mentions      map[string]any `json:"m.mentions"`
}

var matrixSendPath = regexp.MustCompile(`^/_matrix/client/v3/rooms/!abcDEF123:example\.org/send/m\.room\.message/(vigil-[0-9a-f]{32})$`)

func TestMatrix(t *testing.T) {
	details := "https://vigil.example.com/checks/" + fixtureUUID
	plainFacts := "\n\nDescription: Backs up the orders database.\nNamespace: team-a\nTags: prod db\nPeriod: 1 day\n" +
		"Total Pings: 42\nLast Ping: Success, 10 minutes ago\n\nLast ping body:\nbackup done: 3 files\n\n" + details
	htmlFacts := "<br><br><b>Description:</b> Backs up the orders database.<br><b>Namespace:</b> team-a" +
		"<br><b>Tags:</b> <code>prod db</code><br><b>Period:</b> 1 day<br><b>Total Pings:</b> 42" +
		"<br><b>Last Ping:</b> Success, 10 minutes ago<br><br><b>Last ping body:</b><br><pre>backup done: 3 files</pre>"
	reason := "Reason: success signal did not arrive on time, grace time passed."
	for _, tc := range []struct {
		name, body, formatted string
		msg                   Message
	}{
		{"down", "“Nightly backup” is DOWN.\n" + reason + plainFacts,
			`<b><a href="` + details + `">“Nightly backup” is DOWN.</a></b><br>` + reason + htmlFacts, downMessage()},
		{"up", "“Nightly backup” is UP." + plainFacts,
			`<b><a href="` + details + `">“Nightly backup” is UP.</a></b>` + htmlFacts, upMessage()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusOK, `{"event_id":"$abc"}`)
			mustSend(t, matrixChannel(srv.URL), tc.msg, matrixSecrets(srv.URL))
			req := srv.only(t)
			if req.Method != http.MethodPut || !matrixSendPath.MatchString(req.Path) || req.RawQuery != "" {
				t.Errorf("request %s %s?%s", req.Method, req.Path, req.RawQuery)
			}
			checkHeader(t, req.Header, "Authorization", "Bearer "+matrixToken)
			checkHeader(t, req.Header, "Content-Type", "application/json")
			checkUserAgent(t, req.Header)
			var msg matrixWireMessage
			decodeStrict(t, req.Body, &msg)
			if msg.MsgType != "m.text" || msg.Format != "org.matrix.custom.html" || msg.Mentions == nil || len(msg.Mentions) != 0 {
				t.Errorf("msgtype %q format %q m.mentions %v", msg.MsgType, msg.Format, msg.Mentions)
			}
			if msg.Body != tc.body {
				t.Errorf("body:\n%s\nwant:\n%s", msg.Body, tc.body)
			}
			if msg.FormattedBody != tc.formatted {
				t.Errorf("formatted_body:\n%s\nwant:\n%s", msg.FormattedBody, tc.formatted)
			}
		})
	}
}

// The transaction id is the same for every attempt at one notification,
// and differs between notifications.
func TestMatrixTransactionIDs(t *testing.T) {
	txn := func(ch *v1.Channel, m Message) string {
		t.Helper()
		srv := newRecorder(t, http.StatusOK, `{"event_id":"$abc"}`)
		ch.Spec.Matrix.Homeserver = srv.URL
		mustSend(t, ch, m, matrixSecrets(srv.URL))
		match := matrixSendPath.FindStringSubmatch(srv.only(t).Path)
		if match == nil {
			t.Fatalf("path %s", srv.only(t).Path)
		}
		return match[1]
	}
	down := txn(matrixChannel(""), downMessage())
	if again := txn(matrixChannel(""), downMessage()); again != down {
		t.Errorf("a retry has the transaction id %s, the first attempt %s", again, down)
	}
	realert := downMessage()
	realert.Notice, realert.Time = "realert", fixedFlip.Add(time.Hour)
	later := downMessage()
	later.Time = fixedFlip.Add(24 * time.Hour)
	test := downMessage()
	test.Test = true
	other := downMessage()
	other.Check.UUID, other.Check.Object = "0b7e2c11-0d3a-4c51-8f0e-1a2b3c4d5e6f", "other"
	otherChannel := matrixChannel("")
	otherChannel.Name = "ops-2"
	seen := map[string]string{down: "down"}
	for name, id := range map[string]string{
		"up":              txn(matrixChannel(""), upMessage()),
		"realert":         txn(matrixChannel(""), realert),
		"a later down":    txn(matrixChannel(""), later),
		"test":            txn(matrixChannel(""), test),
		"another check":   txn(matrixChannel(""), other),
		"another channel": txn(otherChannel, downMessage()),
	} {
		if prev, dup := seen[id]; dup {
			t.Errorf("%s and %s share the transaction id %s", name, prev, id)
		}
		seen[id] = name
	}
}

// matrixHomeserver answers the directory lookup of #ops:example.org and
// records each request line as sent (escaped).
type matrixHomeserver struct {
	*httptest.Server
	mu        sync.Mutex
	requests  []string
	auth      []string
	dirStatus int
}

func newMatrixHomeserver(t *testing.T, dirStatus int) *matrixHomeserver {
	hs := &matrixHomeserver{dirStatus: dirStatus}
	hs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		hs.mu.Lock()
		hs.requests = append(hs.requests, r.Method+" "+r.RequestURI)
		hs.auth = append(hs.auth, r.Header.Get("Authorization"))
		hs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/_matrix/client/v3/directory/room/#ops:example.org":
			w.WriteHeader(hs.dirStatus)
			if hs.dirStatus == http.StatusOK {
				_, _ = io.WriteString(w, `{"room_id":"!resolved/Room:example.org","servers":["example.org"]}`)
			} else {
				_, _ = io.WriteString(w, `{"errcode":"M_NOT_FOUND","error":"Room alias #ops:example.org not found"}`)
			}
		case r.Method == http.MethodPut:
			_, _ = io.WriteString(w, `{"event_id":"$abc"}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(hs.Close)
	return hs
}

// An alias is resolved first; the alias and the room id are escaped as
// path segments.
func TestMatrixRoomAlias(t *testing.T) {
	hs := newMatrixHomeserver(t, http.StatusOK)
	ch := matrixChannel(hs.URL)
	ch.Spec.Matrix.Room = "#ops:example.org"
	mustSend(t, ch, downMessage(), matrixSecrets(hs.URL))
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.requests) != 2 || hs.requests[0] != "GET /_matrix/client/v3/directory/room/%23ops:example.org" ||
		!regexp.MustCompile(`^PUT /_matrix/client/v3/rooms/%21resolved%2FRoom:example\.org/send/m\.room\.message/vigil-[0-9a-f]{32}$`).MatchString(hs.requests[1]) {
		t.Errorf("requests %q", hs.requests)
	}
	for _, a := range hs.auth {
		if a != "Bearer "+matrixToken {
			t.Errorf("Authorization %q", a)
		}
	}
}

func TestMatrixUnknownAlias(t *testing.T) {
	hs := newMatrixHomeserver(t, http.StatusNotFound)
	ch := matrixChannel(hs.URL)
	ch.Spec.Matrix.Room = "#ops:example.org"
	err := send(t, ch, downMessage(), matrixSecrets(hs.URL))
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "resolving the room alias #ops:example.org") ||
		!strings.Contains(err.Error(), "M_NOT_FOUND") ||
		!strings.Contains(err.Error(), "GET "+hs.URL+"/_matrix/client/v3/directory/room/%23ops:example.org: HTTP 404") {
		t.Errorf("Send = %v, want a permanent error about the alias", err)
	}
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.requests) != 1 {
		t.Errorf("requests %q: nothing is sent for an unknown alias", hs.requests)
	}
}

func TestMatrixRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name, header string
		want         time.Duration
	}{
		{"retry_after_ms in the body", "", 2500 * time.Millisecond},
		{"Retry-After header", "9", 9 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusTooManyRequests, `{"errcode":"M_LIMIT_EXCEEDED","error":"Too many requests","retry_after_ms":2500}`)
			if tc.header != "" {
				srv.header.Set("Retry-After", tc.header)
			}
			err := send(t, matrixChannel(srv.URL), downMessage(), matrixSecrets(srv.URL))
			var se *StatusError
			if !errors.As(err, &se) || se.RetryAfter != tc.want || IsPermanent(err) {
				t.Errorf("Send = %v (StatusError %+v), want a retryable error retrying after %s", err, se, tc.want)
			}
		})
	}
}

// Long descriptions and texts are cut so the event stays well within the
// homeserver's 64 KiB.
func TestMatrixContentLimit(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"event_id":"$abc"}`)
	m := downMessage()
	m.Check.Desc = strings.Repeat("<desc> 😀 ", 1200)
	m.Text = strings.Repeat("ü", 4000)
	m.Check.LastPingBody = []byte(strings.Repeat("<>&", 1000))
	mustSend(t, matrixChannel(srv.URL), m, matrixSecrets(srv.URL))
	req := srv.only(t)
	if len(req.Body) > matrixContentMax {
		t.Errorf("content is %d bytes", len(req.Body))
	}
	var msg matrixWireMessage
	decodeStrict(t, req.Body, &msg)
	if !strings.Contains(msg.FormattedBody, "&lt;desc&gt; 😀") || !strings.Contains(msg.Body, "…") || !strings.Contains(msg.Body, "Namespace: team-a") {
		t.Errorf("content lost its parts: %.300s", msg.Body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(req.Body, &raw); err != nil || len(raw) != 5 {
		t.Errorf("content keys %v (%v)", raw, err)
	}
}

func TestMatrixRoomMustBeAnIDOrAlias(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{}`)
	ch := matrixChannel(srv.URL)
	ch.Spec.Matrix.Room = "ops:example.org"
	if err := send(t, ch, downMessage(), matrixSecrets(srv.URL)); err == nil || !IsPermanent(err) {
		t.Errorf("Send = %v, want a permanent error", err)
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestMatrixSettings(t *testing.T) {
	checkSettingsAndSecretRefs(t, matrixChannel(""), ref("matrix", "token"))
}
