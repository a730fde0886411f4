package notify

import (
	"context"
	"errors"
	"net"
	"net/url"
	"slices"
	"strconv"
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// TestGate: every kind asks the gate before it contacts an endpoint, with
// the endpoint's host:port; a refusal sends nothing and comes back as the
// error, wrapped.
func TestGate(t *testing.T) {
	refused := errors.New("not now")
	for _, k := range httpKinds() {
		t.Run(string(k.kind), func(t *testing.T) {
			srv := newRecorder(t, 200, successAnswers[k.kind])
			u, _ := url.Parse(srv.URL)
			var asked []string
			gate := func(endpoint string) error { asked = append(asked, endpoint); return nil }
			if err := Send(t.Context(), Delivery{Channel: k.channel(srv.URL), Message: downMessage(),
				Secret: secretMap(k.secrets(srv.URL)), Egress: loopbackEgress, Gate: gate}); err != nil {
				t.Fatal(err)
			}
			// One ask per request (a tracker looks for its open issue
			// before it opens one), each for the endpoint.
			if len(asked) == 0 || len(asked) != len(srv.requests()) {
				t.Errorf("gate asked %d times for %d requests", len(asked), len(srv.requests()))
			}
			for _, a := range asked {
				if a != u.Host {
					t.Errorf("gate asked for %s, want %s", a, u.Host)
				}
			}
			before := len(srv.requests())
			err := Send(t.Context(), Delivery{Channel: k.channel(srv.URL), Message: downMessage(),
				Secret: secretMap(k.secrets(srv.URL)), Egress: loopbackEgress, Gate: func(string) error { return refused }})
			if !errors.Is(err, refused) || IsPermanent(err) {
				t.Fatalf("refused: Send = %v", err)
			}
			checkNoCredentials(t, err)
			if n := len(srv.requests()); n != before {
				t.Errorf("the server got %d requests past the refusing gate", n-before)
			}
		})
	}
	t.Run("email", func(t *testing.T) {
		box := &mailbox{}
		port := smtpServer(t, &smtpBackend{box: box}, false, false)
		ch := emailChannel(port, v1.SMTPNone, false)
		var asked []string
		gate := func(endpoint string) error { asked = append(asked, endpoint); return refused }
		err := Send(context.Background(), Delivery{Channel: ch, Message: downMessage(), Secret: secretMap(nil), Egress: loopbackEgress, Gate: gate})
		if !errors.Is(err, refused) || IsPermanent(err) {
			t.Errorf("refused: Send = %v", err)
		}
		if want := net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port))); !slices.Equal(asked, []string{want}) {
			t.Errorf("gate asked for %v, want [%s]", asked, want)
		}
		box.mu.Lock()
		defer box.mu.Unlock()
		if box.messages != 0 {
			t.Errorf("%d messages sent past the gate", box.messages)
		}
	})
}

func TestEndpointOf(t *testing.T) {
	for raw, want := range map[string]string{
		"http://hooks.example.com/x":       "hooks.example.com:80",
		"https://hooks.example.com/x":      "hooks.example.com:443",
		"https://hooks.example.com:8443/x": "hooks.example.com:8443",
		"http://[::1]/x":                   "[::1]:80",
		"http://user:pw@10.0.0.1:9000/":    "10.0.0.1:9000",
	} {
		u, _ := url.Parse(raw)
		if got := endpointOf(u); got != want {
			t.Errorf("endpointOf(%s) = %s, want %s", raw, got, want)
		}
	}
}
