package badge

import (
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzParsePath checks that ParsePath never panics and that what it reports
// is consistent with the path it was given.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{
		"alice/HLoyq8dX/foo.svg", "alice/HLoyq8dX-2/foo.json", "alice/6SKpySaJ-2.shields",
		"alice/HLoyq8dXXYZ/db%40dc1.svg", "alice/x/%C4%81.svg", "alice/x/%E2%82A.svg",
		"alice/x/\xff.svg", "alice/x/a.b.c", "alice/x/.svg", "a/b/c/d", "", "/", ".", "%", "a/b.c",
		"3/869fe06a-a604-4140-b15a-118637c25f3e.svg",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		r, ok := ParsePath(p)
		if cr, cok := ParseCheckPath(p); cok && (!isLowerUUID(cr.BadgeKey) || !isSlug(string(cr.Format))) {
			t.Fatalf("ParseCheckPath(%q) = %+v", p, cr)
		}
		if !ok {
			if r != (Request{}) {
				t.Fatalf("ParsePath(%q) returned %+v with ok false", p, r)
			}
			return
		}
		if !isSlug(r.BadgeKey) || !isSlug(r.Signature) || !isSlug(string(r.Format)) {
			t.Fatalf("ParsePath(%q) = %+v: key, signature and format must be slugs", p, r)
		}
		if !utf8.ValidString(r.Tag) || r.Tag == "" {
			t.Fatalf("ParsePath(%q) tag %q is empty or not valid UTF-8", p, r.Tag)
		}
		if !strings.HasPrefix(p, r.BadgeKey+"/"+r.Signature) {
			t.Fatalf("ParsePath(%q) = %+v: segments do not come from the path", p, r)
		}
		two := len(r.Signature) == 10 && strings.HasSuffix(r.Signature, "-2")
		if r.ThreeState == two {
			t.Fatalf("ParsePath(%q): ThreeState %v for signature %q", p, r.ThreeState, r.Signature)
		}
		_ = r.Verify("secret")
	})
}

// FuzzURLRoundTrip checks that every URL URLs builds for a (valid UTF-8,
// non-empty) tag routes back to that tag and verifies.
func FuzzURLRoundTrip(f *testing.F) {
	for _, s := range []string{"foo", "*", "db@dc1", "a+b", "ā", "%41", "a.", "😀", "a/b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		if tag == "" || !utf8.ValidString(tag) {
			t.Skip()
		}
		checkRoundTrip(t, tag)
	})
}

func checkRoundTrip(t *testing.T, tag string) {
	t.Helper()
	const base, key, secret = "https://vigil.example.com", "67541b37-8b9c-4d17-b952-690eae", "s3cr3t"
	set := URLs(base, key, secret, tag)
	urls := []struct {
		raw        string
		threeState bool
	}{
		{set.SVG, false}, {set.SVG3, true}, {set.JSON, false}, {set.JSON3, true}, {set.Shields, false}, {set.Shields3, true},
	}
	for _, x := range urls {
		u, err := url.Parse(x.raw)
		if err != nil {
			t.Fatalf("URLs(%q) built an unparsable URL %q: %v", tag, x.raw, err)
		}
		rest, found := strings.CutPrefix(u.Path, "/badge/")
		if !found {
			t.Fatalf("URL %q is not under /badge/", x.raw)
		}
		r, ok := ParsePath(rest)
		if !ok {
			t.Fatalf("URL %q for tag %q does not route", x.raw, tag)
		}
		if r.Tag != tag || r.BadgeKey != key || !r.Format.Known() || !r.Verify(secret) || r.ThreeState != x.threeState {
			t.Fatalf("URL %q parsed to %+v (verify %v), want tag %q, three-state %v", x.raw, r, r.Verify(secret), tag, x.threeState)
		}
	}
}
