// Package pytext holds the few Python string rules the reference's parsers
// rely on, so that Vigil splits and trims schedules exactly as they do.
package pytext

// IsSpace reports whether Python's str.isspace() holds for r: what
// str.split() and str.strip() treat as whitespace. It is Go's
// unicode.IsSpace set plus U+001C..U+001F.
func IsSpace(r rune) bool {
	switch {
	case r == ' ' || (r >= '\t' && r <= '\r') || (r >= 0x1c && r <= 0x1f):
		return true
	case r < 0x80:
		return false
	}
	switch r {
	case 0x85, 0xa0, 0x1680, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000:
		return true
	}
	return r >= 0x2000 && r <= 0x200a
}
