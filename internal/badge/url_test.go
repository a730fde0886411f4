package badge

import (
	"encoding/json"
	"testing"
)

func TestURLs(t *testing.T) {
	const base = "https://vigil.example.com"
	set := func(prefix, sig, rest string) URLSet {
		u := func(suffix, f string) string { return prefix + sig + suffix + rest + "." + f }
		return URLSet{
			SVG: u("-2", "svg"), SVG3: u("", "svg"),
			JSON: u("-2", "json"), JSON3: u("", "json"),
			Shields: u("-2", "shields"), Shields3: u("", "shields"),
		}
	}
	p := base + "/badge/alice/"
	tests := []struct {
		name, base, tag string
		want            URLSet
	}{
		{"all checks", base, "*", set(p, "6SKpySaJ", "")},
		{"plain tag", base, "foo", set(p, "HLoyq8dX", "/foo")},
		{"at sign, double-encoded", base, "db@dc1", set(p, "xG451GSH", "/db%2540dc1")},
		{"plus", base, "a+b", set(p, "qa9no5Vj", "/a%252Bb")},
		{"non-ASCII", base, "ā", set(p, "ws1IYPBi", "/%25C4%2581")},
		{"CJK", base, "日本", set(p, "4R20-Z2L", "/%25E6%2597%25A5%25E6%259C%25AC")},
		{"dot kept", base, "a.b", set(p, "VwW5svui", "/a.b")},
		{"percent", base, "100%", set(p, "OPMIgWkN", "/100%2525")},
		{"trailing slash on the base", base + "/", "foo", set(p, "HLoyq8dX", "/foo")},
		{"reference default root", "http://localhost:8000", "foo",
			set("http://localhost:8000/badge/alice/", "HLoyq8dX", "/foo")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := URLs(tt.base, "alice", "---", tt.tag)
			if got != tt.want {
				t.Errorf("URLs(%q) =\n %+v\nwant\n %+v", tt.tag, got, tt.want)
			}
		})
	}
}

func TestEscapeTag(t *testing.T) {
	tests := map[string]string{
		"foo":      "foo",
		"db@dc1":   "db%2540dc1",
		"a+b":      "a%252Bb",
		"ā":        "%25C4%2581",
		"a b":      "a%2520b",
		"a/b":      "a%252Fb",
		"*":        "%252A",
		"A-z_0.9~": "A-z_0.9~",
		"%":        "%2525",
		"😀":        "%25F0%259F%2598%2580",
	}
	for in, want := range tests {
		if got := EscapeTag(in); got != want {
			t.Errorf("EscapeTag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestURLSets(t *testing.T) {
	sets := URLSets("http://localhost:8000", "alice", "---", []string{"foo", "bar", "foo", "", "*"})
	if len(sets) != 3 {
		t.Fatalf("got %d sets, want 3 (*, foo, bar): %v", len(sets), sets)
	}
	for _, tag := range []string{"*", "foo", "bar"} {
		if sets[tag] != URLs("http://localhost:8000", "alice", "---", tag) {
			t.Errorf("set for %q differs from URLs", tag)
		}
	}
	if empty := URLSets("http://localhost:8000", "alice", "---", nil); len(empty) != 1 || empty["*"].SVG == "" {
		t.Errorf("a project without tags must still list *: %v", empty)
	}
}

func TestURLSetJSON(t *testing.T) {
	b, err := json.Marshal(URLs("http://localhost:8000", "alice", "---", "foo"))
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"svg":"http://localhost:8000/badge/alice/HLoyq8dX-2/foo.svg",` +
		`"svg3":"http://localhost:8000/badge/alice/HLoyq8dX/foo.svg",` +
		`"json":"http://localhost:8000/badge/alice/HLoyq8dX-2/foo.json",` +
		`"json3":"http://localhost:8000/badge/alice/HLoyq8dX/foo.json",` +
		`"shields":"http://localhost:8000/badge/alice/HLoyq8dX-2/foo.shields",` +
		`"shields3":"http://localhost:8000/badge/alice/HLoyq8dX/foo.shields"}`
	if string(b) != want {
		t.Errorf("JSON =\n %s\nwant\n %s", b, want)
	}
}
