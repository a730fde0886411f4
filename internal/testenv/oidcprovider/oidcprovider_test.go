package oidcprovider

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
)

var (
	alice = User{Username: "alice", Password: "alice-password", Email: "alice@example.com",
		Groups: []string{"vigil-viewers", "team-b-ops"}}
	dashboard = Client{ID: "vigil-dashboard", Secret: "dashboard-secret",
		RedirectURIs: []string{"http://localhost:8443/oauth2/callback"}}
)

// rp is the relying party's side, as the dashboard will be: go-oidc's
// discovery and verifier, and an oauth2 config.
type rp struct {
	provider *oidc.Provider
	verifier *oidc.IDTokenVerifier
	conf     oauth2.Config
}

func newRP(t *testing.T, p *Provider, c Client, scopes ...string) rp {
	t.Helper()
	provider, err := oidc.NewProvider(t.Context(), p.Issuer)
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	endpoint := provider.Endpoint()
	endpoint.AuthStyle = oauth2.AuthStyleInHeader
	return rp{
		provider: provider,
		verifier: provider.Verifier(&oidc.Config{ClientID: c.ID}),
		conf: oauth2.Config{ClientID: c.ID, ClientSecret: c.Secret, Endpoint: endpoint,
			RedirectURL: c.RedirectURIs[0], Scopes: scopes},
	}
}

// authorize starts a sign-in as the dashboard would and returns the code
// the provider redirected back with.
func (r rp) authorize(t *testing.T, p *Provider, u User, verifier, state, nonce string) string {
	t.Helper()
	authURL := r.conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
	to, err := p.SignIn(t.Context(), authURL, u.Username, u.Password)
	if err != nil {
		t.Fatalf("SignIn: %v", err)
	}
	if got := to.Scheme + "://" + to.Host + to.Path; got != r.conf.RedirectURL {
		t.Fatalf("redirected to %s, want the redirect URI %s", to, r.conf.RedirectURL)
	}
	if got := to.Query().Get("state"); got != state {
		t.Fatalf("state %q, want %q", got, state)
	}
	code := to.Query().Get("code")
	if code == "" {
		t.Fatalf("no code in %s", to)
	}
	return code
}

type claims struct {
	Email             string    `json:"email"`
	EmailVerified     bool      `json:"email_verified"`
	PreferredUsername string    `json:"preferred_username"`
	Groups            *[]string `json:"groups"`
}

func TestSignInCodeFlowWithPKCE(t *testing.T) {
	ctx := t.Context()
	p, err := Start(ctx, []User{alice}, []Client{dashboard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if !strings.HasPrefix(p.Issuer, "http://127.0.0.1:") {
		t.Fatalf("issuer %q", p.Issuer)
	}
	r := newRP(t, p, dashboard, oidc.ScopeOpenID, "email", "profile", ScopeGroups)
	verifier, state, nonce := oauth2.GenerateVerifier(), oauth2.GenerateVerifier(), oauth2.GenerateVerifier()
	code := r.authorize(t, p, alice, verifier, state, nonce)

	// The token endpoint verifies the S256 challenge: a wrong verifier, or
	// none (a downgrade), is refused, and the code stays unused.
	for name, opts := range map[string][]oauth2.AuthCodeOption{
		"wrong verifier": {oauth2.VerifierOption(oauth2.GenerateVerifier())},
		"no verifier":    nil,
	} {
		_, err := r.conf.Exchange(ctx, code, opts...)
		if re := (*oauth2.RetrieveError)(nil); !errors.As(err, &re) {
			t.Fatalf("%s: exchange: %v, want the token endpoint's refusal", name, err)
		}
	}
	tok, err := r.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatalf("exchange: %v", err)
	}
	if _, err := r.conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); err == nil {
		t.Fatal("the code was exchanged twice")
	}

	raw, _ := tok.Extra("id_token").(string)
	idt, err := r.verifier.Verify(ctx, raw) // signature, issuer, audience, expiry
	if err != nil {
		t.Fatalf("verify the ID token: %v", err)
	}
	if idt.Issuer != p.Issuer || !slices.Equal(idt.Audience, []string{dashboard.ID}) || idt.Subject != alice.Username {
		t.Fatalf("ID token issuer %q audience %q subject %q", idt.Issuer, idt.Audience, idt.Subject)
	}
	if idt.Nonce != nonce {
		t.Fatalf("nonce %q, want %q", idt.Nonce, nonce)
	}
	if err := idt.VerifyAccessToken(tok.AccessToken); err != nil {
		t.Fatalf("at_hash: %v", err)
	}
	var c claims
	if err := idt.Claims(&c); err != nil {
		t.Fatal(err)
	}
	if c.Email != alice.Email || !c.EmailVerified || c.PreferredUsername != alice.Username ||
		c.Groups == nil || !slices.Equal(*c.Groups, alice.Groups) {
		t.Fatalf("ID token claims %+v groups %v", c, c.Groups)
	}

	// The userinfo endpoint answers the same claims.
	info, err := r.provider.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		t.Fatalf("userinfo: %v", err)
	}
	c = claims{}
	if err := info.Claims(&c); err != nil {
		t.Fatal(err)
	}
	if info.Subject != alice.Username || c.Email != alice.Email || c.Groups == nil || !slices.Equal(*c.Groups, alice.Groups) {
		t.Fatalf("userinfo subject %q claims %+v groups %v", info.Subject, c, c.Groups)
	}

	// A wrong password is refused on the login page.
	authURL := r.conf.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oidc.Nonce(nonce))
	_, err = p.SignIn(ctx, authURL, alice.Username, "not-"+alice.Password)
	if err == nil || !strings.Contains(err.Error(), "username or password wrong") {
		t.Fatalf("SignIn with a wrong password: %v", err)
	}
}

// Like Dex, the provider issues groups only for the "groups" scope.
func TestNoGroupsWithoutTheScope(t *testing.T) {
	ctx := t.Context()
	p, err := Start(ctx, []User{alice}, []Client{dashboard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	r := newRP(t, p, dashboard, oidc.ScopeOpenID, "email")
	verifier := oauth2.GenerateVerifier()
	tok, err := r.conf.Exchange(ctx, r.authorize(t, p, alice, verifier, "s", "n"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	idt, err := r.verifier.Verify(ctx, tok.Extra("id_token").(string))
	if err != nil {
		t.Fatal(err)
	}
	var c claims
	if err := idt.Claims(&c); err != nil {
		t.Fatal(err)
	}
	if c.Email != alice.Email || c.Groups != nil {
		t.Fatalf("claims %+v groups %v", c, c.Groups)
	}
}

// Two providers run side by side, each with its own clients and keys.
func TestProvidersAreIndependent(t *testing.T) {
	ctx := t.Context()
	other := Client{ID: "other", Secret: "other-secret", RedirectURIs: []string{"http://localhost:9/cb"}}
	a, err := Start(ctx, []User{alice}, []Client{dashboard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	b, err := Start(ctx, []User{alice}, []Client{other})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)

	ra := newRP(t, a, dashboard, oidc.ScopeOpenID)
	verifier := oauth2.GenerateVerifier()
	tok, err := ra.conf.Exchange(ctx, ra.authorize(t, a, alice, verifier, "s", "n"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	// b's keys do not verify a's token (the audience is b's client's).
	rb := newRP(t, b, other, oidc.ScopeOpenID)
	rb.verifier = rb.provider.Verifier(&oidc.Config{ClientID: dashboard.ID, SkipIssuerCheck: true})
	if _, err := rb.verifier.Verify(ctx, tok.Extra("id_token").(string)); err == nil {
		t.Fatal("provider b's keys verified provider a's ID token")
	}
	// b does not know a's client.
	_, err = b.SignIn(ctx, strings.Replace(ra.conf.AuthCodeURL("s"), a.Issuer, b.Issuer, 1), alice.Username, alice.Password)
	if err == nil {
		t.Fatal("provider b signed in for provider a's client")
	}
}

func TestStops(t *testing.T) {
	closed := func(p *Provider) bool {
		d := net.Dialer{Timeout: time.Second}
		c, err := d.DialContext(t.Context(), "tcp", strings.TrimPrefix(p.Issuer, "http://"))
		if err == nil {
			_ = c.Close()
		}
		return err != nil
	}

	p, err := Start(t.Context(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if closed(p) {
		t.Fatal("the provider's port is closed while it runs")
	}
	p.Close()
	if !closed(p) {
		t.Fatal("the provider's port is open after Close")
	}
	p.Close()

	ctx, cancel := context.WithCancel(t.Context())
	p, err = Start(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for !closed(p) {
		if time.Now().After(deadline) {
			t.Fatal("the provider's port is open after its context ended")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Close()

	if _, err := Start(ctx, nil, nil); err == nil {
		t.Fatal("Start with an ended context started")
	}
	if _, err := Start(t.Context(), []User{alice, alice}, nil); err == nil {
		t.Fatal("Start took a user twice")
	}
}
