// Package project holds what makes a namespace a Vigil project: its API keys,
// ping key and badge key, kept in a labelled Secret in that namespace.
//
// API keys are stored hashed. A key is 32 characters, "hcw_" (read-write) or
// "hcr_" (read-only) followed by 28 random URL-safe characters, as the
// reference service issues them, so clients that check the key's shape keep
// working. Because the keys are random (168 bits), a plain SHA-256 is enough
// to store them: there is nothing to brute-force. Plaintext keys are also
// accepted, so a project migrating from Healthchecks keeps its existing keys.
package project

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// Labels and data keys of a project Secret.
const (
	// SecretLabel marks a Secret as holding a project's keys; its value is
	// "true". The manager's cache sees only Secrets with this label (and
	// those Channels reference), not every Secret in the cluster.
	SecretLabel = "monitoring.vigil.dev/project"
	// DefaultSecretName is the name `vigil keys create` gives the Secret.
	DefaultSecretName = "vigil-project"

	// DataReadWriteKeys lists the read-write API keys, one per line.
	DataReadWriteKeys = "read-write-keys"
	// DataReadOnlyKeys lists the read-only API keys, one per line.
	DataReadOnlyKeys = "read-only-keys"
	// DataPingKey is the project's ping key, for slug ping URLs.
	DataPingKey = "ping-key"
	// DataBadgeKey is the project's badge key (the <project_token> of badge URLs).
	DataBadgeKey = "badge-key"
	// DataSigningSecret is the secret badge URL signatures are derived from.
	DataSigningSecret = "signing-secret"
)

// Access is what a presented API key may do.
type Access int

const (
	// NoAccess: the key is not one of the project's.
	NoAccess Access = iota
	// ReadOnly: the key may read checks, flips and badges, without secrets.
	ReadOnly
	// ReadWrite: the key may do everything in its project.
	ReadWrite
)

func (a Access) String() string {
	switch a {
	case ReadOnly:
		return "read-only"
	case ReadWrite:
		return "read-write"
	default:
		return "none"
	}
}

const (
	readWritePrefix = "hcw_"
	readOnlyPrefix  = "hcr_"
	// KeyLength is the length of every API key, as the reference requires.
	KeyLength  = 32
	hashPrefix = "sha256:"
	labelLen   = 12 // "hcw_" plus 8 characters identify a key in listings
)

// NewAPIKey returns a fresh API key and the line that stores it (its label
// and hash) in the project Secret.
func NewAPIKey(access Access) (key, stored string, err error) {
	prefix := readWritePrefix
	if access == ReadOnly {
		prefix = readOnlyPrefix
	}
	token, err := randomToken(28)
	if err != nil {
		return "", "", err
	}
	key = prefix + token
	return key, StoredForm(key), nil
}

// StoredForm is the line a key is stored as: its label and its SHA-256.
func StoredForm(key string) string {
	sum := sha256.Sum256([]byte(key))
	return label(key) + " " + hashPrefix + hex.EncodeToString(sum[:])
}

// NewPingKey returns a fresh 22-character lowercase ping key.
func NewPingKey() (string, error) {
	t, err := randomToken(22)
	return strings.ToLower(t), err
}

// randomToken returns n URL-safe base64 characters without '-' and '_', as
// the reference does, so keys survive double-click selection and slug rules.
func randomToken(n int) (string, error) {
	for {
		buf := make([]byte, n) // n bytes give more than n characters
		if _, err := rand.Read(buf); err != nil {
			return "", fmt.Errorf("reading random bytes: %w", err)
		}
		s := base64.RawURLEncoding.EncodeToString(buf)[:n]
		if !strings.ContainsAny(s, "-_") {
			return s, nil
		}
	}
}

// KeyLabel names an API key without giving it away, as listings and
// Events do: its first 12 characters, such as "hcw_1234abcd".
func KeyLabel(key string) string { return label(key) }

func label(key string) string {
	if len(key) > labelLen {
		return key[:labelLen]
	}
	return key
}

// StoredKey is one API key as the project Secret holds it.
type StoredKey struct {
	// Label identifies the key in listings: its first 12 characters.
	Label string
	// Hashed is true for a SHA-256 entry, false for a plaintext key.
	Hashed bool
	value  []byte // the digest, or the plaintext key
}

// identity is what the key is, whatever form it is stored in: its SHA-256.
func (k StoredKey) identity() string {
	if k.Hashed {
		return "api:" + hex.EncodeToString(k.value)
	}
	sum := sha256.Sum256(k.value)
	return "api:" + hex.EncodeToString(sum[:])
}

// ParseKeys reads the lines of a DataReadWriteKeys or DataReadOnlyKeys
// entry. A line is either "<label> sha256:<hex>" or a plaintext key; blank
// lines and lines starting with # are skipped, as are malformed ones. It
// reads every line: it is for `vigil keys list`, which reads one Secret
// the user asked for; the registry reads through a lineBudget.
func ParseKeys(data []byte) []StoredKey {
	keys, _, _ := parseKeysUpTo(data, &lineBudget{keys: -1, others: -1})
	return keys
}

// otherLineAllowance is how many lines that are not keys (comments, blank
// and malformed lines) a namespace's project Secrets may hold beyond one
// per key the limit allows: room for a comment on every key and then some.
const otherLineAllowance = 100

// lineBudget bounds what reading one namespace's key lines costs: at most
// keys key lines count, and at most others lines that are not keys (blank
// ones included) are read past; a negative figure is no bound. Both bounds are needed: a
// bound on keys alone lets a Secret of a megabyte of comment lines be read
// to its end, on every event (issue #24's follow-up review measured half a
// second a rebuild for 20 such Secrets).
type lineBudget struct{ keys, others int }

// newLineBudget is the budget of a namespace whose key limit is limit.
func newLineBudget(limit int) *lineBudget {
	return &lineBudget{keys: limit, others: limit + otherLineAllowance}
}

// stopCause tells why parseKeysUpTo stopped before the end of an entry.
type stopCause int

const (
	readAll    stopCause = iota
	keyLimit             // the key budget was spent
	otherLimit           // the budget of lines that are not keys was spent
)

// maxBlankTail is the longest unread tail of blank space that does not
// count as lines left unread: a trailing newline or two is not a cut, and
// telling a megabyte of blank space from lines is not worth its scan.
const maxBlankTail = 4 << 10

// parseKeysUpTo reads keys as ParseKeys does, spending b, and stops at the
// first key line past the key budget or the first other line past the
// other lines' budget: a Secret of a megabyte of lines past a project's
// limits costs no more than the lines it may hold, and one more. stoppedAt
// is the line (from 1) where reading stopped with lines left unread, 0
// when the whole entry was read (or only a short tail of blank space was
// left).
func parseKeysUpTo(data []byte, b *lineBudget) (keys []StoredKey, stoppedAt int, cause stopCause) {
	for line := 1; len(data) > 0; line++ {
		text, rest := data, []byte(nil)
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			text, rest = data[:i], data[i+1:]
		}
		k, isKey := parseKeyLine(text)
		switch {
		case isKey && b.keys == 0:
			return keys, line, keyLimit
		case !isKey && b.others == 0:
			if len(data) <= maxBlankTail && len(bytes.TrimSpace(data)) == 0 {
				return keys, 0, readAll
			}
			return keys, line, otherLimit
		case isKey:
			keys = append(keys, k)
			b.keys--
		default:
			b.others--
		}
		data = rest
	}
	return keys, 0, readAll
}

// maxKeyLine bounds a key line: a stored key is about 85 characters with a
// label of 12; longer lines are malformed.
const maxKeyLine = 1024

// parseKeyLine reads one line: a key, or nothing (blank, comment,
// malformed).
func parseKeyLine(text []byte) (StoredKey, bool) {
	if len(text) > maxKeyLine {
		return StoredKey{}, false // no key is this long: not worth a copy
	}
	line := strings.TrimSpace(string(text))
	if line == "" || strings.HasPrefix(line, "#") {
		return StoredKey{}, false
	}
	fields := strings.Fields(line)
	switch {
	case len(fields) == 2 && strings.HasPrefix(fields[1], hashPrefix):
		digest, err := hex.DecodeString(strings.TrimPrefix(fields[1], hashPrefix))
		if err != nil || len(digest) != sha256.Size {
			return StoredKey{}, false
		}
		return StoredKey{Label: fields[0], Hashed: true, value: digest}, true
	case len(fields) == 1 && len(fields[0]) == KeyLength:
		return StoredKey{Label: label(fields[0]), value: []byte(fields[0])}, true
	}
	return StoredKey{}, false
}

// Keys are a project's API keys.
type Keys struct {
	ReadWrite []StoredKey
	ReadOnly  []StoredKey
}

// KeysFromSecretData reads the API keys from a project Secret's data.
func KeysFromSecretData(data map[string][]byte) Keys {
	return Keys{
		ReadWrite: ParseKeys(data[DataReadWriteKeys]),
		ReadOnly:  ParseKeys(data[DataReadOnlyKeys]),
	}
}

// Merge adds other's keys to k (a project may have several labelled Secrets).
func (k Keys) Merge(other Keys) Keys {
	return Keys{
		ReadWrite: append(append([]StoredKey(nil), k.ReadWrite...), other.ReadWrite...),
		ReadOnly:  append(append([]StoredKey(nil), k.ReadOnly...), other.ReadOnly...),
	}
}

// Match tells what a presented key may do. Every stored key is compared, in
// constant time, whatever matches first, so timing reveals nothing about
// which keys exist. Keys not 32 characters long never match, as in the
// reference.
func (k Keys) Match(presented string) Access {
	if len(presented) != KeyLength {
		return NoAccess
	}
	digest := sha256.Sum256([]byte(presented))
	rw := matchAny(k.ReadWrite, presented, digest[:])
	ro := matchAny(k.ReadOnly, presented, digest[:])
	switch {
	case rw:
		return ReadWrite
	case ro:
		return ReadOnly
	default:
		return NoAccess
	}
}

func matchAny(keys []StoredKey, presented string, digest []byte) bool {
	found := 0
	for _, sk := range keys {
		if sk.Hashed {
			found |= subtle.ConstantTimeCompare(sk.value, digest)
		} else {
			found |= subtle.ConstantTimeCompare(sk.value, []byte(presented))
		}
	}
	return found == 1
}

// AppendKey returns data with the stored form of a key added as a new line.
func AppendKey(data []byte, stored string) []byte {
	out := bytes.TrimRight(data, "\n")
	if len(out) > 0 {
		out = append(out, '\n')
	}
	return append(append(out, stored...), '\n')
}
