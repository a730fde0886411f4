package notify

import (
	"strings"
	"unicode/utf16"
)

// Helpers of the kinds that reach people's phones (Twilio, Signal,
// Pushover, Pushbullet, Gotify): fitting a message to a service's limit,
// and building an API's URL from a channel's base URL.

// fitWithExcerpt renders a message with the longest ping body excerpt (at
// most chatBodyLimit bytes) that keeps it within limit, as length counts.
// It reports false, with the rendering without excerpt, when even that is
// too long.
func fitWithExcerpt(render func(bodyLimit int) string, limit int, length func(string) int) (string, bool) {
	if s := render(chatBodyLimit); length(s) <= limit {
		return s, true
	}
	best := render(0)
	if length(best) > limit {
		return best, false
	}
	// Escaping makes the length of a rendering no simple function of its
	// excerpt's: search. lo fits, hi does not.
	lo, hi := 0, chatBodyLimit
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if s := render(mid); length(s) <= limit {
			lo, best = mid, s
		} else {
			hi = mid
		}
	}
	return best, true
}

// withoutTitleLine drops the first line of text, a rendering of m that
// opens with its title on a line of its own (plainText, htmlText), for the
// services that show the title apart. A title of more than one line is
// left in.
func withoutTitleLine(m *Message, text string) string {
	if strings.ContainsAny(m.title(), "\r\n") {
		return text
	}
	_, rest, _ := strings.Cut(text, "\n")
	return strings.TrimLeft(rest, "\n")
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// ellipsizeUTF16 cuts s to at most max UTF-16 code units, ending it with
// "…" when cut.
func ellipsizeUTF16(s string, max int) string {
	if utf16Len(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	n := 1 // the ellipsis
	for i, r := range s {
		if n+utf16.RuneLen(r) > max {
			return s[:i] + "…"
		}
		n += utf16.RuneLen(r)
	}
	return s
}

// joinTargetPath appends path elements (escaped already) to a target's
// URL.
func joinTargetPath(t target, elem ...string) target {
	t.u = t.u.JoinPath(elem...)
	return t
}

// clampInt bounds v to [lo, hi].
func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }
