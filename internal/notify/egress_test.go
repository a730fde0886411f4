package notify

import (
	"net/http"
	"strings"
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
)

// TestEveryKindGoesThroughTheGuard: with the default guard, every kind
// pointed at a loopback server fails with EgressDenied, and the server sees
// no connection. A kind registered later must be added here. (Relays are
// allowed, so that Apprise's URLs get as far as connecting.)
func TestEveryKindGoesThroughTheGuard(t *testing.T) {
	tested := map[v1.ChannelKind]bool{}
	srv := newRecorder(t, http.StatusOK, "")
	guard := egress.New(egress.Options{AllowRelays: true})
	for _, k := range httpKinds() {
		tested[k.kind] = true
		for _, base := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
			err := Send(t.Context(), Delivery{Channel: k.channel(base), Message: downMessage(), Secret: secretMap(k.secrets(base)), Egress: guard})
			if checkDenied(t, string(k.kind)+" at "+base, err) {
				checkNoCredentials(t, err)
			}
		}
	}
	if got := srv.requests(); len(got) > 0 {
		t.Errorf("the server received %d requests", len(got))
	}

	tested[v1.ChannelEmail] = true
	for _, tc := range []struct {
		security    v1.SMTPSecurity
		implicitTLS bool
		host        string
	}{
		{v1.SMTPStartTLS, false, "127.0.0.1"},
		{v1.SMTPNone, false, "localhost"},
		{v1.SMTPTLS, true, "127.0.0.1"},
	} {
		be := &smtpBackend{box: &mailbox{}}
		if tc.security != v1.SMTPNone { // no AUTH in the clear
			be.user, be.pass = "vigil", smtpPassword
		}
		port := smtpServer(t, be, !tc.implicitTLS, tc.implicitTLS)
		ch := emailChannel(port, tc.security, be.user != "")
		ch.Spec.Email.Host = tc.host
		err := Send(t.Context(), Delivery{Channel: ch, Message: downMessage(), Secret: secretMap(smtpSecrets)})
		if checkDenied(t, "email "+string(tc.security)+" at "+tc.host, err) && strings.Contains(err.Error(), smtpPassword) {
			t.Errorf("error %v shows the SMTP password", err)
		}
		if n := be.sessions.Load(); n != 0 {
			t.Errorf("email %s: the SMTP server took %d connections", tc.security, n)
		}
		// Allowed, the same channel delivers.
		if err := Send(t.Context(), Delivery{Channel: ch, Message: downMessage(), Secret: secretMap(smtpSecrets), Egress: loopbackEgress}); err != nil {
			t.Errorf("email %s with loopback allowed: %v", tc.security, err)
		}
	}

	tested[v1.ChannelGroup] = true // connects nowhere itself: its members do, each tested here
	for _, k := range Kinds() {
		if !tested[k] {
			t.Errorf("kind %q is not tested against the guard", k)
		}
	}
}

// checkDenied: err is the guard's refusal, says so first, and may succeed
// when retried (after the administrator allows the address). It reports
// whether err is a refusal at all.
func checkDenied(t *testing.T, what string, err error) bool {
	t.Helper()
	if !egress.IsDenied(err) {
		t.Errorf("%s: %v, want EgressDenied", what, err)
		return false
	}
	if !strings.Contains(err.Error(), ": "+v1.ReasonEgressDenied+": ") || !strings.Contains(err.Error(), " a loopback address, ") {
		t.Errorf("%s: %q does not say EgressDenied and loopback", what, err)
	}
	if IsPermanent(err) {
		t.Errorf("%s: %v is permanent; an allow added meanwhile should let a retry through", what, err)
	}
	return true
}

// TestWebhookRefusesHostHeader: a Channel cannot send a request to one
// server under the name of another, in any case of the header's name.
func TestWebhookRefusesHostHeader(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	for _, req := range []*v1.WebhookRequest{
		{URL: srv.URL, Headers: map[string]string{"Host": "metadata.google.internal"}},
		{URL: srv.URL, Headers: map[string]string{"hOsT": "metadata.google.internal"}},
		{URL: srv.URL, HeaderSecretRefs: map[string]v1.SecretKeyRef{"HOST": ref("hook", "host")}},
	} {
		ch := testChannel(v1.ChannelSpec{Kind: v1.ChannelWebhook, Webhook: &v1.WebhookChannel{Down: req}})
		err := send(t, ch, downMessage(), map[string]string{"hook/host": "metadata.google.internal"})
		if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "cannot set the Host header") {
			t.Errorf("headers %v %v: Send = %v, want a permanent refusal of Host", req.Headers, req.HeaderSecretRefs, err)
		}
	}
	if got := srv.requests(); len(got) > 0 {
		t.Errorf("the server received %+v", got)
	}
}
