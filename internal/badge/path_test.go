package badge

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePath(t *testing.T) {
	const fffd = "\uFFFD"
	type want struct {
		sig        string
		tag        string
		format     Format
		threeState bool
	}
	tests := []struct {
		name string
		in   string // what follows "/badge/", percent-decoded once
		ok   bool
		want want
	}{
		// Formats and states.
		{"three-state tag", "alice/HLoyq8dX/foo.svg", true, want{"HLoyq8dX", "foo", FormatSVG, true}},
		{"two-state tag", "alice/HLoyq8dX-2/foo.json", true, want{"HLoyq8dX-2", "foo", FormatJSON, false}},
		{"shields", "alice/HLoyq8dX-2/foo.shields", true, want{"HLoyq8dX-2", "foo", FormatShields, false}},
		{"all checks, three-state", "alice/6SKpySaJ.svg", true, want{"6SKpySaJ", "*", FormatSVG, true}},
		{"all checks, two-state", "alice/6SKpySaJ-2.shields", true, want{"6SKpySaJ-2", "*", FormatShields, false}},
		{"unknown format still routes", "alice/HLoyq8dX/foo.png", true, want{"HLoyq8dX", "foo", "png", true}},
		{"format with a suffix routes", "alice/HLoyq8dX/foo.jsonfoo", true, want{"HLoyq8dX", "foo", "jsonfoo", true}},
		{"all checks, unknown format", "alice/6SKpySaJ.txt", true, want{"6SKpySaJ", "*", "txt", true}},

		// Signature shapes: only exactly 10 characters ending in -2 is two-state.
		{"sig XYZ quirk", "alice/HLoyq8dXXYZ/foo.svg", true, want{"HLoyq8dXXYZ", "foo", FormatSVG, true}},
		{"sig -3", "alice/HLoyq8dX-3/foo.svg", true, want{"HLoyq8dX-3", "foo", FormatSVG, true}},
		{"sig 11 chars ending -2", "alice/HLoyq8dXX-2/foo.svg", true, want{"HLoyq8dXX-2", "foo", FormatSVG, true}},
		{"sig _2", "alice/HLoyq8dX_2/foo.svg", true, want{"HLoyq8dX_2", "foo", FormatSVG, true}},
		{"sig too short routes", "alice/HLoy/foo.svg", true, want{"HLoy", "foo", FormatSVG, true}},
		{"sig too short with -2", "alice/HLoyq8-2/foo.svg", true, want{"HLoyq8-2", "foo", FormatSVG, true}},
		{"sig too long", "alice/HLoyq8dXc6vZ-MwQlAHMJ4MmZ8E/foo.svg", true, want{"HLoyq8dXc6vZ-MwQlAHMJ4MmZ8E", "foo", FormatSVG, true}},

		// Tags: the path is decoded once more.
		{"encoded at sign", "alice/xG451GSH/db%40dc1.svg", true, want{"xG451GSH", "db@dc1", FormatSVG, true}},
		{"encoded plus", "alice/qa9no5Vj-2/a%2Bb.json", true, want{"qa9no5Vj-2", "a+b", FormatJSON, false}},
		{"encoded non-ASCII", "alice/ws1IYPBi/%C4%81.svg", true, want{"ws1IYPBi", "ā", FormatSVG, true}},
		{"raw non-ASCII letter", "alice/ws1IYPBi/ā.svg", true, want{"ws1IYPBi", "ā", FormatSVG, true}},
		{"lower-case hex", "alice/HLoyq8dX/db%40dc1%c4%81.svg", true, want{"HLoyq8dX", "db@dc1ā", FormatSVG, true}},
		{"Unicode numbers are word characters", "alice/HLoyq8dX/²Ⅻ٣.svg", true, want{"HLoyq8dX", "²Ⅻ٣", FormatSVG, true}},
		{"dots in the tag", "alice/HLoyq8dX/a.b.svg", true, want{"HLoyq8dX", "a.b", FormatSVG, true}},
		{"format is after the last dot", "alice/HLoyq8dX/foo.svg.json", true, want{"HLoyq8dX", "foo.svg", FormatJSON, true}},
		{"tag of dots", "alice/HLoyq8dX/...svg", true, want{"HLoyq8dX", "..", FormatSVG, true}},
		{"tilde dash underscore", "alice/HLoyq8dX/~-_.svg", true, want{"HLoyq8dX", "~-_", FormatSVG, true}},
		{"encoded star is the all badge", "alice/6SKpySaJ/%2A.svg", true, want{"6SKpySaJ", "*", FormatSVG, true}},
		{"decoded only once more", "alice/HLoyq8dX/%2541.svg", true, want{"HLoyq8dX", "%41", FormatSVG, true}},
		{"lone percent", "alice/HLoyq8dX/%.svg", true, want{"HLoyq8dX", "%", FormatSVG, true}},
		{"invalid escape kept", "alice/HLoyq8dX/%zz%4.svg", true, want{"HLoyq8dX", "%zz%4", FormatSVG, true}},
		{"double percent", "alice/HLoyq8dX/%%41.svg", true, want{"HLoyq8dX", "%A", FormatSVG, true}},
		{"plus is not a space", "alice/HLoyq8dX/a%2B%20b.svg", true, want{"HLoyq8dX", "a+ b", FormatSVG, true}},
		{"encoded slash", "alice/HLoyq8dX/a%2Fb.svg", true, want{"HLoyq8dX", "a/b", FormatSVG, true}},
		{"truncated UTF-8", "alice/HLoyq8dX/%C4.svg", true, want{"HLoyq8dX", fffd, FormatSVG, true}},
		{"maximal subpart", "alice/HLoyq8dX/%E2%82A.svg", true, want{"HLoyq8dX", fffd + "A", FormatSVG, true}},
		{"surrogate bytes", "alice/HLoyq8dX/%ED%A0%80.svg", true, want{"HLoyq8dX", fffd + fffd + fffd, FormatSVG, true}},
		{"truncated 4-byte", "alice/HLoyq8dX/%F0%9F.svg", true, want{"HLoyq8dX", fffd, FormatSVG, true}},
		{"stray bytes", "alice/HLoyq8dX/%80%C0%F5x.svg", true, want{"HLoyq8dX", fffd + fffd + fffd + "x", FormatSVG, true}},
		{"overlong and out of range", "alice/HLoyq8dX/%E0%80%F4%90.svg", true, want{"HLoyq8dX", fffd + fffd + fffd + fffd, FormatSVG, true}},
		{"other lead bytes", "alice/HLoyq8dX/%F1%80%80%80%F2%80x%EE%80%80%EF.svg", true, want{"HLoyq8dX", "\U00040000" + fffd + "x\uE000" + fffd, FormatSVG, true}},
		{"valid 3- and 4-byte", "alice/HLoyq8dX/%E6%97%A5%F0%9F%98%80.svg", true, want{"HLoyq8dX", "日😀", FormatSVG, true}},
		{"raw invalid byte is re-encoded", "alice/HLoyq8dX/\xff.svg", true, want{"HLoyq8dX", fffd, FormatSVG, true}},
		{"raw invalid sequence", "alice/HLoyq8dX/a\xe2\x82.svg", true, want{"HLoyq8dX", "a" + fffd, FormatSVG, true}},

		// Paths that do not route.
		{"empty", "", false, want{}},
		{"key only", "alice", false, want{}},
		{"no format", "alice/HLoyq8dX/foo", false, want{}},
		{"no format, all", "alice/HLoyq8dX", false, want{}},
		{"empty format", "alice/HLoyq8dX/foo.", false, want{}},
		{"empty tag", "alice/HLoyq8dX/.svg", false, want{}},
		{"empty signature", "alice//foo.svg", false, want{}},
		{"empty signature, all", "alice/.svg", false, want{}},
		{"empty key", "/HLoyq8dX/foo.svg", false, want{}},
		{"leading slash kept", "/alice/HLoyq8dX/foo.svg", false, want{}},
		{"trailing slash", "alice/HLoyq8dX/foo.svg/", false, want{}},
		{"extra segment", "alice/HLoyq8dX/a/b.svg", false, want{}},
		{"raw at sign", "alice/HLoyq8dX/db@dc1.svg", false, want{}},
		{"raw plus", "alice/HLoyq8dX/a+b.svg", false, want{}},
		{"raw space", "alice/HLoyq8dX/a b.svg", false, want{}},
		{"raw star", "alice/HLoyq8dX/*.svg", false, want{}},
		{"emoji is not a word character", "alice/HLoyq8dX/😀.svg", false, want{}},
		{"combining mark is not a word character", "alice/HLoyq8dX/e\u0301.svg", false, want{}},
		{"U+FFFD is not a word character", "alice/HLoyq8dX/\uFFFD.svg", false, want{}},
		{"percent in format", "alice/HLoyq8dX/foo.s%76g", false, want{}},
		{"newline after format", "alice/HLoyq8dX/foo.svg\n", false, want{}},
		{"dot in key", "al.ice/HLoyq8dX/foo.svg", false, want{}},
		{"non-slug key", "al@ice/HLoyq8dX/foo.svg", false, want{}},
		{"non-ASCII key", "ālice/HLoyq8dX/foo.svg", false, want{}},
		{"non-slug signature", "alice/HLoy+8dX/foo.svg", false, want{}},
		{"two dots, all", "alice/HLoyq8dX.sv.g", false, want{}},
		{"dot in signature, all", "alice/HLoy.q8dX.svg", false, want{}},
		{"bad format, all", "alice/HLoyq8dX.s%67", false, want{}},
		{"non-slug key, all", "al ice/HLoyq8dX.svg", false, want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParsePath(tt.in)
			if ok != tt.ok {
				t.Fatalf("ParsePath(%q) ok = %v, want %v (%+v)", tt.in, ok, tt.ok, got)
			}
			if !ok {
				if got != (Request{}) {
					t.Errorf("ParsePath(%q) = %+v with ok false, want the zero Request", tt.in, got)
				}
				return
			}
			w := Request{BadgeKey: strings.SplitN(tt.in, "/", 2)[0], Signature: tt.want.sig, Tag: tt.want.tag,
				Format: tt.want.format, ThreeState: tt.want.threeState}
			if got != w {
				t.Errorf("ParsePath(%q) =\n %+v\nwant\n %+v", tt.in, got, w)
			}
		})
	}
}

// A routed request is answered in the reference's order: unknown format,
// then signature, then the badge.
func TestParseAndVerify(t *testing.T) {
	tests := []struct {
		in         string
		known      bool
		verified   bool
		threeState bool
	}{
		{"alice/HLoyq8dX-2/foo.svg", true, true, false},
		{"alice/HLoyq8dX/foo.svg", true, true, true},
		{"alice/HLoyq8dXXYZ/foo.svg", true, true, true},
		{"alice/HLoyq8d/foo.svg", true, false, true},
		{"alice/12345678/foo.svg", true, false, true},
		{"alice/HLoyq8dX-2/foo.jsonfoo", false, true, false},
		{"alice/xG451GSH-2/db%40dc1.json", true, true, false},
		{"alice/xG451GSH/db@dc1.json", false, false, false}, // does not route
		{"alice/6SKpySaJ-2.json", true, true, false},
		{"alice/6SKpySaJ/%2A.json", true, true, true},
		{"alice/HLoyq8dX.json", true, false, true}, // foo's signature on the all form
		{"bob/HLoyq8dX/foo.svg", true, false, true},
	}
	for _, tt := range tests {
		r, ok := ParsePath(tt.in)
		if !ok {
			if tt.known || tt.verified {
				t.Errorf("ParsePath(%q) did not route", tt.in)
			}
			continue
		}
		if r.Format.Known() != tt.known || r.Verify("---") != tt.verified || r.ThreeState != tt.threeState {
			t.Errorf("%q: known %v verified %v threeState %v, want %v %v %v", tt.in,
				r.Format.Known(), r.Verify("---"), r.ThreeState, tt.known, tt.verified, tt.threeState)
		}
	}
}

// Every URL that URLs produces routes back to its tag once the HTTP server
// has decoded the path once, and verifies.
func TestURLRoundTrip(t *testing.T) {
	tags := []string{"*", "foo", "db@dc1", "a+b", "ā", "日本", "a b", "a/b", "100%", "%41", ".", "a.", "😀", "tab\there", "<&>\"'"}
	for _, tag := range tags {
		checkRoundTrip(t, tag)
	}
}

func TestRequestLabel(t *testing.T) {
	r, _ := ParsePath("alice/6SKpySaJ-2.svg")
	if got := r.Label(DefaultMasterLabel); got != "Mychecks" {
		t.Errorf("all-checks label = %q, want Mychecks", got)
	}
	r, _ = ParsePath("alice/xG451GSH/db%40dc1.svg")
	if got := r.Label("Vigil"); got != "db@dc1" {
		t.Errorf("tag label = %q, want db@dc1", got)
	}
}

func TestLabel(t *testing.T) {
	tests := []struct{ tag, master, want string }{
		{"*", "Mychecks", "Mychecks"},
		{"*", "Everything", "Everything"},
		{"foo", "Everything", "foo"},
		{"", "Everything", ""},
	}
	for _, tt := range tests {
		if got := Label(tt.tag, tt.master); got != tt.want {
			t.Errorf("Label(%q, %q) = %q, want %q", tt.tag, tt.master, got, tt.want)
		}
	}
}

func TestMatches(t *testing.T) {
	tests := []struct {
		checkTags []string
		tag       string
		want      bool
	}{
		{nil, "*", true},
		{[]string{"foo", "bar"}, "*", true},
		{[]string{"foo", "bar"}, "foo", true},
		{[]string{"foo", "bar"}, "bar", true},
		{[]string{"foobar"}, "foo", false},
		{[]string{"Foo"}, "foo", false},
		{nil, "foo", false},
		{[]string{"*"}, "*", true},
	}
	for _, tt := range tests {
		if got := Matches(tt.checkTags, tt.tag); got != tt.want {
			t.Errorf("Matches(%q, %q) = %v, want %v", tt.checkTags, tt.tag, got, tt.want)
		}
	}
}

func TestParseCheckPath(t *testing.T) {
	const u = "869fe06a-a604-4140-b15a-118637c25f3e"
	tests := []struct {
		name       string
		in         string
		ok         bool
		format     Format
		threeState bool
	}{
		{"two states", "2/" + u + ".svg", true, FormatSVG, false},
		{"three states", "3/" + u + ".json", true, FormatJSON, true},
		{"shields", "2/" + u + ".shields", true, FormatShields, false},
		{"leading zeros", "003/" + u + ".json", true, FormatJSON, true},
		{"any other integer is two-state", "30/" + u + ".json", true, FormatJSON, false},
		{"zero", "0/" + u + ".json", true, FormatJSON, false},
		{"unknown format routes", "2/" + u + ".jsonfoo", true, "jsonfoo", false},
		{"longest integer Python parses", strings.Repeat("0", maxIntDigits-1) + "3/" + u + ".svg", true, FormatSVG, true},
		{"longer than Python parses", strings.Repeat("0", maxIntDigits) + "3/" + u + ".svg", false, "", false},
		{"empty states", "/" + u + ".svg", false, "", false},
		{"negative", "-3/" + u + ".svg", false, "", false},
		{"non-ASCII digit", "٣/" + u + ".svg", false, "", false},
		{"upper-case UUID", "3/" + strings.ToUpper(u) + ".svg", false, "", false},
		{"UUID without hyphens", "3/" + strings.ReplaceAll(u, "-", "") + "0000.svg", false, "", false},
		{"short UUID", "3/" + u[:35] + ".svg", false, "", false},
		{"no format", "3/" + u, false, "", false},
		{"empty format", "3/" + u + ".", false, "", false},
		{"two dots", "3/" + u + ".s.v", false, "", false},
		{"trailing slash", "3/" + u + ".svg/", false, "", false},
		{"no states segment", u + ".svg", false, "", false},
		{"empty", "", false, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseCheckPath(tt.in)
			if ok != tt.ok {
				t.Fatalf("ParseCheckPath(%q) ok = %v, want %v", tt.in, ok, tt.ok)
			}
			want := CheckRequest{}
			if ok {
				want = CheckRequest{BadgeKey: u, Format: tt.format, ThreeState: tt.threeState}
			}
			if got != want {
				t.Errorf("ParseCheckPath(%q) = %+v, want %+v", tt.in, got, want)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	res := Result{Status: StateLate, Total: 2, Grace: 1}
	tests := []struct {
		f           Format
		known       bool
		contentType string
		body        []byte
	}{
		{FormatSVG, true, "image/svg+xml", SVG("foo", StateLate)},
		{FormatJSON, true, "application/json", JSON(res)},
		{FormatShields, true, "application/json", Shields("foo", res)},
		{"png", false, "", nil},
		{"", false, "", nil},
		{"SVG", false, "", nil},
	}
	for _, tt := range tests {
		if got := tt.f.Known(); got != tt.known {
			t.Errorf("Format(%q).Known() = %v, want %v", tt.f, got, tt.known)
		}
		if got := tt.f.ContentType(); got != tt.contentType {
			t.Errorf("Format(%q).ContentType() = %q, want %q", tt.f, got, tt.contentType)
		}
		if got := tt.f.Render("foo", res); !slices.Equal(got, tt.body) {
			t.Errorf("Format(%q).Render = %q, want %q", tt.f, got, tt.body)
		}
	}
}

func TestRepercentInvalidUTF8(t *testing.T) {
	tests := map[string]string{
		"plain":          "plain",
		"ā":              "ā",
		"\xff":           "%FF",
		"a\xe2\x82b":     "a%E2%82b",
		"\xed\xa0\x80ok": "%ED%A0%80ok",
		"%FF":            "%FF",
	}
	for in, want := range tests {
		if got := repercentInvalidUTF8(in); got != want {
			t.Errorf("repercentInvalidUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}
