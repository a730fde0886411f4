package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"time"

	"github.com/vigil-operator/vigil/internal/sealed"
)

// A session is sealed into its cookie, so that every replica can open it
// and none keeps state: the cookie is the project's namespace in clear and,
// encrypted and authenticated with a key derived from the project's
// signing secret (package sealed), the API key, the
// session's expiry and its CSRF token. The key is never readable from the
// cookie, a session cannot be extended or moved to another project without
// the secret, and deleting the API key ends every session made with it,
// because each request authenticates the key again.

// session is what a sealed cookie holds.
type session struct {
	Key     string `json:"k"`
	Expires int64  `json:"e"` // UNIX seconds
	CSRF    string `json:"c"`
}

// maxCookieLen bounds a cookie before it is decoded: a sealed session is
// well under 400 bytes.
const maxCookieLen = 1024

var errBadSession = errors.New("not a session")

// sessionKey derives the session sealing key of a project from its secret.
func sessionKey(secret []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("vigil dashboard session v1"))
	return m.Sum(nil)
}

// seal returns the cookie value of s for the project in namespace: the
// namespace in clear, then s sealed for it.
func seal(secret []byte, namespace string, s session) (string, error) {
	body, err := sealed.Seal(sessionKey(secret), namespace, s)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString([]byte(namespace)) + "." + body, nil
}

// cookieNamespace reads the project a cookie claims, before it is opened.
func cookieNamespace(value string) (string, error) {
	if len(value) > maxCookieLen {
		return "", errBadSession
	}
	ns, _, ok := strings.Cut(value, ".")
	if !ok {
		return "", errBadSession
	}
	b, err := base64.RawURLEncoding.DecodeString(ns)
	if err != nil || len(b) == 0 || len(b) > 63 {
		return "", errBadSession
	}
	return string(b), nil
}

// open authenticates and decrypts a cookie value sealed for namespace.
func open(secret []byte, namespace, value string) (session, error) {
	var s session
	if len(value) > maxCookieLen {
		return s, errBadSession
	}
	_, body, ok := strings.Cut(value, ".")
	if !ok {
		return s, errBadSession
	}
	if err := sealed.Open(sessionKey(secret), namespace, body, &s); err != nil {
		if errors.Is(err, sealed.ErrNotSealed) {
			return session{}, errBadSession
		}
		return session{}, err
	}
	return s, nil
}

// expired reports whether the session has ended at now.
func (s session) expired(now time.Time) bool { return now.Unix() >= s.Expires }
