package badge

import (
	"fmt"
	"strings"
	"testing"
)

func TestJSON(t *testing.T) {
	tests := []struct {
		r    Result
		want string
	}{
		{Result{"up", 0, 0, 0}, `{"status": "up", "total": 0, "grace": 0, "down": 0}`},
		{Result{"up", 1, 1, 0}, `{"status": "up", "total": 1, "grace": 1, "down": 0}`},
		{Result{"late", 1, 1, 0}, `{"status": "late", "total": 1, "grace": 1, "down": 0}`},
		{Result{"down", 2, 0, 1}, `{"status": "down", "total": 2, "grace": 0, "down": 1}`},
		{Result{"down", 1234, 56, 789}, `{"status": "down", "total": 1234, "grace": 56, "down": 789}`},
	}
	for _, tt := range tests {
		if got := string(JSON(tt.r)); got != tt.want {
			t.Errorf("JSON(%+v) =\n %s\nwant\n %s", tt.r, got, tt.want)
		}
	}
}

func TestShields(t *testing.T) {
	tests := []struct {
		label string
		r     Result
		want  string
	}{
		{"foo", Result{Status: "up"}, `{"schemaVersion": 1, "label": "foo", "message": "up", "color": "success"}`},
		{"foobar", Result{Status: "late"}, `{"schemaVersion": 1, "label": "foobar", "message": "late", "color": "important"}`},
		{"Everything", Result{Status: "down"}, `{"schemaVersion": 1, "label": "Everything", "message": "down", "color": "critical"}`},
		// Python's json.dumps: \u escapes with lower-case hex and surrogate
		// pairs; "<", ">", "&" and "/" as they are.
		{"ā<&>\"\\\t😀/", Result{Status: "late"},
			`{"schemaVersion": 1, "label": "\u0101<&>\"\\\t\ud83d\ude00/", "message": "late", "color": "important"}`},
		{"\b\f\n\r\x00\x1f\x7f\u2028", Result{Status: "up"},
			`{"schemaVersion": 1, "label": "\b\f\n\r\u0000\u001f\u007f\u2028", "message": "up", "color": "success"}`},
		{"bad\xffutf8", Result{Status: "up"},
			`{"schemaVersion": 1, "label": "bad\ufffdutf8", "message": "up", "color": "success"}`},
		{"", Result{Status: "up"}, `{"schemaVersion": 1, "label": "", "message": "up", "color": "success"}`},
	}
	for _, tt := range tests {
		if got := string(Shields(tt.label, tt.r)); got != tt.want {
			t.Errorf("Shields(%q) =\n %s\nwant\n %s", tt.label, got, tt.want)
		}
	}
}

func TestColors(t *testing.T) {
	tests := []struct{ state, svg, shields string }{
		{"up", "#4c1", "success"},
		{"late", "#fe7d37", "important"},
		{"down", "#e05d44", "critical"},
		{"bogus", "#e05d44", "critical"},
	}
	for _, tt := range tests {
		if got := SVGColor(tt.state); got != tt.svg {
			t.Errorf("SVGColor(%q) = %q, want %q", tt.state, got, tt.svg)
		}
		if got := ShieldsColor(tt.state); got != tt.shields {
			t.Errorf("ShieldsColor(%q) = %q, want %q", tt.state, got, tt.shields)
		}
	}
}

// referenceWidths is the reference's per-character width table (section
// 14.5), transcribed independently of charWidth.
var referenceWidths = map[rune]int{
	'a': 7, 'b': 7, 'c': 6, 'd': 7, 'e': 6, 'f': 4, 'g': 7, 'h': 7, 'i': 3, 'j': 3, 'k': 7, 'l': 3, 'm': 10,
	'n': 7, 'o': 7, 'p': 7, 'q': 7, 'r': 4, 's': 6, 't': 5, 'u': 7, 'v': 7, 'w': 9, 'x': 6, 'y': 7, 'z': 7,
	'0': 7, '1': 6, '2': 7, '3': 7, '4': 7, '5': 7, '6': 7, '7': 7, '8': 7, '9': 7,
	'A': 8, 'B': 7, 'C': 8, 'D': 8, 'E': 7, 'F': 6, 'G': 9, 'H': 8, 'I': 3, 'J': 4, 'K': 7, 'L': 6, 'M': 10,
	'N': 8, 'O': 9, 'P': 6, 'Q': 9, 'R': 7, 'S': 7, 'T': 7, 'U': 8, 'V': 8, 'W': 11, 'X': 7, 'Y': 7, 'Z': 7,
	'-': 4, '_': 6,
}

func TestTextWidth(t *testing.T) {
	for r := rune(0); r < 0x300; r++ {
		want, ok := referenceWidths[r]
		if !ok {
			want = 7
		}
		if got := TextWidth(string(r)); got != want {
			t.Errorf("TextWidth(%q) = %d, want %d", r, got, want)
		}
	}
	tests := map[string]int{
		"":         0,
		"foo":      18,
		"Mychecks": 55,
		"up":       14,
		"late":     21,
		"down":     30,
		"db@dc1":   40,
		"WiMl_-1":  43,
		"ā日😀":      21, // one width per code point
		"<b>&'\"":  42, // measured before escaping
	}
	for s, want := range tests {
		if got := TextWidth(s); got != want {
			t.Errorf("TextWidth(%q) = %d, want %d", s, got, want)
		}
	}
}

// The reference's badge.svg rendered for "Mychecks"/"late" (checked against
// the template with Python's str() and html.escape()).
const svgMychecksLate = `<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="96" height="20">
  <linearGradient id="smooth" x2="0" y2="100%">
    <stop offset="0" stop-color="#bbb" stop-opacity=".1"/>
    <stop offset="1" stop-opacity=".1"/>
  </linearGradient>

  <mask id="round">
    <rect width="96" height="20" rx="3" fill="#fff"/>
  </mask>

  <g mask="url(#round)">
    <rect width="65" height="20" fill="#555"/>
    <rect x="65" width="31" height="20" fill="#fe7d37"/>
    <rect width="96" height="20" fill="url(#smooth)"/>
  </g>

  <g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="11">
    <text x="32.5" y="15" fill="#010101" fill-opacity=".3">Mychecks</text>
    <text x="32.5" y="14">Mychecks</text>
    <text x="80.5" y="15" fill="#010101" fill-opacity=".3">late</text>
    <text x="80.5" y="14">late</text>
  </g>
</svg>
`

func TestSVGExact(t *testing.T) {
	if got := string(SVG("Mychecks", "late")); got != svgMychecksLate {
		t.Errorf("SVG(Mychecks, late) =\n%s\nwant\n%s", got, svgMychecksLate)
	}
}

func TestSVG(t *testing.T) {
	tests := []struct {
		label, state string
		color        string
		labelWidth   int // 10 + TextWidth(label)
		stateWidth   int // 10 + TextWidth(state)
		labelX       string
		stateX       string
		escaped      string
	}{
		{"foo", "up", "#4c1", 28, 24, "14.0", "40.0", "foo"},
		{"Mychecks", "up", "#4c1", 65, 24, "32.5", "77.0", "Mychecks"},
		{"Mychecks", "down", "#e05d44", 65, 40, "32.5", "85.0", "Mychecks"},
		{"up", "late", "#fe7d37", 24, 31, "12.0", "39.5", "up"},
		{"late", "late", "#fe7d37", 31, 31, "15.5", "46.5", "late"},
		{"down", "down", "#e05d44", 40, 40, "20.0", "60.0", "down"},
		{"db@dc1", "up", "#4c1", 50, 24, "25.0", "62.0", "db@dc1"},
		{`<b>&'"`, "down", "#e05d44", 52, 40, "26.0", "72.0", "&lt;b&gt;&amp;&#x27;&quot;"},
		{"ā日😀", "up", "#4c1", 31, 24, "15.5", "43.0", "ā日😀"},
		{"", "up", "#4c1", 10, 24, "5.0", "22.0", ""},
		{"bad\xff", "up", "#4c1", 38, 24, "19.0", "50.0", "bad\uFFFD"},
	}
	for _, tt := range tests {
		t.Run(tt.label+"/"+tt.state, func(t *testing.T) {
			svg := string(SVG(tt.label, tt.state))
			total := tt.labelWidth + tt.stateWidth
			for _, want := range []string{
				fmt.Sprintf(`<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="%d" height="20">`, total),
				fmt.Sprintf(`<rect width="%d" height="20" rx="3" fill="#fff"/>`, total),
				fmt.Sprintf(`<rect width="%d" height="20" fill="#555"/>`, tt.labelWidth),
				fmt.Sprintf(`<rect x="%d" width="%d" height="20" fill="%s"/>`, tt.labelWidth, tt.stateWidth, tt.color),
				fmt.Sprintf(`<rect width="%d" height="20" fill="url(#smooth)"/>`, total),
				fmt.Sprintf(`<text x="%s" y="15" fill="#010101" fill-opacity=".3">%s</text>`, tt.labelX, tt.escaped),
				fmt.Sprintf(`<text x="%s" y="14">%s</text>`, tt.labelX, tt.escaped),
				fmt.Sprintf(`<text x="%s" y="15" fill="#010101" fill-opacity=".3">%s</text>`, tt.stateX, tt.state),
				fmt.Sprintf(`<text x="%s" y="14">%s</text>`, tt.stateX, tt.state),
			} {
				if !strings.Contains(svg, want) {
					t.Errorf("SVG(%q, %q) lacks %s\n%s", tt.label, tt.state, want, svg)
				}
			}
			for _, other := range []string{"#4c1", "#fe7d37", "#e05d44"} {
				if other != tt.color && strings.Contains(svg, other) {
					t.Errorf("SVG(%q, %q) contains the colour %s", tt.label, tt.state, other)
				}
			}
			if !strings.HasSuffix(svg, "</svg>\n") {
				t.Errorf("SVG does not end with the template's final newline")
			}
		})
	}
}

func TestHalfString(t *testing.T) {
	tests := map[int]string{0: "0.0", 1: "0.5", 28: "14.0", 65: "32.5", 123457: "61728.5"}
	for n, want := range tests {
		if got := halfString(n); got != want {
			t.Errorf("halfString(%d) = %q, want %q", n, got, want)
		}
	}
}
