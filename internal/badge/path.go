package badge

import (
	"iter"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Format is the last part of a badge URL, after the final dot.
type Format string

// The badge formats the reference serves. Any other slug routes but is
// answered with an empty 404 (see [Format.Known]).
const (
	FormatSVG     Format = "svg"
	FormatJSON    Format = "json"
	FormatShields Format = "shields"
)

// Known reports whether f is one of svg, json and shields.
func (f Format) Known() bool {
	return f == FormatSVG || f == FormatJSON || f == FormatShields
}

// ContentType is the Content-Type of a badge in format f: "image/svg+xml"
// for SVG, "application/json" for JSON and Shields, "" for unknown formats.
func (f Format) ContentType() string {
	switch f {
	case FormatSVG:
		return "image/svg+xml"
	case FormatJSON, FormatShields:
		return "application/json"
	}
	return ""
}

// Render returns the body of a badge in format f with the given label (used
// by Shields and SVG) and aggregated result, or nil when f is unknown.
func (f Format) Render(label string, res Result) []byte {
	switch f {
	case FormatSVG:
		return SVG(label, res.Status)
	case FormatJSON:
		return JSON(res)
	case FormatShields:
		return Shields(label, res)
	}
	return nil
}

// CacheControl is the Cache-Control header of every badge response (Django's
// never_cache); the reference also sends "Expires: <now>".
const CacheControl = "max-age=0, no-cache, no-store, must-revalidate, private"

// Request is a parsed per-tag or all-checks badge URL.
//
// ParsePath reports whether the path routes at all; the reference answers a
// path that does not route with its HTML "Not Found" page. A routed request
// is then answered with an empty 404 (with CORS headers) when the format is
// not [Format.Known] (checked first) or [Request.Verify] fails.
type Request struct {
	// BadgeKey is the first segment: the project's badge key.
	BadgeKey string
	// Signature is the second segment as sent, including any "-2" suffix
	// or other trailing characters.
	Signature string
	// Tag is the tag, decoded; [AllTag] for the all-checks form (and for a
	// per-tag URL whose tag decodes to "*", which the reference treats the
	// same way).
	Tag string
	// Format is the format as sent; it may be unknown.
	Format Format
	// ThreeState is false only when Signature is exactly 10 characters
	// ending in "-2".
	ThreeState bool
}

// ParsePath parses what follows "/badge/" in a request path, where the path
// has been percent-decoded exactly once (Go's URL.Path, Django's path_info):
//
//	<badge_key>/<signature>/<tag>.<fmt>
//	<badge_key>/<signature>.<fmt>
//
// It matches as the reference's router does: badge key, signature and
// format are slugs ([-a-zA-Z0-9_]+); the tag matches [\w%~_.-]+ (\w in the
// Unicode sense: letters, numbers and "_") and is percent-decoded once more
// the way Python's unquote does (invalid escapes kept, invalid UTF-8
// replaced by U+FFFD); the format is what follows the last dot. Bytes of p
// that are not valid UTF-8 are first re-percent-encoded, as Django does with
// the request path. The boolean is false when the path does not route.
func ParsePath(p string) (Request, bool) {
	p = repercentInvalidUTF8(p)
	parts := strings.Split(p, "/")
	var r Request
	switch len(parts) {
	case 2: // <badge_key>/<signature>.<fmt>
		sig, f, ok := strings.Cut(parts[1], ".")
		if !ok || !isSlug(sig) || !isSlug(f) {
			return Request{}, false
		}
		r = Request{Signature: sig, Tag: AllTag, Format: Format(f)}
	case 3: // <badge_key>/<signature>/<tag>.<fmt>
		i := strings.LastIndexByte(parts[2], '.')
		if i < 0 || !isSlug(parts[1]) || !isQuoted(parts[2][:i]) || !isSlug(parts[2][i+1:]) {
			return Request{}, false
		}
		r = Request{Signature: parts[1], Tag: pyUnquote(parts[2][:i]), Format: Format(parts[2][i+1:])}
	default:
		return Request{}, false
	}
	if !isSlug(parts[0]) {
		return Request{}, false
	}
	r.BadgeKey = parts[0]
	twoState := len(r.Signature) == SignatureLen+len(TwoStateSuffix) &&
		strings.HasSuffix(r.Signature, TwoStateSuffix)
	r.ThreeState = !twoState
	return r, true
}

// Verify reports whether the request's signature is valid for its badge key
// and tag under the project's signing secret. Only the first 8 characters of
// the signature segment are compared, in constant time, as the reference
// does; a shorter segment never verifies.
func (r Request) Verify(signingSecret string) bool {
	return verify(r.BadgeKey, signingSecret, r.Tag, r.Signature)
}

// Label returns the badge label: the tag, or masterLabel for the
// all-checks badge. See [Label].
func (r Request) Label(masterLabel string) string {
	return Label(r.Tag, masterLabel)
}

// Aggregate aggregates the statuses of the matching checks the way the
// reference does for this request: three-state or two-state per the
// signature, and, for SVG, stopping at the first down check. statuses is
// pulled lazily, so a caller that computes statuses on demand computes no
// more than the reference does. See [AggregateSeq].
func (r Request) Aggregate(statuses iter.Seq[Status]) Result {
	return AggregateSeq(statuses, r.ThreeState, r.Format == FormatSVG)
}

// DefaultMasterLabel is the reference's default label of the all-checks
// badge (MASTER_BADGE_LABEL, which defaults to SITE_NAME, "Mychecks").
const DefaultMasterLabel = "Mychecks"

// Label returns the label of a badge: tag itself, or masterLabel when tag is
// [AllTag].
func Label(tag, masterLabel string) string {
	if tag == AllTag {
		return masterLabel
	}
	return tag
}

// Matches reports whether a check with the given tags belongs to the badge
// of tag: every check belongs to [AllTag]; otherwise one of the check's tags
// must equal tag exactly ("foo" does not match a check tagged "foobar").
func Matches(checkTags []string, tag string) bool {
	if tag == AllTag {
		return true
	}
	for _, t := range checkTags {
		if t == tag {
			return true
		}
	}
	return false
}

// CheckRequest is a parsed single-check badge URL, /b/<states>/<key>.<fmt>.
type CheckRequest struct {
	// BadgeKey is the check's own badge key: a lower-case hyphenated UUID
	// (not the project's badge key).
	BadgeKey string
	// Format is the format as sent; it may be unknown (empty 404).
	Format Format
	// ThreeState is true when the states segment is the integer 3 (leading
	// zeros allowed); any other integer means two states.
	ThreeState bool
}

// maxIntDigits is CPython's default int_max_str_digits: int() refuses longer
// digit strings, so Django's int converter does not match them.
const maxIntDigits = 4300

// ParseCheckPath parses what follows "/b/" in a once-decoded request path:
// "<states>/<uuid>.<fmt>", with states [0-9]+, the UUID lower-case and
// hyphenated, and fmt a slug. The boolean is false when the path does not
// route (the reference's HTML 404). An unknown check badge key and an
// unknown format are both empty 404s.
func ParseCheckPath(p string) (CheckRequest, bool) {
	states, rest, ok := strings.Cut(p, "/")
	if !ok || states == "" || len(states) > maxIntDigits || strings.Trim(states, "0123456789") != "" {
		return CheckRequest{}, false
	}
	key, f, ok := strings.Cut(rest, ".")
	if !ok || !isLowerUUID(key) || !isSlug(f) {
		return CheckRequest{}, false
	}
	return CheckRequest{
		BadgeKey:   key,
		Format:     Format(f),
		ThreeState: strings.TrimLeft(states, "0") == "3",
	}, true
}

// isSlug matches Django's slug converter, [-a-zA-Z0-9_]+.
func isSlug(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnumASCII(rune(c)) && c != '-' && c != '_' {
			return false
		}
	}
	return true
}

// isAlnumASCII reports whether r is an ASCII letter or digit.
func isAlnumASCII(r rune) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
}

// isQuoted matches the reference's quoted converter, [\w%~_.-]+, where \w
// is Python's Unicode word class: letters (L*), numbers (N*) and "_".
// s must be valid UTF-8 (ParsePath ensures it).
func isQuoted(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r == '%' || r == '~' || r == '_' || r == '.' || r == '-':
		case r < utf8.RuneSelf:
			if !isAlnumASCII(r) {
				return false
			}
		default:
			if !unicode.IsLetter(r) && !unicode.IsNumber(r) {
				return false
			}
		}
	}
	return true
}

// isLowerUUID matches Django's uuid converter:
// [0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}.
func isLowerUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if _, ok := unhex(c); !ok || 'A' <= c && c <= 'F' {
				return false
			}
		}
	}
	return true
}

// repercentInvalidUTF8 percent-encodes (upper-case hex) every byte of s
// that is not part of a valid UTF-8 sequence, as Django's
// repercent_broken_unicode does with the WSGI path before routing.
func repercentInvalidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteByte('%')
			b.WriteByte(hex[s[i]>>4])
			b.WriteByte(hex[s[i]&0x0f])
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// pyUnquote is Python's urllib.parse.unquote: every %XX with two hex digits
// (either case) becomes that byte, any other "%" stays literal, and the
// bytes are decoded as UTF-8 with errors="replace" (one U+FFFD per maximal
// invalid subsequence). "+" is left alone.
func pyUnquote(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	buf := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hi, ok1 := unhex(s[i+1])
			lo, ok2 := unhex(s[i+2])
			if ok1 && ok2 {
				buf = append(buf, hi<<4|lo)
				i += 2
				continue
			}
		}
		buf = append(buf, s[i])
	}
	return decodeReplace(buf)
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// decodeReplace decodes b as UTF-8 the way Python's decoder does with
// errors="replace": each maximal subpart of an ill-formed sequence (a lead
// byte followed by as many valid continuation bytes as fit) becomes a
// single U+FFFD. Go's own decoding would emit one U+FFFD per byte instead.
func decodeReplace(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var out strings.Builder
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			out.WriteByte(c)
			i++
			continue
		}
		need, lo, hi := 0, byte(0x80), byte(0xBF)
		switch {
		case 0xC2 <= c && c <= 0xDF:
			need = 1
		case c == 0xE0:
			need, lo = 2, 0xA0
		case c == 0xED:
			need, hi = 2, 0x9F
		case 0xE1 <= c && c <= 0xEF:
			need = 2
		case c == 0xF0:
			need, lo = 3, 0x90
		case c == 0xF4:
			need, hi = 3, 0x8F
		case 0xF1 <= c && c <= 0xF3:
			need = 3
		default: // a stray continuation byte, C0, C1 or F5..FF
			out.WriteRune(utf8.RuneError)
			i++
			continue
		}
		j := i + 1
		for k := 0; k < need && j < len(b); k++ {
			if k == 0 && (b[j] < lo || b[j] > hi) || k > 0 && (b[j] < 0x80 || b[j] > 0xBF) {
				break
			}
			j++
		}
		if j-i == need+1 {
			out.Write(b[i:j])
		} else {
			out.WriteRune(utf8.RuneError)
		}
		i = j
	}
	return out.String()
}
