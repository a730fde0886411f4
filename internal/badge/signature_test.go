package badge

import "testing"

// Vectors from the reference notes, section 14.3 (SECRET_KEY plays the role
// of the signing secret).
func TestSignature(t *testing.T) {
	tests := []struct {
		badgeKey, secret, tag string
		want                  string
	}{
		{"alice", "---", "foo", "HLoyq8dX"},
		{"alice", "---", "*", "6SKpySaJ"},
		{"alice", "---", "db@dc1", "xG451GSH"},
		{"67541b37-8b9c-4d17-b952-690eae", "abc", "backup", "J2R26PAg"},
		// Computed with Python's hmac/hashlib/base64, as Django does.
		{"alice", "---", "a+b", "qa9no5Vj"},
		{"alice", "---", "ā", "ws1IYPBi"},
		{"alice", "---", "日本", "4R20-Z2L"},
		{"67541b37-8b9c-4d17-b952-690eae", "abc", "*", "USKh3Sv2"},
	}
	for _, tt := range tests {
		t.Run(tt.badgeKey+"/"+tt.tag, func(t *testing.T) {
			got := Signature(tt.badgeKey, tt.secret, tt.tag)
			if got != tt.want {
				t.Errorf("Signature(%q, %q, %q) = %q, want %q", tt.badgeKey, tt.secret, tt.tag, got, tt.want)
			}
		})
	}
}

func TestFullSignature(t *testing.T) {
	const want = "HLoyq8dXc6vZ-MwQlAHMJ4MmZ8E"
	if got := fullSignature("alice", "---", "foo"); got != want {
		t.Errorf("fullSignature = %q, want %q", got, want)
	}
}

// The salt and the secret are concatenated before hashing, so only their
// concatenation matters (as in Django); the tag is separate.
func TestSignatureInputs(t *testing.T) {
	base := Signature("alice", "---", "foo")
	if Signature("alice-", "--", "foo") != base {
		t.Error("badge key and secret are not simply concatenated")
	}
	if Signature("alice", "--x", "foo") == base || Signature("alice", "---", "fop") == base {
		t.Error("signature ignores the secret or the tag")
	}
}

func TestVerify(t *testing.T) {
	const key, secret = "alice", "---"
	tests := []struct {
		name string
		sig  string
		tag  string
		want bool
	}{
		{"three-state", "HLoyq8dX", "foo", true},
		{"two-state", "HLoyq8dX-2", "foo", true},
		{"trailing characters are ignored", "HLoyq8dXXYZ", "foo", true},
		{"full signature", "HLoyq8dXc6vZ-MwQlAHMJ4MmZ8E", "foo", true},
		{"too short", "HLoyq8d", "foo", false},
		{"empty", "", "foo", false},
		{"wrong", "12345678", "foo", false},
		{"case matters", "hLoyq8dX", "foo", false},
		{"other tag", "HLoyq8dX", "bar", false},
		{"all checks", "6SKpySaJ-2", "*", true},
		{"all-checks signature on a tag", "6SKpySaJ", "foo", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Request{BadgeKey: key, Signature: tt.sig, Tag: tt.tag, Format: FormatSVG}
			if got := r.Verify(secret); got != tt.want {
				t.Errorf("Verify(%q, tag %q) = %v, want %v", tt.sig, tt.tag, got, tt.want)
			}
		})
	}
	r := Request{BadgeKey: key, Signature: "HLoyq8dX", Tag: "foo"}
	if r.Verify("other secret") {
		t.Error("verified under another project's signing secret")
	}
	r.BadgeKey = "bob"
	if r.Verify(secret) {
		t.Error("verified under another badge key")
	}
}

func TestValidBadgeKey(t *testing.T) {
	tests := map[string]bool{
		"alice":                                true,
		"67541b37-8b9c-4d17-b952-690eae":       true,
		"869fe06a-a604-4140-b15a-118637c25f3e": true,
		"under_score":                          true,
		"":                                     false,
		"a.b":                                  false,
		"a/b":                                  false,
		"a b":                                  false,
		"ā":                                    false,
		"key\n":                                false,
	}
	for in, want := range tests {
		if got := ValidBadgeKey(in); got != want {
			t.Errorf("ValidBadgeKey(%q) = %v, want %v", in, got, want)
		}
	}
}
