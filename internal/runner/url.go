package runner

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// Kind is what a ping says: the path suffix after the check's ping URL.
type Kind string

// The ping kinds with a fixed suffix. Exit statuses are built with
// [ExitStatus].
const (
	// Success is a plain ping (no suffix).
	Success Kind = ""
	// Start marks the start of a run (/start).
	Start Kind = "start"
	// Fail reports a failure (/fail).
	Fail Kind = "fail"
	// Log records a message without changing the check's state (/log).
	Log Kind = "log"
)

// MaxExitStatus is the largest exit status the ping endpoint accepts.
const MaxExitStatus = 255

// ExitStatus returns the kind reporting exit status code: 0 is a success,
// 1..255 a failure. It returns an error outside 0..255, which the server
// would reject with 400.
func ExitStatus(code int) (Kind, error) {
	if code < 0 || code > MaxExitStatus {
		return "", fmt.Errorf("exit status %d is outside 0..%d", code, MaxExitStatus)
	}
	return Kind(strconv.Itoa(code)), nil
}

// CheckUUID reports whether s is a check UUID (36 characters, either case)
// and returns it in the canonical lower-case form the server's routes
// match.
func CheckUUID(s string) (string, bool) {
	id, err := uuid.Parse(s)
	if err != nil || len(s) != 36 {
		return "", false
	}
	return id.String(), true
}

// ResolveURL returns the ping URL of a check, without suffix.
//
// check is either a full http(s) URL, used as is, or a check UUID, or
// "<ping-key>/<slug>"; the latter two are appended to base + "/ping/". base
// is the Vigil server's URL (typically $VIGIL_URL) and may carry a path
// prefix. A UUID is sent in its canonical lower-case form, as the server's
// route only matches that.
func ResolveURL(check, base string) (string, error) {
	check = strings.TrimSpace(check)
	if check == "" {
		return "", errors.New("no check given: pass a ping URL, a check UUID or <ping-key>/<slug>")
	}
	if strings.Contains(check, "://") {
		u, err := parseHTTPURL(check)
		if err != nil {
			return "", fmt.Errorf("check URL: %w", err)
		}
		return u.String(), nil
	}

	var segments []string
	if id, ok := CheckUUID(check); ok {
		segments = []string{id}
	} else {
		key, slug, ok := strings.Cut(check, "/")
		if !ok || key == "" || slug == "" || strings.ContainsAny(slug, "/?#") || strings.ContainsAny(key, "?#") {
			return "", fmt.Errorf("check %q is neither an http(s) URL, a UUID nor <ping-key>/<slug>", check)
		}
		segments = []string{key, slug}
	}
	if base == "" {
		return "", errors.New("no Vigil URL to send the ping to: set $VIGIL_URL or --url, or give the check's full ping URL")
	}
	u, err := parseHTTPURL(base)
	if err != nil {
		return "", fmt.Errorf("vigil URL: %w", err)
	}
	return u.JoinPath(append([]string{"ping"}, segments...)...).String(), nil
}

// PingURL returns checkURL (from [ResolveURL]) with kind's suffix appended to
// the path and, when rid is not empty, the rid query parameter set. Other
// query parameters (such as create=1) are kept. rid must be a UUID; it is sent
// in canonical form.
func PingURL(checkURL string, kind Kind, rid string) (string, error) {
	u, err := parseHTTPURL(checkURL)
	if err != nil {
		return "", err
	}
	if kind != Success {
		u = u.JoinPath(string(kind))
	}
	if rid != "" {
		canonical, err := CanonicalRunID(rid)
		if err != nil {
			return "", err
		}
		q := u.Query()
		q.Set("rid", canonical)
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// CanonicalRunID validates a run id and returns it in the canonical
// lower-case hyphenated form the server stores.
func CanonicalRunID(rid string) (string, error) {
	id, err := uuid.Parse(rid)
	if err != nil {
		return "", fmt.Errorf("run id %q is not a UUID", rid)
	}
	return id.String(), nil
}

// NewRunID returns a fresh random run id.
func NewRunID() string { return uuid.NewString() }

func parseHTTPURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%q: only http and https URLs are supported", s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%q has no host", s)
	}
	return u, nil
}
