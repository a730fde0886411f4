package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
)

// fixedNow is the clock of every test: ten minutes after the fixture's last
// ping and ten minutes after its flip.
var (
	fixedNow  = time.Date(2024, 5, 1, 12, 10, 0, 0, time.UTC)
	fixedFlip = time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
)

func TestMain(m *testing.M) {
	now = func() time.Time { return fixedNow }
	os.Exit(m.Run())
}

const fixtureUUID = "5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a"

// downMessage is a simple check that missed its deadline.
func downMessage() Message {
	return Message{
		Check: CheckInfo{
			Namespace:    "team-a",
			Object:       "nightly-backup",
			Name:         "Nightly backup",
			Slug:         "nightly-backup",
			UUID:         fixtureUUID,
			Desc:         "Backs up the orders database.",
			Tags:         []string{"prod", "db"},
			PingURL:      "https://vigil.example.com/ping/" + fixtureUUID,
			DetailsURL:   "https://vigil.example.com/checks/" + fixtureUUID,
			Timeout:      24 * time.Hour,
			Grace:        time.Hour,
			NPings:       42,
			LastPing:     fixedNow.Add(-10 * time.Minute),
			LastPingType: v1.PingSuccess,
			LastPingBody: []byte("backup done: 3 files\n"),
		},
		Time:   fixedFlip,
		Reason: "timeout",
	}
}

// upMessage is the same check coming back up.
func upMessage() Message {
	m := downMessage()
	m.Up, m.Reason = true, ""
	return m
}

func testChannel(spec v1.ChannelSpec) *v1.Channel {
	return &v1.Channel{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ops"}, Spec: spec}
}

// secretMap serves Secret keys from "name/key" entries.
func secretMap(kv map[string]string) SecretFunc {
	return func(_ context.Context, ref v1.SecretKeyRef) (string, error) {
		v, ok := kv[ref.Name+"/"+ref.Key]
		if !ok {
			return "", &KeyMissingError{Secret: ref.Name, Key: ref.Key}
		}
		return v, nil
	}
}

func ref(name, key string) v1.SecretKeyRef { return v1.SecretKeyRef{Name: name, Key: key} }

// captured is one request a test server received.
type captured struct {
	Method, Path, RawQuery, Host string
	Header                       http.Header
	Body                         []byte
}

// recorder is a loopback HTTP server that records requests and answers
// with a status and body; check, when set, validates each request's body and
// fails the test on a wrong shape.
type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []captured
	status int
	body   string
	header http.Header
}

func newRecorder(t *testing.T, status int, body string) *recorder {
	t.Helper()
	r := &recorder{status: status, body: body, header: http.Header{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.reqs = append(r.reqs, captured{req.Method, req.URL.Path, req.URL.RawQuery, req.Host, req.Header.Clone(), b})
		status, body := r.status, r.body
		for k, vs := range r.header {
			w.Header()[k] = vs
		}
		r.mu.Unlock()
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *recorder) requests() []captured {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]captured(nil), r.reqs...)
}

// only returns the single request the server received.
func (r *recorder) only(t *testing.T) captured {
	t.Helper()
	reqs := r.requests()
	if len(reqs) != 1 {
		t.Fatalf("server received %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

// decodeStrict decodes a JSON body into v, rejecting fields v does not name,
// so tests pin the wire format exactly.
func decodeStrict(t *testing.T, body []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("body does not match the documented shape: %v\n%s", err, body)
	}
}

// loopbackEgress allows the loopback addresses the tests' servers listen
// on, as `make dev` does, and relays (Apprise URLs), which the tests of the
// Apprise kind refuse with a guard of their own; nothing else of the
// default policy changes.
var loopbackEgress = egress.New(egress.Options{Allow: egress.Loopback, AllowRelays: true})

func send(t *testing.T, ch *v1.Channel, m Message, secrets map[string]string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return Send(ctx, Delivery{Channel: ch, Message: m, Secret: secretMap(secrets), Egress: loopbackEgress})
}

func mustSend(t *testing.T, ch *v1.Channel, m Message, secrets map[string]string) {
	t.Helper()
	if err := send(t, ch, m, secrets); err != nil {
		t.Fatalf("Send: %v", err)
	}
}

func checkHeader(t *testing.T, h http.Header, name, want string) {
	t.Helper()
	if got := h.Get(name); got != want {
		t.Errorf("header %s = %q, want %q", name, got, want)
	}
}

func checkUserAgent(t *testing.T, h http.Header) {
	t.Helper()
	if ua := h.Get("User-Agent"); ua != UserAgent() || len(ua) <= len("Vigil/") || ua[:6] != "Vigil/" {
		t.Errorf("User-Agent = %q, want Vigil/<version>", ua)
	}
}
