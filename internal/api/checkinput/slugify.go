package checkinput

import (
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Slugify derives a slug from a name as the reference (Django's slugify)
// does: NFKD, non-ASCII dropped, lower-cased, everything but letters,
// digits, "_", whitespace and "-" removed, runs of whitespace and "-"
// collapsed into one "-", and "-" and "_" trimmed from both ends.
func Slugify(name string) string {
	var b strings.Builder
	for _, r := range norm.NFKD.String(name) {
		if r >= 0x80 {
			continue
		}
		c := byte(r)
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if isWord(c) || isSpace(c) || c == '-' {
			b.WriteByte(c)
		}
	}
	var out strings.Builder
	dash := false
	for i := 0; i < b.Len(); i++ {
		c := b.String()[i]
		if isSpace(c) || c == '-' {
			dash = true
			continue
		}
		if dash {
			out.WriteByte('-')
			dash = false
		}
		out.WriteByte(c)
	}
	if dash {
		out.WriteByte('-')
	}
	return strings.Trim(out.String(), "-_")
}

func isWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// isSpace is Python's \s over ASCII: \t \n \v \f \r, \x1c-\x1f and space.
func isSpace(c byte) bool {
	return c == ' ' || c >= '\t' && c <= '\r' || c >= 0x1c && c <= 0x1f
}
