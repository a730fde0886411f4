// Package sealed keeps a value in a cookie that only the server can read
// and nobody can change: the value as JSON, encrypted and authenticated
// with AES-256-GCM (the standard library's), bound to a context (the
// AEAD's additional data, so a value sealed for one purpose or project
// does not open for another), as unpadded base64url. The dashboard's
// API-key sessions and the OpenID Connect sign-in's state use it.
package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
)

// ErrNotSealed is Open's answer for a value it did not seal with that key
// and context, or one changed since.
var ErrNotSealed = errors.New("not a sealed value")

// Seal returns v sealed with key (32 bytes) for context.
func Seal(key []byte, context string, v any) (string, error) {
	a, err := aead(key)
	if err != nil {
		return "", err
	}
	plain, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, a.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(a.Seal(nonce, nonce, plain, []byte(context))), nil
}

// Open authenticates and decrypts value into v. Callers bound value's
// length first: it comes from a request.
func Open(key []byte, context, value string, v any) error {
	a, err := aead(key)
	if err != nil {
		return err
	}
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < a.NonceSize()+a.Overhead() {
		return ErrNotSealed
	}
	plain, err := a.Open(nil, raw[:a.NonceSize()], raw[a.NonceSize():], []byte(context))
	if err != nil || json.Unmarshal(plain, v) != nil {
		return ErrNotSealed
	}
	return nil
}

func aead(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}
