// Package signin signs people in to the dashboard through an OpenID Connect
// provider (Dex, Keycloak, Entra ID, Google, Okta, ...): the authorization
// code flow with PKCE, the ID token verified by github.com/coreos/go-oidc
// (the verifier Kubernetes' own tooling and oauth2-proxy use: signature
// against the provider's published keys, issuer, audience, expiry) and its
// nonce checked here. Who they are (a username and groups, from the claims
// the administrator names, with kube-apiserver's prefixes) is what package
// access asks Kubernetes RBAC about; Vigil grants nothing itself.
//
// Sessions are kept in the ping store (store.Session), never in the
// cookie: the cookie holds a random token whose SHA-256 names the session,
// so signing out ends it on every replica at once, and ending all of a
// person's sessions ("sign out everywhere") is one delete. No token of the
// provider's is kept after sign-in, none is put in a URL Vigil makes, and
// none is logged.
//
// The few values a sign-in needs between leaving for the provider and
// coming back (state, nonce, PKCE verifier, the page to return to) travel
// in a short-lived cookie sealed with a key derived from the client
// secret, which every replica shares: no server state is kept for a person
// who has not signed in yet, so anonymous requests cost no memory.
package signin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"
	"k8s.io/utils/clock"

	"github.com/vigil-operator/vigil/internal/store"
)

// Config is the administrator's: flags and chart values.
type Config struct {
	// IssuerURL is the provider's issuer; its discovery document is read
	// from IssuerURL/.well-known/openid-configuration.
	IssuerURL string
	// ClientID and ClientSecret are Vigil's registration at the provider.
	ClientID, ClientSecret string
	// RedirectURL is where the provider sends people back:
	// <the dashboard's address>/auth/callback, registered at the provider.
	RedirectURL string
	// Scopes asked for besides "openid" (DefaultScopes when empty); some
	// providers send groups only for a "groups" scope (Dex), others for
	// a setting of the application (Entra ID, Okta).
	Scopes []string
	// UsernameClaim and GroupsClaim name the claims that carry the
	// username and the groups ("email" and "groups" by default), and
	// UsernamePrefix and GroupsPrefix are put before them, as
	// kube-apiserver's --oidc-username-claim, --oidc-groups-claim,
	// --oidc-username-prefix and --oidc-groups-prefix do: set them as the
	// cluster's, and the RoleBindings people already have apply here too.
	UsernameClaim, GroupsClaim   string
	UsernamePrefix, GroupsPrefix string
	// SessionTTL is how long a session lasts (DefaultSessionTTL when 0).
	SessionTTL time.Duration
	// Secure makes the cookies Secure and __Host- (an https:// site).
	Secure bool
}

// Defaults.
const (
	DefaultSessionTTL = 8 * time.Hour
	// loginTTL bounds the time between leaving for the provider and
	// coming back.
	loginTTL = 10 * time.Minute
	// MaxGroups and MaxNameBytes bound what a session keeps of a person:
	// a token with more groups, or a longer name, is refused with a
	// message rather than cut, since a cut list would silently lose the
	// grants of the groups cut off.
	MaxGroups    = store.MaxSessionGroups
	MaxNameBytes = 256
)

// DefaultScopes are asked for when Config.Scopes is empty.
var DefaultScopes = []string{"email", "profile"}

// Sessions is the store's side of sessions.
type Sessions interface {
	CreateSession(ctx context.Context, s store.Session) error
	Session(ctx context.Context, id string, now time.Time) (store.Session, bool, error)
	EndSession(ctx context.Context, id string) error
	EndSessionsOf(ctx context.Context, subject string) (int, error)
}

// Service signs people in and finds their sessions.
type Service struct {
	cfg      Config
	sessions Sessions
	clock    clock.PassiveClock
	// client talks to the provider (discovery, keys, the token
	// endpoint): the administrator's, not a tenant's, so not through the
	// egress guard; bounded in time.
	client *http.Client

	mu       sync.Mutex
	provider *oidc.Provider // once discovered
	// failed and failedAt: the last discovery's failure, given again for
	// discoveryRetry, so that sign-in attempts while the provider is down
	// (anyone may start one) do not each reach out to it.
	failed   error
	failedAt time.Time
	sealKey  []byte
}

// discoveryRetry is how long a failed discovery is not tried again.
const discoveryRetry = 10 * time.Second

// New returns a Service. It does not reach the provider: discovery
// happens at the first sign-in, and is tried again at the next while it
// fails, so a provider that is down when Vigil starts does not keep the
// dashboard down.
func New(cfg Config, sessions Sessions, clk clock.PassiveClock) (*Service, error) {
	switch {
	case cfg.IssuerURL == "":
		return nil, errors.New("the OpenID Connect issuer URL is empty")
	case cfg.ClientID == "":
		return nil, errors.New("the OpenID Connect client ID is empty")
	case cfg.ClientSecret == "":
		return nil, errors.New("the OpenID Connect client secret is empty")
	}
	if u, err := url.Parse(cfg.RedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("the OpenID Connect redirect URL %q is not an absolute http(s) URL", cfg.RedirectURL)
	}
	if cfg.UsernameClaim == "" {
		cfg.UsernameClaim = "email"
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if len(cfg.Scopes) == 0 {
		cfg.Scopes = DefaultScopes
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	key := sha256.Sum256([]byte("vigil sign-in state v1\x00" + cfg.ClientSecret))
	return &Service{cfg: cfg, sessions: sessions, clock: clk, sealKey: key[:],
		client: &http.Client{Timeout: 10 * time.Second}}, nil
}

// discover returns the provider, reading its discovery document once.
func (s *Service) discover() (*oidc.Provider, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.provider != nil {
		return s.provider, nil
	}
	if s.failed != nil && time.Since(s.failedAt) < discoveryRetry {
		return nil, s.failed
	}
	// Not the request's context: a person who leaves must not fail the
	// discovery for the others.
	dctx, cancel := context.WithTimeout(context.Background(), s.client.Timeout)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(dctx, s.client), s.cfg.IssuerURL)
	if err != nil {
		s.failed, s.failedAt = fmt.Errorf("reading the OpenID Connect provider's discovery document: %w", err), time.Now()
		return nil, s.failed
	}
	s.provider, s.failed = p, nil
	return p, nil
}

func (s *Service) oauth(p *oidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID: s.cfg.ClientID, ClientSecret: s.cfg.ClientSecret, RedirectURL: s.cfg.RedirectURL,
		Endpoint: p.Endpoint(), Scopes: append([]string{oidc.ScopeOpenID}, s.cfg.Scopes...),
	}
}

// Person is a signed-in person: their session.
type Person = store.Session

// SessionCookie is the session cookie's name: __Host- binds it to this
// exact origin over HTTPS.
func (s *Service) SessionCookie() string {
	if s.cfg.Secure {
		return "__Host-vigil-person"
	}
	return "vigil_person"
}

func (s *Service) loginCookie() string {
	if s.cfg.Secure {
		return "__Host-vigil-oidc"
	}
	return "vigil_oidc"
}

// Person returns the person a request's session cookie names, if the
// session exists and has not ended; problem says what was wrong with a
// cookie that was sent ("" when none was).
func (s *Service) Person(r *http.Request) (p Person, ok bool, problem string, err error) {
	c, cerr := r.Cookie(s.SessionCookie())
	if errors.Is(cerr, http.ErrNoCookie) || (cerr == nil && c.Value == "") {
		return Person{}, false, "", nil // no cookie: nothing to say
	}
	if cerr != nil {
		return Person{}, false, "Your session is not valid. Sign in again.", nil //nolint:nilerr // a bad cookie is the person's problem, not an error
	}
	if len(c.Value) > 128 {
		return Person{}, false, "Your session is not valid. Sign in again.", nil
	}
	p, ok, err = s.sessions.Session(r.Context(), store.SessionID(c.Value), s.clock.Now())
	if err != nil {
		return Person{}, false, "", err
	}
	if !ok {
		return Person{}, false, "Your session ended. Sign in again.", nil
	}
	return p, true, "", nil
}

// SignOut ends the request's session, or every session of its person
// when everywhere, and clears the cookie.
func (s *Service) SignOut(w http.ResponseWriter, r *http.Request, p Person, everywhere bool) error {
	s.setCookie(w, s.SessionCookie(), "", 0, http.SameSiteStrictMode)
	if everywhere {
		_, err := s.sessions.EndSessionsOf(r.Context(), p.Subject)
		return err
	}
	return s.sessions.EndSession(r.Context(), p.ID)
}

// ClearCookie clears the session cookie of a session that ended.
func (s *Service) ClearCookie(w http.ResponseWriter) {
	s.setCookie(w, s.SessionCookie(), "", 0, http.SameSiteStrictMode)
}

func (s *Service) setCookie(w http.ResponseWriter, name, value string, ttl time.Duration, same http.SameSite) {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: s.cfg.Secure, SameSite: same}
	if ttl > 0 {
		c.MaxAge = int(ttl.Seconds())
	} else {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

// localPath keeps next only if it is a path on this site ("/checks/..."),
// never another origin ("//evil.example", "https://...", "/\evil"), so the
// sign-in cannot be used to send people elsewhere.
func localPath(next string) string {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") || len(next) > 2048 {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return next
}
