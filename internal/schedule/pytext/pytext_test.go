package pytext

import (
	"testing"
	"unicode"
)

func TestIsSpaceIsPythons(t *testing.T) {
	// Python's str.isspace() is Go's unicode.IsSpace plus the four ASCII
	// separators U+001C..U+001F (which Python counts as whitespace).
	for r := rune(0); r <= 0x3000; r++ {
		want := unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
		if got := IsSpace(r); got != want {
			t.Errorf("IsSpace(%U) = %v, want %v", r, got, want)
		}
	}
}
