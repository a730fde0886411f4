// Package oidcprovider is a real OpenID Connect provider on loopback, for
// the tests of signing in to Vigil's dashboard (authorization code flow
// with PKCE; Kubernetes RBAC then decides on the user's email and groups).
// A mock would only answer what the dashboard expects; this provider is
// zitadel's OpenID-certified library (github.com/zitadel/oidc/v3, package
// op) with its example in-memory storage and login UI, so discovery, the
// keys, PKCE, nonces and token signatures are the real protocol. Dex, the
// provider clusters usually run, cannot be built here.
//
// The provider is Dex-like where the dashboard will depend on it: the ID
// token carries email, email_verified and preferred_username (scopes
// "email" and "profile") and the user's groups in the "groups" claim, which
// like Dex's is only issued when the "groups" scope is requested. The
// userinfo endpoint answers the same claims. The subject ("sub") is the
// username.
//
// Sign-in: the authorization endpoint (discovery names it; it is
// Issuer+"/auth") redirects the browser to the login page,
// Issuer+LoginPath+"?authRequestID=<id>", an HTML form that POSTs to
// LoginPath with the fields FieldUsername and FieldPassword (input ids
// are the same) and a hidden FieldRequestID, submitted by the only
// button (type=submit). A wrong password renders the form again, with the
// message in a red paragraph; a right one redirects to the client's
// redirect URI with code and state. Go tests use SignIn; browser tests
// fill the form.
//
// Providers are independent (each has its own storage, clients, RSA
// signing key and token encryption key), so a test binary may run several
// at once.
package oidcprovider

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// The login page, as exampleop serves it.
const (
	// LoginPath is the login page's path under the issuer: GET shows the
	// form, POST checks it.
	LoginPath = "/login/username"
	// FieldUsername, FieldPassword and FieldRequestID are the form's field
	// names (the first two are also the inputs' ids).
	FieldUsername  = "username"
	FieldPassword  = "password"
	FieldRequestID = "id"
	// ScopeGroups is the scope that asks for the "groups" claim.
	ScopeGroups = "groups"
	// ClaimGroups is the claim carrying the user's groups.
	ClaimGroups = "groups"
)

// User is a person the provider knows: they sign in with Username and
// Password; the ID token carries Email (verified), Username as
// preferred_username and subject, and Groups in the "groups" claim.
type User struct {
	Username, Password, Email string
	Groups                    []string
}

// Client is a relying party registered with the provider: confidential
// (its secret is sent with HTTP Basic authentication), authorization code
// flow, PKCE (S256) allowed and, when the authorization request carried a
// challenge, required. Its redirect URIs must match exactly and may be
// http.
type Client struct {
	ID, Secret   string
	RedirectURIs []string
}

// Provider is a running provider.
type Provider struct {
	// Issuer is http://127.0.0.1:<port>, without a trailing slash.
	Issuer string

	srv      *http.Server
	served   chan struct{}
	stopCtx  func() bool
	stopOnce sync.Once
}

// Start starts a provider on a loopback port with these users and clients;
// it stops when ctx ends or Close is called.
func Start(ctx context.Context, users []User, clients []Client) (*Provider, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	st, err := newStore(users, clients)
	if err != nil {
		return nil, err
	}
	l, err := new(net.ListenConfig).Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("oidcprovider: listen: %w", err)
	}
	issuer := "http://" + l.Addr().String()
	// The example's token encryption key is a constant: each provider
	// gets its own, as it gets its own signing key (the storage makes one),
	// so that no provider accepts another's tokens.
	var key [32]byte
	_, _ = rand.Read(key[:])
	// No logger: exampleop would make it the process's default. It logs
	// each request with slog's default logger.
	router := exampleop.SetupServer(issuer, st, nil, false,
		op.WithCrypto(op.NewAES256GCMCrypto(key, uuid.NewString())))
	p := &Provider{
		Issuer: issuer,
		srv:    &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second},
		served: make(chan struct{}),
	}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(l)
	}()
	p.stopCtx = context.AfterFunc(ctx, p.stop)
	return p, nil
}

// Close stops the provider and returns when its port is closed. It may be
// called more than once.
func (p *Provider) Close() {
	p.stopCtx()
	p.stop()
}

func (p *Provider) stop() {
	p.stopOnce.Do(func() {
		_ = p.srv.Close()
		<-p.served
	})
}

var loginError = regexp.MustCompile(`(?s)<p style="color:red[^"]*">(.*?)</p>`)

// SignIn signs username in through the provider's login page, as a browser
// would, for the authorization URL authURL (as a relying party built it):
// an HTTP client with a cookie jar follows the provider's redirects, posts
// the form, and stops at the redirect that leaves the provider. It returns
// that redirect, to the client's redirect URI with code and state, without
// following it. A refused sign-in, or an error the provider sends to the
// redirect URI, is an error.
func (p *Provider) SignIn(ctx context.Context, authURL, username, password string) (*url.URL, error) {
	issuer, err := url.Parse(p.Issuer)
	if err != nil {
		return nil, err
	}
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{
		Jar:     jar,
		Timeout: 30 * time.Second,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if req.URL.Scheme != issuer.Scheme || req.URL.Host != issuer.Host {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("too many redirects")
			}
			return nil
		},
	}
	// do sends req, following the provider's redirects, and reads the
	// reply: where it was (at), its status and body, and where it
	// redirects (to) if it leaves the provider.
	type reply struct {
		at, to *url.URL
		status string
		ok     bool
		body   []byte
	}
	do := func(req *http.Request) (reply, error) {
		resp, err := hc.Do(req)
		if err != nil {
			return reply{}, err
		}
		defer func() { _ = resp.Body.Close() }()
		r := reply{at: resp.Request.URL, status: resp.Status, ok: resp.StatusCode == http.StatusOK}
		if r.body, err = io.ReadAll(resp.Body); err != nil {
			return reply{}, err
		}
		if resp.StatusCode/100 == 3 {
			r.to, err = resp.Location()
		}
		return r, err
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return nil, err
	}
	r, err := do(req)
	if err != nil {
		return nil, fmt.Errorf("oidcprovider: authorization request: %w", err)
	}
	if r.to != nil {
		// An error; a code would need a session, which this provider
		// does not keep.
		if err := redirectError(r.to, "before the login page"); err != nil {
			return nil, err
		}
		return r.to, nil
	}
	id := r.at.Query().Get("authRequestID")
	if !r.ok || r.at.Path != LoginPath || id == "" {
		return nil, fmt.Errorf("oidcprovider: the authorization request did not lead to the login page: %s %s: %.300s",
			r.at.Redacted(), r.status, r.body)
	}

	form := url.Values{FieldRequestID: {id}, FieldUsername: {username}, FieldPassword: {password}}
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, p.Issuer+LoginPath, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if r, err = do(req); err != nil {
		return nil, fmt.Errorf("oidcprovider: login: %w", err)
	}
	if r.to == nil {
		if m := loginError.FindSubmatch(r.body); m != nil && len(m[1]) > 0 {
			return nil, fmt.Errorf("oidcprovider: sign-in of %q refused: %s", username, html.UnescapeString(string(m[1])))
		}
		return nil, fmt.Errorf("oidcprovider: sign-in of %q: %s %s: %.300s", username, r.at.Redacted(), r.status, r.body)
	}
	if err := redirectError(r.to, "after the login"); err != nil {
		return nil, err
	}
	return r.to, nil
}

// redirectError is the error an OAuth error redirect carries, if it does.
func redirectError(to *url.URL, when string) error {
	q := to.Query()
	if e := q.Get("error"); e != "" {
		return fmt.Errorf("oidcprovider: the provider redirected %s with error %s: %s", when, e, q.Get("error_description"))
	}
	if q.Get("code") == "" {
		return fmt.Errorf("oidcprovider: the provider redirected %s to %s, without a code", when, to.Redacted())
	}
	return nil
}

// store is the example storage with this package's additions: the groups
// claim, the claims of scopes email and profile in the ID token, and
// nothing of the example's own service accounts.
type store struct {
	*storage.Storage
	groups map[string][]string // by user ID (the username)

	mu           sync.Mutex
	accessScopes map[string][]string // access token ID → scopes, for userinfo
}

func newStore(users []User, clients []Client) (*store, error) {
	us := userStore{}
	groups := map[string][]string{}
	for _, u := range users {
		if u.Username == "" || u.Password == "" {
			return nil, errors.New("oidcprovider: a user needs a username and a password")
		}
		if _, dup := us[u.Username]; dup {
			return nil, fmt.Errorf("oidcprovider: user %q given twice", u.Username)
		}
		us[u.Username] = &storage.User{
			ID:                u.Username,
			Username:          u.Username,
			Password:          u.Password,
			FirstName:         u.Username,
			Email:             u.Email,
			EmailVerified:     true,
			PreferredLanguage: language.English,
		}
		groups[u.Username] = slices.Clone(u.Groups)
	}
	// Each provider has its own client map: storage.RegisterClients would
	// fill the example's package-level one, shared by every provider.
	cs := map[string]*storage.Client{}
	for _, c := range clients {
		if c.ID == "" || c.Secret == "" || len(c.RedirectURIs) == 0 {
			return nil, fmt.Errorf("oidcprovider: client %q needs an ID, a secret and redirect URIs", c.ID)
		}
		if _, dup := cs[c.ID]; dup {
			return nil, fmt.Errorf("oidcprovider: client %q given twice", c.ID)
		}
		cs[c.ID] = storage.WebClient(c.ID, c.Secret, c.RedirectURIs...)
	}
	return &store{
		Storage:      storage.NewStorageWithClients(us, cs),
		groups:       groups,
		accessScopes: map[string][]string{},
	}, nil
}

// GetClientByClientID wraps the example's web client: see client.
func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return client{c}, nil
}

// SetUserinfoFromRequest is what the op package calls for the ID token's
// claims (GetPrivateClaimsFromScopes is only for JWT access tokens, which
// these clients do not get).
func (s *store) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	s.addGroups(info, req.GetSubject(), scopes)
	return nil
}

// SetUserinfoFromToken answers the userinfo endpoint.
func (s *store) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, info, tokenID, subject, origin); err != nil {
		return err
	}
	s.mu.Lock()
	scopes := s.accessScopes[tokenID]
	s.mu.Unlock()
	s.addGroups(info, info.Subject, scopes)
	return nil
}

func (s *store) addGroups(info *oidc.UserInfo, subject string, scopes []string) {
	// The example names a user "First Last"; these have no last name.
	info.Name = strings.TrimSpace(info.Name)
	if slices.Contains(scopes, ScopeGroups) {
		groups := s.groups[subject]
		if groups == nil {
			groups = []string{}
		}
		info.AppendClaims(ClaimGroups, groups)
	}
}

// CreateAccessToken and CreateAccessAndRefreshTokens note the scopes of
// the access tokens, which the example keeps to itself.
func (s *store) CreateAccessToken(ctx context.Context, req op.TokenRequest) (string, time.Time, error) {
	id, exp, err := s.Storage.CreateAccessToken(ctx, req)
	s.noteScopes(id, req, err)
	return id, exp, err
}

func (s *store) CreateAccessAndRefreshTokens(ctx context.Context, req op.TokenRequest, current string) (string, string, time.Time, error) {
	id, refresh, exp, err := s.Storage.CreateAccessAndRefreshTokens(ctx, req, current)
	s.noteScopes(id, req, err)
	return id, refresh, exp, err
}

func (s *store) noteScopes(id string, req op.TokenRequest, err error) {
	if err != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.accessScopes[id] = req.GetScopes()
}

// ClientCredentials refuses the example's service account (a fixed client
// "sid1" with a published secret).
func (s *store) ClientCredentials(context.Context, string, string) (op.Client, error) {
	return nil, errors.New("oidcprovider: no client credentials grant")
}

// GetKeyByIDAndClientID refuses the example's service key (its private
// key is published): no JWT profile grant nor private_key_jwt.
func (s *store) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("oidcprovider: no client keys")
}

// client is the example's web client, changed in two ways. It allows the
// "groups" scope (the op package drops the scopes a client does not
// allow). And it puts the claims of the scopes email and profile in the
// ID token even though an access token is issued: the example does not,
// as OpenID Connect Core 5.4 says, but Dex and most providers do, and the
// dashboard reads them there.
type client struct{ op.Client }

func (c client) IsScopeAllowed(scope string) bool {
	return scope == ScopeGroups || c.Client.IsScopeAllowed(scope)
}

func (c client) IDTokenUserinfoClaimsAssertion() bool { return true }

// userStore implements storage.UserStore on a map by username (the ID).
type userStore map[string]*storage.User

func (u userStore) GetUserByID(id string) *storage.User             { return u[id] }
func (u userStore) GetUserByUsername(username string) *storage.User { return u[username] }

// ExampleClientID names the example's service client; there is none.
func (u userStore) ExampleClientID() string { return "" }
