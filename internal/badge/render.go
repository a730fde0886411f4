package badge

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// JSON returns the json badge body exactly as the reference writes it
// (Python's json.dumps separators):
//
//	{"status": "up", "total": 2, "grace": 1, "down": 0}
func JSON(r Result) []byte {
	b := make([]byte, 0, 64)
	b = append(b, `{"status": `...)
	b = appendPyString(b, r.Status)
	b = append(b, `, "total": `...)
	b = strconv.AppendInt(b, int64(r.Total), 10)
	b = append(b, `, "grace": `...)
	b = strconv.AppendInt(b, int64(r.Grace), 10)
	b = append(b, `, "down": `...)
	b = strconv.AppendInt(b, int64(r.Down), 10)
	return append(b, '}')
}

// ShieldsColor returns the Shields.io colour of a badge state: "success"
// (up), "important" (late) or "critical" (down). The reference has no other
// states; anything else gets "critical".
func ShieldsColor(state string) string {
	switch state {
	case StateUp:
		return "success"
	case StateLate:
		return "important"
	}
	return "critical"
}

// Shields returns the body of a Shields.io endpoint badge exactly as the
// reference writes it; non-ASCII characters of the label are written as
// \uXXXX escapes, as Python's encoder does:
//
//	{"schemaVersion": 1, "label": "foo", "message": "up", "color": "success"}
func Shields(label string, r Result) []byte {
	b := make([]byte, 0, 96+len(label))
	b = append(b, `{"schemaVersion": 1, "label": `...)
	b = appendPyString(b, label)
	b = append(b, `, "message": `...)
	b = appendPyString(b, r.Status)
	b = append(b, `, "color": `...)
	b = appendPyString(b, ShieldsColor(r.Status))
	return append(b, '}')
}

// appendPyString appends s as a JSON string the way Python's json.dumps
// (ensure_ascii=True) writes it: \" \\ \b \f \n \r \t, every other
// character outside " ".."~" as \u00XX or \uXXXX with lower-case hex,
// characters beyond U+FFFF as a surrogate pair; "/", "<", ">" and "&" are
// not escaped. Bytes that are not valid UTF-8 are written as \ufffd.
func appendPyString(b []byte, s string) []byte {
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, `\"`...)
		case r == '\\':
			b = append(b, `\\`...)
		case r == '\b':
			b = append(b, `\b`...)
		case r == '\f':
			b = append(b, `\f`...)
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case ' ' <= r && r <= '~':
			b = append(b, byte(r))
		case r > 0xFFFF:
			r -= 0x10000
			b = appendU4(b, 0xD800+(r>>10))
			b = appendU4(b, 0xDC00+(r&0x3FF))
		default:
			b = appendU4(b, r)
		}
	}
	return append(b, '"')
}

func appendU4(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xF], hex[r>>8&0xF], hex[r>>4&0xF], hex[r&0xF])
}

// SVGColor returns the fill colour of a badge state in the SVG format:
// #4c1 (up), #fe7d37 (late) or #e05d44 (down). The reference has no other
// states; anything else gets the down colour.
func SVGColor(state string) string {
	switch state {
	case StateUp:
		return "#4c1"
	case StateLate:
		return "#fe7d37"
	}
	return "#e05d44"
}

// TextWidth returns the width in pixels the reference assigns to s in a
// badge: the sum of per-character widths from its Verdana 11 px table (7
// for any character not in the table), counted per code point.
func TextWidth(s string) int {
	w := 0
	for _, r := range s {
		w += charWidth(r)
	}
	return w
}

func charWidth(r rune) int {
	switch r {
	case 'i', 'j', 'l', 'I':
		return 3
	case 'f', 'r', 'J', '-':
		return 4
	case 't':
		return 5
	case 'c', 'e', 's', 'x', '1', 'F', 'L', 'P', '_':
		return 6
	case 'A', 'C', 'D', 'H', 'N', 'U', 'V':
		return 8
	case 'w', 'G', 'O', 'Q':
		return 9
	case 'm', 'M':
		return 10
	case 'W':
		return 11
	}
	return 7
}

// SVG returns the svg badge body exactly as the reference renders its
// badge.svg template: a grey (#555) label part and a coloured state part,
// each 10 px wider than [TextWidth] of its text, the text centres written
// as Python floats ("22.5", "40.0"), and the label HTML-escaped as Django
// escapes it (& < > " ' → &amp; &lt; &gt; &quot; &#x27;). state is "up",
// "late" or "down" (see [SVGColor] for anything else). The body ends with a
// newline, as the template file does.
func SVG(label, state string) []byte {
	w1 := TextWidth(label) + 10
	w2 := TextWidth(state) + 10
	width := strconv.Itoa(w1 + w2)
	labelWidth := strconv.Itoa(w1)
	labelX := halfString(w1)
	stateX := halfString(2*w1 + w2) // w1 + w2/2
	l := htmlEscape(label)
	s := htmlEscape(state)

	var b strings.Builder
	b.Grow(1100 + 2*len(l))
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="`)
	b.WriteString(width)
	b.WriteString(`" height="20">
  <linearGradient id="smooth" x2="0" y2="100%">
    <stop offset="0" stop-color="#bbb" stop-opacity=".1"/>
    <stop offset="1" stop-opacity=".1"/>
  </linearGradient>

  <mask id="round">
    <rect width="`)
	b.WriteString(width)
	b.WriteString(`" height="20" rx="3" fill="#fff"/>
  </mask>

  <g mask="url(#round)">
    <rect width="`)
	b.WriteString(labelWidth)
	b.WriteString(`" height="20" fill="#555"/>
    <rect x="`)
	b.WriteString(labelWidth)
	b.WriteString(`" width="`)
	b.WriteString(strconv.Itoa(w2))
	b.WriteString(`" height="20" fill="`)
	b.WriteString(SVGColor(state))
	b.WriteString(`"/>
    <rect width="`)
	b.WriteString(width)
	b.WriteString(`" height="20" fill="url(#smooth)"/>
  </g>

  <g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="11">
    <text x="`)
	b.WriteString(labelX)
	b.WriteString(`" y="15" fill="#010101" fill-opacity=".3">`)
	b.WriteString(l)
	b.WriteString(`</text>
    <text x="`)
	b.WriteString(labelX)
	b.WriteString(`" y="14">`)
	b.WriteString(l)
	b.WriteString(`</text>
    <text x="`)
	b.WriteString(stateX)
	b.WriteString(`" y="15" fill="#010101" fill-opacity=".3">`)
	b.WriteString(s)
	b.WriteString(`</text>
    <text x="`)
	b.WriteString(stateX)
	b.WriteString(`" y="14">`)
	b.WriteString(s)
	b.WriteString(`</text>
  </g>
</svg>
`)
	return []byte(b.String())
}

// halfString writes n/2 as Python's str() of a float does for the values a
// badge can have: "20.0" or "22.5". (Python switches to exponent notation
// at 1e16, which would need a label of some 10^15 characters.)
func halfString(n int) string {
	s := strconv.Itoa(n / 2)
	if n%2 == 0 {
		return s + ".0"
	}
	return s + ".5"
}

// htmlEscape is Django's escape(): Python's html.escape(s, quote=True).
// Bytes that are not valid UTF-8 become U+FFFD so the document stays valid.
func htmlEscape(s string) string {
	if !strings.ContainsAny(s, `&<>"'`) && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&#x27;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
