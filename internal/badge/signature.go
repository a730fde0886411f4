package badge

import (
	"crypto/hmac"
	"crypto/sha1" // the reference's scheme is HMAC-SHA1; changing it would break every issued URL
	"crypto/subtle"
	"encoding/base64"
)

// SignatureLen is the number of signature characters in a badge URL and the
// number compared when a URL is verified.
const SignatureLen = 8

// TwoStateSuffix is appended to the signature segment of two-state badge URLs.
const TwoStateSuffix = "-2"

// AllTag is the pseudo-tag of the badge that covers every check in the project.
const AllTag = "*"

// Signature returns the 8-character signature of tag for the project with
// the given badge key and signing secret, as the reference computes it with
// SECRET_KEY = signingSecret. Use [AllTag] for the all-checks badge.
func Signature(badgeKey, signingSecret, tag string) string {
	return fullSignature(badgeKey, signingSecret, tag)[:SignatureLen]
}

// fullSignature is Django's base64_hmac(salt=badgeKey, value=tag,
// key=signingSecret): URL-safe base64 without padding of
// HMAC-SHA1(SHA1(badgeKey + signingSecret), tag). It is 27 characters.
func fullSignature(badgeKey, signingSecret, tag string) string {
	h := sha1.New()
	h.Write([]byte(badgeKey))
	h.Write([]byte(signingSecret))
	mac := hmac.New(sha1.New, h.Sum(nil))
	mac.Write([]byte(tag))
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// verify reports whether the first 8 characters of sig are the signature of
// tag, in constant time. A sig shorter than 8 characters never verifies.
func verify(badgeKey, signingSecret, tag, sig string) bool {
	want := Signature(badgeKey, signingSecret, tag)
	if len(sig) < SignatureLen {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(sig[:SignatureLen])) == 1
}

// ValidBadgeKey reports whether s can be used as a project badge key: the
// reference routes the first segment with Django's slug converter
// ([-a-zA-Z0-9_]+), so a key outside that set yields URLs that never route.
// Vigil generates UUIDs, which qualify; a hand-made Secret might not.
func ValidBadgeKey(s string) bool {
	return isSlug(s)
}
