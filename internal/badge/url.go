package badge

import "strings"

// URLSet holds the six URLs of one badge (a tag or "*"), as listed by
// GET /api/v3/badges/. The first of each pair is the two-state badge
// (signature with the "-2" suffix), the second the three-state one. The
// JSON field order is the reference's.
type URLSet struct {
	SVG      string `json:"svg"`
	SVG3     string `json:"svg3"`
	JSON     string `json:"json"`
	JSON3    string `json:"json3"`
	Shields  string `json:"shields"`
	Shields3 string `json:"shields3"`
}

// URLs returns the badge URLs of tag for the project with the given badge
// key and signing secret. baseURL is the site root without a trailing slash
// (the reference's SITE_ROOT, e.g. "https://vigil.example.com"); one
// trailing slash is tolerated and dropped. Tag [AllTag] yields the
// all-checks form without a tag segment; any other tag is
// double-percent-encoded as the reference's router expects.
//
// tag must be non-empty and badgeKey must satisfy [ValidBadgeKey]; the
// reference refuses to build such URLs, and URLs built from them do not
// route here either.
func URLs(baseURL, badgeKey, signingSecret, tag string) URLSet {
	sig := Signature(badgeKey, signingSecret, tag)
	prefix := strings.TrimSuffix(baseURL, "/") + "/badge/" + badgeKey + "/"
	build := func(sigSuffix string, f Format) string {
		if tag == AllTag {
			return prefix + sig + sigSuffix + "." + string(f)
		}
		return prefix + sig + sigSuffix + "/" + EscapeTag(tag) + "." + string(f)
	}
	return URLSet{
		SVG:      build(TwoStateSuffix, FormatSVG),
		SVG3:     build("", FormatSVG),
		JSON:     build(TwoStateSuffix, FormatJSON),
		JSON3:    build("", FormatJSON),
		Shields:  build(TwoStateSuffix, FormatShields),
		Shields3: build("", FormatShields),
	}
}

// URLSets returns the "badges" object of GET /api/v3/badges/: one entry for
// [AllTag] and one for each distinct tag in tags (the union of the
// project's check tags; duplicates and empty strings are ignored).
func URLSets(baseURL, badgeKey, signingSecret string, tags []string) map[string]URLSet {
	sets := map[string]URLSet{AllTag: URLs(baseURL, badgeKey, signingSecret, AllTag)}
	for _, t := range tags {
		if t == "" {
			continue
		}
		if _, ok := sets[t]; !ok {
			sets[t] = URLs(baseURL, badgeKey, signingSecret, t)
		}
	}
	return sets
}

// EscapeTag returns the tag segment of a badge URL: Python's
// quote(tag, safe="") (every UTF-8 byte except A-Za-z0-9 and _.-~ becomes
// %XX, upper-case hex), then the "%" of each escape encoded once more by
// Django's reverse(). So "db@dc1" → "db%2540dc1", "a+b" → "a%252Bb",
// "ā" → "%25C4%2581".
func EscapeTag(tag string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(tag))
	for i := 0; i < len(tag); i++ {
		c := tag[i]
		if isUnreserved(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%25")
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0x0f])
	}
	return b.String()
}

// isUnreserved reports whether Python's quote() leaves c alone.
func isUnreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '_' || c == '.' || c == '-' || c == '~'
}
