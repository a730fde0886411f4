package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/smtp"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
	"k8s.io/apimachinery/pkg/util/cache"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

// smtpCredentials is how an email delivery authenticates: a username and a
// password (PLAIN or LOGIN), or a username and an OAuth 2.0 access token
// (XOAUTH2). The zero value does not authenticate.
type smtpCredentials struct {
	mechanism v1.SMTPAuth // auto, plain, login or xoauth2
	user      string
	secret    string // the password, or the access token
	// tokenKey is the token cache's key of an XOAUTH2 token, so a token
	// the server refuses is forgotten.
	tokenKey string
	// cachedToken: the token came from the cache rather than the token
	// endpoint just now.
	cachedToken bool
}

func (c smtpCredentials) none() bool { return c.user == "" && c.secret == "" }

// chooseSMTPAuth picks the mechanism for a server that offers the
// mechanisms in offered (the EHLO AUTH line's parameters): auto prefers
// PLAIN, then LOGIN. A mechanism the server does not offer is an error
// that names what it offers: retrying cannot change it.
func chooseSMTPAuth(c smtpCredentials, host, offered string) (smtp.Auth, error) {
	has := func(m string) bool {
		for _, o := range strings.Fields(offered) {
			if strings.EqualFold(o, m) {
				return true
			}
		}
		return false
	}
	want := c.mechanism
	if want == "" || want == v1.SMTPAuthAuto {
		switch {
		case has("PLAIN"):
			want = v1.SMTPAuthPlain
		case has("LOGIN"):
			want = v1.SMTPAuthLogin
		default:
			return nil, Permanent(fmt.Errorf("the server offers AUTH %s, and neither PLAIN nor LOGIN; set auth to the one to use (xoauth2 needs oauth2 settings)", offered))
		}
	}
	name := strings.ToUpper(string(want))
	if !has(name) {
		return nil, Permanent(fmt.Errorf("the server does not offer AUTH %s (it offers %s)", name, offered))
	}
	switch want {
	case v1.SMTPAuthPlain:
		return smtp.PlainAuth("", c.user, c.secret, host), nil
	case v1.SMTPAuthLogin:
		return &loginAuth{user: c.user, pass: c.secret, host: host}, nil
	case v1.SMTPAuthXOAuth2:
		return &xoauth2Auth{user: c.user, token: c.secret, host: host}, nil
	}
	return nil, Permanent(fmt.Errorf("unknown auth %q (want auto, plain, login or xoauth2)", c.mechanism))
}

// secureEnough is net/smtp's rule for PLAIN, applied to every mechanism:
// credentials go only over TLS, or to this machine.
func secureEnough(server *smtp.ServerInfo, host string) error {
	if server.TLS || host == "localhost" || host == "127.0.0.1" || host == "::1" {
		return nil
	}
	return errors.New("unencrypted connection: credentials are sent only over TLS")
}

// loginAuth is AUTH LOGIN (draft-murchison-sasl-login): the server asks
// for the username, then the password, each base64-encoded. net/smtp has
// no LOGIN; Exchange Online offers LOGIN and XOAUTH2 but not PLAIN.
type loginAuth struct {
	user, pass, host string
	step             int
}

func (a *loginAuth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	if err := secureEnough(server, a.host); err != nil {
		return "", nil, err
	}
	a.step = 0
	return "LOGIN", nil, nil
}

func (a *loginAuth) Next(challenge []byte, more bool) ([]byte, error) {
	if !more {
		return nil, nil
	}
	// The prompts are "Username:" and "Password:", but servers word them
	// as they like; the order is what the mechanism fixes.
	prompt := strings.ToLower(string(challenge))
	a.step++
	switch {
	case strings.HasPrefix(prompt, "user"), a.step == 1 && !strings.HasPrefix(prompt, "pass"):
		return []byte(a.user), nil
	case strings.HasPrefix(prompt, "pass"), a.step == 2:
		return []byte(a.pass), nil
	}
	return nil, fmt.Errorf("unexpected AUTH LOGIN challenge %q", words.Clip(string(challenge), 64))
}

// xoauth2Auth is AUTH XOAUTH2 (Google's and Microsoft's SASL mechanism for
// OAuth 2.0 bearer tokens): one initial response
// "user=<user>^Aauth=Bearer <token>^A^A". A refused token is answered with
// a 334 challenge carrying a JSON error, to which the client sends an
// empty line; the server then replies 535.
type xoauth2Auth struct {
	user, token, host string
}

func (a *xoauth2Auth) Start(server *smtp.ServerInfo) (string, []byte, error) {
	if err := secureEnough(server, a.host); err != nil {
		return "", nil, err
	}
	return "XOAUTH2", []byte("user=" + a.user + "\x01auth=Bearer " + a.token + "\x01\x01"), nil
}

func (a *xoauth2Auth) Next(_ []byte, more bool) ([]byte, error) {
	if more {
		return []byte{}, nil // the error challenge: an empty answer ends it
	}
	return nil, nil
}

// smtpTokens caches the access tokens of XOAUTH2 channels until shortly
// before they expire (oauth2.Token.Valid leaves 10 seconds), so a wave of
// downs asks the token endpoint once. Keyed by everything that makes the
// token (the Channel, the endpoint, the client and its secret, the
// scopes), so an edited Channel or Secret gets a new one; bounded, the
// least recently used going first, as the Channel Secrets' cache.
var smtpTokens = cache.NewLRUExpireCache(maxSMTPTokens)

const maxSMTPTokens = 512

// smtpTokenKeep bounds how long a token without an expiry is kept.
const smtpTokenKeep = time.Hour

// smtpAccessToken returns a valid access token for the channel's oauth2
// settings, from the cache (cached) or the token endpoint, and its cache
// key.
func (d *Delivery) smtpAccessToken(ctx context.Context, o *v1.SMTPOAuth2) (token, key string, cached bool, err error) {
	clientSecret, err := d.secret(ctx, o.ClientSecretRef)
	if err != nil {
		return "", "", false, err
	}
	h := sha256.New()
	for _, part := range append([]string{d.Channel.Namespace, d.Channel.Name, o.TokenURL, o.ClientID, clientSecret}, o.Scopes...) {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	key = hex.EncodeToString(h.Sum(nil))
	if held, ok := smtpTokens.Get(key); ok && held.(*oauth2.Token).Valid() {
		t := held.(*oauth2.Token)
		d.redactDerived(t.AccessToken)
		return t.AccessToken, key, true, nil
	}

	tokenURL, err := parseTarget(o.TokenURL, false)
	if err != nil {
		return "", "", false, err
	}
	if err := d.gate(endpointOf(tokenURL.u)); err != nil {
		return "", "", false, fmt.Errorf("token endpoint %s: %w", tokenURL, err)
	}
	cfg := clientcredentials.Config{
		ClientID:     o.ClientID,
		ClientSecret: clientSecret,
		TokenURL:     tokenURL.u.String(),
		Scopes:       o.Scopes,
		// In the form's body, as Microsoft's and Google's documentation
		// show it; every provider takes it (RFC 6749, 2.3.1).
		AuthStyle: oauth2.AuthStyleInParams,
	}
	// Through the egress guard, like every connection of a delivery.
	client := d.httpClient()
	client.Transport = userAgentTransport{client.Transport}
	t, err := cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, client))
	if err != nil {
		return "", "", false, tokenError(tokenURL, err)
	}
	if t.AccessToken == "" || !validHeaderValue(t.AccessToken) || strings.ContainsAny(t.AccessToken, "\x01 ") {
		return "", "", false, fmt.Errorf("token endpoint %s: the access token is empty or not one line", tokenURL)
	}
	d.redactDerived(t.AccessToken)
	keep := smtpTokenKeep
	if !t.Expiry.IsZero() {
		keep = min(keep, time.Until(t.Expiry))
	}
	smtpTokens.Add(key, t, keep)
	return t.AccessToken, key, false, nil
}

// forgetSMTPToken drops a cached token the SMTP server refused, so the
// next attempt asks for a new one.
func forgetSMTPToken(key string) {
	if key == "" {
		return
	}
	smtpTokens.Remove(key)
}

// tokenError classifies a failure of the token endpoint as d.do does an
// HTTP answer: a 4xx other than 408 and 429 (invalid_client,
// unauthorized_client, invalid_scope) is permanent; the OAuth error code
// and description are kept, bounded.
func tokenError(t target, err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		// A network failure: url.Error repeats the URL, which is fine
		// here (not from a Secret), but keep the wording of the others.
		return fmt.Errorf("token endpoint %s: %w", t, errors.Unwrap(err))
	}
	what := re.ErrorCode
	if re.ErrorDescription != "" {
		what += ": " + re.ErrorDescription
	}
	if what == "" {
		what = string(bytes.TrimSpace(re.Body))
	}
	code := 0
	if re.Response != nil {
		code = re.Response.StatusCode
	}
	e := fmt.Errorf("token endpoint %s answered %d: %s", t, code, words.Clip(what, maxErrorBody))
	if code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests {
		return Permanent(e)
	}
	return e
}

// userAgentTransport sets Vigil's User-Agent on the token requests, as
// d.do does on every other.
type userAgentTransport struct{ base http.RoundTripper }

func (t userAgentTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("User-Agent", UserAgent())
	return t.base.RoundTrip(r)
}
