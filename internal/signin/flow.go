package signin

import (
	"crypto/hmac"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/vigil-operator/vigil/internal/sealed"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/words"
)

// Problem is a sign-in that did not succeed, in words for the person; the
// dashboard shows Message on its sign-in page with Status.
type Problem struct {
	Status  int
	Message string
	// Err is the cause, for the log (never a token).
	Err error
}

func (p *Problem) Error() string { return p.Message }
func (p *Problem) Unwrap() error { return p.Err }

// login is what a sign-in carries between leaving for the provider and
// coming back, sealed in the login cookie.
type login struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Next     string `json:"x"`
	Expires  int64  `json:"e"` // UNIX seconds
}

// Begin sends the browser to the provider to sign in, to come back to
// next (a path on this site) once signed in.
func (s *Service) Begin(w http.ResponseWriter, r *http.Request, next string) error {
	p, err := s.discover()
	if err != nil {
		return &Problem{Status: http.StatusServiceUnavailable, Message: "The identity provider cannot be reached; try again in a moment.", Err: err}
	}
	l := login{State: NewToken(), Nonce: NewToken(), Verifier: oauth2.GenerateVerifier(), Next: localPath(next),
		Expires: time.Now().Add(loginTTL).Unix()}
	sealed, err := s.seal(l)
	if err != nil {
		return err
	}
	// Lax, unlike the session's: the provider's redirect back is a
	// navigation from another site, which must carry it.
	s.setCookie(w, s.loginCookie(), sealed, loginTTL, http.SameSiteLaxMode)
	to := s.oauth(p).AuthCodeURL(l.State, oidc.Nonce(l.Nonce), oauth2.S256ChallengeOption(l.Verifier))
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

// Finish completes a sign-in at the redirect URL: it checks the state,
// exchanges the code (with the PKCE verifier), verifies the ID token and
// its nonce, reads the person's name and groups, and starts their
// session, setting its cookie. It returns the page to go to.
func (s *Service) Finish(w http.ResponseWriter, r *http.Request) (next string, err error) {
	again := func(msg string, cause error) (string, error) {
		return "", &Problem{Status: http.StatusBadRequest, Message: msg + " Sign in again.", Err: cause}
	}
	c, cerr := r.Cookie(s.loginCookie())
	if cerr != nil {
		return again("The sign-in was not started in this browser, or took longer than 10 minutes.", cerr)
	}
	s.setCookie(w, s.loginCookie(), "", 0, http.SameSiteLaxMode)
	var l login
	if err := s.open(c.Value, &l); err != nil || time.Now().Unix() >= l.Expires {
		return again("The sign-in took longer than 10 minutes.", err)
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		msg := words.Clip(e, 100)
		if d := q.Get("error_description"); d != "" {
			msg += ": " + words.Clip(d, 300)
		}
		return "", &Problem{Status: http.StatusForbidden, Message: "The identity provider did not sign you in (" + msg + ")."}
	}
	if !SameToken(q.Get("state"), l.State) {
		return again("The sign-in's answer does not belong to the sign-in this browser started.", nil)
	}
	code := q.Get("code")
	if code == "" || len(code) > 4096 {
		return again("The identity provider sent no code.", nil)
	}
	p, err := s.discover()
	if err != nil {
		return "", &Problem{Status: http.StatusServiceUnavailable, Message: "The identity provider cannot be reached; try again in a moment.", Err: err}
	}
	ctx := oidc.ClientContext(r.Context(), s.client)
	tok, err := s.oauth(p).Exchange(ctx, code, oauth2.VerifierOption(l.Verifier))
	if err != nil {
		return "", &Problem{Status: http.StatusBadGateway, Message: "The identity provider refused the sign-in's code.", Err: tokenError(err)}
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return "", &Problem{Status: http.StatusBadGateway, Message: "The identity provider sent no ID token."}
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: s.cfg.ClientID}).Verify(ctx, raw)
	if err != nil {
		return "", &Problem{Status: http.StatusBadGateway, Message: "The identity provider's ID token did not verify.", Err: err}
	}
	if !SameToken(idt.Nonce, l.Nonce) {
		return again("The ID token was not made for this sign-in (its nonce differs).", nil)
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return "", &Problem{Status: http.StatusBadGateway, Message: "The ID token's claims could not be read.", Err: err}
	}
	who, refused := s.identity(claims)
	if refused != "" {
		return "", &Problem{Status: http.StatusForbidden, Message: refused}
	}
	token := NewToken()
	now := s.clock.Now()
	who.ID, who.Subject = store.SessionID(token), idt.Issuer+" "+idt.Subject
	who.CSRF, who.Created, who.Expires = NewToken(), now, now.Add(s.cfg.SessionTTL)
	if err := s.sessions.CreateSession(r.Context(), who); err != nil {
		if errors.Is(err, store.ErrTooManySessions) {
			return "", &Problem{Status: http.StatusServiceUnavailable, Message: "Too many people are signed in to Vigil right now; try again later.", Err: err}
		}
		return "", err
	}
	s.setCookie(w, s.SessionCookie(), token, s.cfg.SessionTTL, http.SameSiteStrictMode)
	return l.Next, nil
}

// identity reads the person's name and groups from the ID token's
// claims, as kube-apiserver's OIDC authenticator does; refused says, for
// the person, why they cannot be signed in.
func (s *Service) identity(claims map[string]any) (who store.Session, refused string) {
	name, _ := claims[s.cfg.UsernameClaim].(string)
	if name == "" {
		return who, fmt.Sprintf("Your ID token has no %q claim, which names you to Kubernetes; ask the administrator which claim to use.", s.cfg.UsernameClaim)
	}
	if s.cfg.UsernameClaim == "email" {
		// kube-apiserver refuses an email that is not verified, and so
		// does Vigil: anyone may claim an unverified address.
		if v, present := claims["email_verified"]; present && v != true {
			return who, "Your email address is not verified by the identity provider."
		}
	}
	var raw []string
	switch g := claims[s.cfg.GroupsClaim].(type) {
	case string:
		raw = []string{g}
	case []any:
		for _, v := range g {
			if str, ok := v.(string); ok {
				raw = append(raw, str)
			}
		}
	}
	if len(raw) > MaxGroups {
		return who, fmt.Sprintf("Your ID token names %d groups, more than Vigil keeps (%d); ask the administrator to send fewer.", len(raw), MaxGroups)
	}
	groups := make([]string, 0, len(raw))
	for _, g := range raw {
		g = s.cfg.GroupsPrefix + g
		if len(g) > MaxNameBytes {
			return who, fmt.Sprintf("A group of yours is longer (%d bytes) than Vigil keeps (%d).", len(g), MaxNameBytes)
		}
		groups = append(groups, g)
	}
	name = s.cfg.UsernamePrefix + name
	if len(name) > MaxNameBytes {
		return who, fmt.Sprintf("Your name (%d bytes) is longer than Vigil keeps (%d).", len(name), MaxNameBytes)
	}
	return store.Session{Username: name, Groups: groups}, ""
}

// tokenError keeps the provider's OAuth error code and description of a
// failed exchange, bounded.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		return fmt.Errorf("token endpoint: %s %s", words.Clip(re.ErrorCode, 100), words.Clip(re.ErrorDescription, 300))
	}
	return err
}

// NewToken returns 24 random bytes, URL-safe: session tokens, CSRF tokens,
// states and nonces.
func NewToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// SameToken compares two tokens in constant time; empty never matches.
func SameToken(a, b string) bool {
	return a != "" && hmac.Equal([]byte(a), []byte(b))
}

// seal encrypts and authenticates v for the login cookie.
func (s *Service) seal(v any) (string, error) { return sealed.Seal(s.sealKey, "login", v) }

// maxLoginCookie bounds the login cookie before it is decoded.
const maxLoginCookie = 1024

func (s *Service) open(value string, v any) error {
	if len(value) > maxLoginCookie {
		return errors.New("login cookie too long")
	}
	return sealed.Open(s.sealKey, "login", value, v)
}
