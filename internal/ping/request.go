package ping

import (
	"net"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Target is what a ping URL names: a check by UUID, or by project ping key
// and slug, and the signal.
type Target struct {
	// UUID is set for /ping/<uuid>... URLs.
	UUID string
	// PingKey and Slug are set for /ping/<ping-key>/<slug>... URLs.
	PingKey, Slug string
	// Kind is the signal the URL names: success, start, fail or log.
	Kind monitor.PingKind
	// ExitStatus is the number in /ping/<id>/<n>, when present.
	ExitStatus *int
	// BadExitStatus is set for /ping/<id>/<n> with n over 255, which the
	// reference answers "invalid url format" once the check is found.
	BadExitStatus bool
}

// Errors a ping URL can have, with the reference's response bodies.
const (
	msgNotFound      = "not found"
	msgInvalidURL    = "invalid url format"
	msgInvalidUUID   = "invalid uuid format"
	msgAmbiguousSlug = "ambiguous slug"
)

var (
	uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	slugRE = regexp.MustCompile(`^[-a-zA-Z0-9_]+$`)
	intRE  = regexp.MustCompile(`^[0-9]+$`)
	ridRE  = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// Bounds of what a ping stores about its request, in characters. A ping
// never fails for its metadata: a longer value is cut, as the reference
// cuts the user agent, so a client cannot fill the ping log with it.
const (
	// maxMethod: the longest registered HTTP method (UPDATEREDIRECTREF)
	// has 17 characters.
	maxMethod = 32
	// maxScheme: X-Forwarded-Proto is "http" or "https".
	maxScheme = 16
	// maxRemoteAddr: the longest textual IPv6 address has 45 characters;
	// X-Forwarded-For may carry anything.
	maxRemoteAddr = 64
	// maxUA is the reference's.
	maxUA = 200
)

// truncateRunes returns s as a ping stores it: at most n characters of
// valid UTF-8. Header values may hold any bytes, and PostgreSQL refuses
// text that is not UTF-8, so each invalid byte becomes U+FFFD.
func truncateRunes(s string, n int) string {
	s = strings.ToValidUTF8(s, string(utf8.RuneError))
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// ParsePath parses the part of a ping URL after "/ping/", following the
// reference's routing: UUID routes first (lowercase UUIDs only; a trailing
// slash only on the bare form), then slug routes (no trailing slash). ok is
// false when no route matches (the reference's 404); a slug with uppercase
// letters returns errMsg "invalid url format" before any lookup.
func ParsePath(rest string) (t Target, errMsg string, ok bool) {
	parts := strings.Split(rest, "/")
	t.Kind = monitor.PingSuccess
	// UUID routes: <uuid>, <uuid>/, <uuid>/<action>, <uuid>/<n>.
	if uuidRE.MatchString(parts[0]) {
		switch {
		case len(parts) == 1 || (len(parts) == 2 && parts[1] == ""):
			t.UUID = parts[0]
			return t, "", true
		case len(parts) == 2:
			if kind, isAction := action(parts[1]); isAction {
				t.UUID, t.Kind = parts[0], kind
				return t, "", true
			}
			if intRE.MatchString(parts[1]) {
				t.UUID = parts[0]
				return withExitStatus(t, parts[1]), "", true
			}
		}
	}
	// Slug routes: <key>/<slug>, <key>/<slug>/<action>, <key>/<slug>/<n>.
	if len(parts) < 2 || len(parts) > 3 || !slugRE.MatchString(parts[0]) || !slugRE.MatchString(parts[1]) {
		return Target{}, "", false
	}
	t.PingKey, t.Slug = parts[0], parts[1]
	if len(parts) == 3 {
		if kind, isAction := action(parts[2]); isAction {
			t.Kind = kind
		} else if intRE.MatchString(parts[2]) {
			t = withExitStatus(t, parts[2])
		} else {
			return Target{}, "", false
		}
	}
	if strings.ToLower(t.Slug) != t.Slug {
		return t, msgInvalidURL, true
	}
	return t, "", true
}

func action(s string) (monitor.PingKind, bool) {
	switch s {
	case "start":
		return monitor.PingStart, true
	case "fail":
		return monitor.PingFail, true
	case "log":
		return monitor.PingLog, true
	}
	return "", false
}

// withExitStatus applies /<n>: 0 is success, 1..255 a failure, more an
// invalid URL. Leading zeros are accepted (007 is 7).
func withExitStatus(t Target, digits string) Target {
	trimmed := strings.TrimLeft(digits, "0")
	n := 256
	if len(trimmed) <= 3 {
		n, _ = strconv.Atoi("0" + trimmed)
	}
	if n > 255 {
		t.BadExitStatus = true
		return t
	}
	t.ExitStatus = &n
	if n > 0 {
		t.Kind = monitor.PingFail
	}
	return t
}

// ParseRID validates the rid query parameter: a UUID in any case, stored
// lowercase. Present but empty is invalid, as in the reference.
func ParseRID(values []string, present bool) (string, bool) {
	if !present {
		return "", true
	}
	v := ""
	if len(values) > 0 {
		v = values[len(values)-1]
	}
	if !ridRE.MatchString(v) {
		return "", false
	}
	return strings.ToLower(v), true
}

// ClientAddr returns the address a ping came from. X-Forwarded-For is
// honoured only when the connection comes from a trusted proxy. Each proxy
// appends the address it took the request from, and whatever is left of
// that the client may have written itself, so the header is read from the
// right: the first entry that is not itself a trusted proxy is the client.
// (The reference takes the leftmost entry, which a client can forge when
// its proxy appends; docs/api.md lists the difference.) When every entry is
// a trusted proxy, the leftmost is taken. An IPv4 address's port is
// stripped, as the reference does, and the result is cut to 64 characters
// (an address's zone, or a value that is no address, can be longer).
// forwardedFor is the header's values joined with commas.
func ClientAddr(remoteAddr, forwardedFor string, trusted []netip.Prefix) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	if !isTrusted(host, trusted) {
		return host
	}
	client := ""
	for rest := forwardedFor; rest != ""; {
		var entry string
		if i := strings.LastIndexByte(rest, ','); i >= 0 {
			rest, entry = rest[:i], rest[i+1:]
		} else {
			rest, entry = "", rest
		}
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		client = entry
		if !isTrusted(entryHost(entry), trusted) {
			break
		}
	}
	if client == "" {
		return host
	}
	if _, err := netip.ParseAddr(client); err != nil {
		if ap, err := netip.ParseAddrPort(client); err == nil && ap.Addr().Is4() {
			return ap.Addr().String()
		}
	}
	return truncateRunes(client, maxRemoteAddr)
}

// entryHost is an X-Forwarded-For entry's address without its port, if it
// has one.
func entryHost(entry string) string {
	if ap, err := netip.ParseAddrPort(entry); err == nil {
		return ap.Addr().String()
	}
	return entry
}

func isTrusted(host string, trusted []netip.Prefix) bool {
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	addr = addr.Unmap()
	for _, p := range trusted {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// ParseTrustedProxies parses a comma-separated list of CIDRs or addresses.
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !strings.Contains(item, "/") {
			addr, err := netip.ParseAddr(item)
			if err != nil {
				return nil, err
			}
			out = append(out, netip.PrefixFrom(addr, addr.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
