package checks

import (
	"crypto/sha1" //nolint:gosec // the reference's unique_key is defined as a SHA-1; it is an identifier, not a secret
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Keys are c's UUID, badge key and unique key; worked out once per
// version of a check the cache holds.
func (d *Door) Keys(c *v1.Check) Keys {
	if k, ok := d.index.keysFor(c); ok {
		return k
	}
	return keysOf(c)
}

// UUIDOf is a check's identity in ping URLs: spec.uuid when the manifest pins
// one, otherwise the object's UID.
func UUIDOf(c *v1.Check) string {
	if c.Spec.UUID != "" {
		return c.Spec.UUID
	}
	return string(c.UID)
}

// PingURL is the URL a check answers to under the server's base URL.
func PingURL(baseURL, uuid string) string { return baseURL + "/ping/" + uuid }

// UniqueKey is the reference's stable read-only identifier: the hex SHA-1 of
// the first 16 hex digits of the UUID (without hyphens).
func UniqueKey(uuid string) string {
	digits := strings.ReplaceAll(uuid, "-", "")
	if len(digits) > 16 {
		digits = digits[:16]
	}
	sum := sha1.Sum([]byte(digits)) //nolint:gosec // see import
	return hex.EncodeToString(sum[:])
}

// BadgeKey is the key in a check's public badge URL (/b/<states>/<key>.svg).
// It is derived from the UUID one way, so a badge, which is public, never
// reveals the ping URL; it is formatted as a UUID, as the reference's is.
func BadgeKey(uuid string) string {
	sum := sha256.Sum256([]byte("vigil-badge:" + uuid))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

var nameUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// ObjectName is the readable, deterministic object name Vigil gives a check
// it creates (through the API or slug auto-provisioning): a DNS-safe form of
// base (a slug or name; accents dropped, as the reference's slugify does)
// and the first 8 hex digits of its UUID, such as "nightly-backup-5d5f3e70".
// The UUID part makes it unique.
func ObjectName(base, uuid string) string {
	base = strings.Map(func(r rune) rune {
		if r >= utf8.RuneSelf {
			return -1 // an accent, once NFKD has split it from its letter
		}
		return r
	}, norm.NFKD.String(base))
	base = strings.ToLower(strings.ReplaceAll(base, "_", "-"))
	base = strings.Trim(nameUnsafe.ReplaceAllString(base, "-"), "-")
	if len(base) > 50 {
		base = strings.Trim(base[:50], "-")
	}
	if base == "" {
		base = "check"
	}
	return base + "-" + strings.ReplaceAll(uuid, "-", "")[:8]
}
