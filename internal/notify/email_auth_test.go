package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/smtp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Exchange Online offers LOGIN and XOAUTH2 and refuses PLAIN: auto picks
// LOGIN there, login insists on it, and plain fails with what the server
// offers, before anything is sent.
func TestEmailAuthLogin(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mechs     []string
		auth      v1.SMTPAuth
		wantErr   string // empty: delivered
		permanent bool
	}{
		{"auto takes LOGIN when PLAIN is not offered", []string{sasl.Login}, "", "", false},
		{"auto prefers PLAIN", []string{sasl.Login, sasl.Plain}, v1.SMTPAuthAuto, "", false},
		{"login", []string{sasl.Plain, sasl.Login}, v1.SMTPAuthLogin, "", false},
		{"plain not offered", []string{sasl.Login}, v1.SMTPAuthPlain, "does not offer AUTH PLAIN (it offers LOGIN)", true},
		{"login not offered", []string{sasl.Plain}, v1.SMTPAuthLogin, "does not offer AUTH LOGIN (it offers PLAIN)", true},
		{"neither offered", []string{"XOAUTH2"}, "", "neither PLAIN nor LOGIN", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			box := &mailbox{}
			port := smtpServer(t, &smtpBackend{box: box, user: "vigil", pass: smtpPassword, mechs: tc.mechs}, true, false)
			ch := emailChannel(port, v1.SMTPStartTLS, true)
			ch.Spec.Email.Auth = tc.auth
			err := send(t, ch, downMessage(), smtpSecrets)
			box.mu.Lock()
			defer box.mu.Unlock()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Send: %v", err)
				}
				if box.messages != 1 || box.user != "vigil" || !box.tlsMail {
					t.Errorf("%d messages, authenticated as %q, over TLS %v", box.messages, box.user, box.tlsMail)
				}
				return
			}
			if err == nil || IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Send = %v (permanent %v), want an error containing %q", err, IsPermanent(err), tc.wantErr)
			}
			if box.messages != 0 {
				t.Errorf("a message was delivered")
			}
		})
	}
}

func TestEmailAuthLoginWrongPassword(t *testing.T) {
	box := &mailbox{}
	port := smtpServer(t, &smtpBackend{box: box, user: "vigil", pass: "other", mechs: []string{sasl.Login}}, true, false)
	err := send(t, emailChannel(port, v1.SMTPStartTLS, true), downMessage(), smtpSecrets)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "535") || strings.Contains(err.Error(), smtpPassword) {
		t.Fatalf("Send = %v, want a permanent 535 without the password", err)
	}
}

// tokenEndpoint is an OAuth 2.0 token endpoint for the client-credentials
// grant, as Microsoft's identity platform answers it: it checks the form,
// issues tokens tok-1, tok-2, ... and counts the requests.
type tokenEndpoint struct {
	mu       sync.Mutex
	issued   int
	status   int    // when set, every request is answered with it...
	errBody  string // ...and this body
	problems []string
}

func (e *tokenEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	defer e.mu.Unlock()
	problem := func(what string) { e.problems = append(e.problems, what) }
	if r.Method != http.MethodPost || r.URL.Path != "/tenant-1/oauth2/v2.0/token" {
		problem("method or path")
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		problem("Content-Type " + ct)
	}
	if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "Vigil/") {
		problem("User-Agent " + ua)
	}
	if err := r.ParseForm(); err != nil {
		problem("form")
	}
	for k, want := range map[string]string{
		"grant_type": "client_credentials", "client_id": "app-1", "client_secret": "s3cret-client",
		"scope": "https://outlook.office365.com/.default",
	} {
		if got := r.PostForm.Get(k); got != want {
			problem(k + " = " + got)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if e.status != 0 {
		w.WriteHeader(e.status)
		_, _ = w.Write([]byte(e.errBody))
		return
	}
	e.issued++
	_ = json.NewEncoder(w).Encode(map[string]any{
		"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
		"access_token": "tok-" + string(rune('0'+e.issued)),
	})
}

func (e *tokenEndpoint) count(t *testing.T) int {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.problems) > 0 {
		t.Errorf("the token requests were not as the grant wants: %s", strings.Join(e.problems, "; "))
	}
	return e.issued
}

func xoauth2Channel(port int32, tokenURL string) *v1.Channel {
	ch := emailChannel(port, v1.SMTPStartTLS, false)
	ch.Spec.Email.Auth = v1.SMTPAuthXOAuth2
	ch.Spec.Email.OAuth2 = &v1.SMTPOAuth2{
		Username: "alerts@contoso.com", TokenURL: tokenURL + "/tenant-1/oauth2/v2.0/token",
		ClientID: "app-1", ClientSecretRef: ref("entra", "client-secret"),
		Scopes: []string{"https://outlook.office365.com/.default"},
	}
	return ch
}

var xoauth2Secrets = map[string]string{"entra/client-secret": "s3cret-client\n"}

// Exchange Online's app-only SMTP: a token from the client-credentials
// grant, sent with XOAUTH2, reused until it is refused, then replaced.
func TestEmailXOAuth2(t *testing.T) {
	smtpTokens.RemoveAll(func(any) bool { return true })
	endpoint := &tokenEndpoint{}
	tokens := httptest.NewServer(endpoint)
	defer tokens.Close()
	var mu sync.Mutex
	valid := map[string]bool{"tok-1": true}
	box := &mailbox{}
	port := smtpServer(t, &smtpBackend{box: box, user: "alerts@contoso.com", mechs: []string{sasl.Login, "XOAUTH2"},
		tokenOK: func(tok string) bool { mu.Lock(); defer mu.Unlock(); return valid[tok] }}, true, false)
	ch := xoauth2Channel(port, tokens.URL)

	mustSend(t, ch, downMessage(), xoauth2Secrets)
	mustSend(t, ch, upMessage(), xoauth2Secrets)
	if n := endpoint.count(t); n != 1 {
		t.Errorf("the token endpoint issued %d tokens for two emails, want 1 (cached)", n)
	}
	box.mu.Lock()
	if box.messages != 2 || box.user != "alerts@contoso.com" || !box.tlsMail {
		t.Errorf("%d messages, authenticated as %q, over TLS %v", box.messages, box.user, box.tlsMail)
	}
	box.mu.Unlock()

	// The token is revoked before it expires: the attempt fails, retryably,
	// and the next one asks for a new token.
	mu.Lock()
	valid = map[string]bool{"tok-2": true}
	mu.Unlock()
	err := send(t, ch, downMessage(), xoauth2Secrets)
	if err == nil || IsPermanent(err) || !strings.Contains(err.Error(), "cached access token") {
		t.Fatalf("Send with a revoked cached token = %v (permanent %v), want a retryable error", err, IsPermanent(err))
	}
	if strings.Contains(err.Error(), "tok-1") {
		t.Errorf("the error shows the token: %v", err)
	}
	mustSend(t, ch, downMessage(), xoauth2Secrets)
	if n := endpoint.count(t); n != 2 {
		t.Errorf("the token endpoint issued %d tokens, want 2", n)
	}

	// A fresh token refused means the mailbox may not send: permanent.
	mu.Lock()
	valid = map[string]bool{}
	mu.Unlock()
	smtpTokens.RemoveAll(func(any) bool { return true })
	err = send(t, ch, downMessage(), xoauth2Secrets)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "535") {
		t.Fatalf("Send with a refused fresh token = %v, want a permanent 535", err)
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	if box.messages != 3 {
		t.Errorf("%d messages, want 3", box.messages)
	}
}

func TestEmailXOAuth2TokenEndpointErrors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		status    int
		body      string
		permanent bool
		contains  string
	}{
		{"invalid client secret", http.StatusUnauthorized,
			`{"error":"invalid_client","error_description":"AADSTS7000215: Invalid client secret provided."}`, true, "invalid_client: AADSTS7000215"},
		{"invalid scope", http.StatusBadRequest, `{"error":"invalid_scope","error_description":"AADSTS70011"}`, true, "invalid_scope"},
		{"throttled", http.StatusTooManyRequests, `{"error":"temporarily_unavailable"}`, false, "429"},
		{"outage", http.StatusServiceUnavailable, `upstream down`, false, "503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			smtpTokens.RemoveAll(func(any) bool { return true })
			tokens := httptest.NewServer(&tokenEndpoint{status: tc.status, errBody: tc.body})
			defer tokens.Close()
			box := &mailbox{}
			be := &smtpBackend{box: box, user: "alerts@contoso.com", mechs: []string{"XOAUTH2"}, tokenOK: func(string) bool { return true }}
			port := smtpServer(t, be, true, false)
			err := send(t, xoauth2Channel(port, tokens.URL), downMessage(), xoauth2Secrets)
			if err == nil || IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("Send = %v (permanent %v), want an error containing %q, permanent %v", err, IsPermanent(err), tc.contains, tc.permanent)
			}
			if strings.Contains(err.Error(), "s3cret-client") {
				t.Errorf("the error shows the client secret: %v", err)
			}
			if be.sessions.Load() != 0 {
				t.Errorf("an SMTP session was opened without a token")
			}
		})
	}
}

// Credentials go only over TLS, or to this machine, whatever the mechanism.
func TestSMTPAuthRefusesCleartext(t *testing.T) {
	clear := &smtp.ServerInfo{Name: "smtp.example.com", TLS: false, Auth: []string{"LOGIN", "XOAUTH2"}}
	for _, a := range []smtp.Auth{
		&loginAuth{user: "u", pass: "p", host: "smtp.example.com"},
		&xoauth2Auth{user: "u", token: "t", host: "smtp.example.com"},
	} {
		if _, _, err := a.Start(clear); err == nil {
			t.Errorf("%T started over a cleartext connection to a remote host", a)
		}
		if _, _, err := a.Start(&smtp.ServerInfo{Name: "smtp.example.com", TLS: true}); err != nil {
			t.Errorf("%T over TLS: %v", a, err)
		}
	}
}

func TestLoginAuthAnswers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		challenges []string
		want       []string
	}{
		{"Exchange's prompts", []string{"Username:", "Password:"}, []string{"vigil", "pw"}},
		{"lower case", []string{"username:", "password:"}, []string{"vigil", "pw"}},
		{"other wording, by order", []string{"Who?", "Secret?"}, []string{"vigil", "pw"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &loginAuth{user: "vigil", pass: "pw", host: "localhost"}
			if mech, ir, err := a.Start(&smtp.ServerInfo{TLS: true}); mech != "LOGIN" || ir != nil || err != nil {
				t.Fatalf("Start = %q %q %v", mech, ir, err)
			}
			for i, c := range tc.challenges {
				got, err := a.Next([]byte(c), true)
				if err != nil || string(got) != tc.want[i] {
					t.Errorf("challenge %q: %q, %v; want %q", c, got, err, tc.want[i])
				}
			}
			if _, err := a.Next([]byte("More?"), true); err == nil {
				t.Error("a third challenge was answered")
			}
		})
	}
}

func TestChooseSMTPAuth(t *testing.T) {
	c := smtpCredentials{user: "u", secret: "s"}
	for _, tc := range []struct {
		mech    v1.SMTPAuth
		offered string
		want    string // the mechanism's name, or "" for an error
	}{
		{"", "PLAIN LOGIN", "PLAIN"},
		{"", "LOGIN XOAUTH2", "LOGIN"},
		{"", "login", "LOGIN"},
		{v1.SMTPAuthAuto, "CRAM-MD5", ""},
		{v1.SMTPAuthPlain, "LOGIN PLAIN", "PLAIN"},
		{v1.SMTPAuthLogin, "PLAIN", ""},
		{v1.SMTPAuthXOAuth2, "LOGIN XOAUTH2", "XOAUTH2"},
		{v1.SMTPAuthXOAuth2, "LOGIN", ""},
		{"kerberos", "KERBEROS", ""},
	} {
		c.mechanism = tc.mech
		a, err := chooseSMTPAuth(c, "localhost", tc.offered)
		got := ""
		if err == nil {
			got, _, _ = a.Start(&smtp.ServerInfo{Name: "localhost", TLS: true})
		} else if !IsPermanent(err) {
			t.Errorf("%q with %q: a retryable error %v", tc.mech, tc.offered, err)
		}
		if got != tc.want {
			t.Errorf("%q with %q: %q (%v), want %q", tc.mech, tc.offered, got, err, tc.want)
		}
	}
}

// The token request is the tenant's too: it leaves through the egress
// guard, which refuses a token URL on loopback (the cluster's own
// services, the node) before anything is sent or an SMTP session opened.
func TestEmailXOAuth2TokenURLThroughTheGuard(t *testing.T) {
	smtpTokens.RemoveAll(func(any) bool { return true })
	endpoint := &tokenEndpoint{}
	tokens := httptest.NewServer(endpoint)
	defer tokens.Close()
	be := &smtpBackend{box: &mailbox{}, user: "alerts@contoso.com", mechs: []string{"XOAUTH2"}, tokenOK: func(string) bool { return true }}
	port := smtpServer(t, be, true, false)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	err := Send(ctx, Delivery{Channel: xoauth2Channel(port, tokens.URL), Message: downMessage(), Secret: secretMap(xoauth2Secrets)})
	if checkDenied(t, "token endpoint on loopback", err) && strings.Contains(err.Error(), "s3cret-client") {
		t.Errorf("the refusal shows the client secret: %v", err)
	}
	if n := endpoint.count(t); n != 0 || be.sessions.Load() != 0 {
		t.Errorf("%d token requests and %d SMTP sessions reached loopback", n, be.sessions.Load())
	}
}
