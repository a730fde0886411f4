package dashboard

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// A session is sealed into its cookie, so that every replica can open it
// and none keeps state: the cookie is the project's namespace in clear and,
// encrypted and authenticated with a key derived from the project's
// signing secret (AES-256-GCM from the standard library), the API key, the
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

func aead(secret []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(sessionKey(secret))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal returns the cookie value of s for the project in namespace.
func seal(secret []byte, namespace string, s session) (string, error) {
	a, err := aead(secret)
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	sealed := a.Seal(nonce, nonce, plain, []byte(namespace))
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(namespace)) + "." + enc.EncodeToString(sealed), nil
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
	_, sealed, ok := strings.Cut(value, ".")
	if !ok {
		return s, errBadSession
	}
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil {
		return s, errBadSession
	}
	a, err := aead(secret)
	if err != nil {
		return s, err
	}
	if len(raw) < a.NonceSize()+a.Overhead() {
		return s, errBadSession
	}
	plain, err := a.Open(nil, raw[:a.NonceSize()], raw[a.NonceSize():], []byte(namespace))
	if err != nil {
		return s, errBadSession
	}
	if err := json.Unmarshal(plain, &s); err != nil {
		return s, errBadSession
	}
	return s, nil
}

// expired reports whether the session has ended at now.
func (s session) expired(now time.Time) bool { return now.Unix() >= s.Expires }

// newToken returns a random token for CSRF protection.
func newToken() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// sameToken compares two CSRF tokens in constant time; empty never matches.
func sameToken(a, b string) bool {
	return a != "" && hmac.Equal([]byte(a), []byte(b))
}
