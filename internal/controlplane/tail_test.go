package controlplane

import (
	"strings"
	"testing"
)

func TestTail(t *testing.T) {
	long := strings.Repeat("x", 5000)
	tests := []struct {
		name   string
		writes []string
		n      int
		want   string
	}{
		{"nothing", nil, 3, "    (none)\n"},
		{"fewer lines than kept", []string{"a\nb\n"}, 3, "    a\n    b\n"},
		{"the last lines, oldest first", []string{"1\n2\n3\n4\n5\n"}, 3, "    3\n    4\n    5\n"},
		{"lines split across writes", []string{"fi", "rst\nsec", "ond\n"}, 3, "    first\n    second\n"},
		{"an unfinished last line", []string{"a\nb"}, 3, "    a\n    b\n"},
		{"a long line cut", []string{long + "\n"}, 3, "    " + long[:4096] + "\n"},
		{"a long unfinished line cut", []string{long[:3000], long[:3000]}, 3, "    " + long[:4096] + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := newTail(tt.n)
			for _, w := range tt.writes {
				if n, err := tl.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := tl.Tail(); got != tt.want {
				t.Errorf("Tail() = %q, want %q", got, tt.want)
			}
		})
	}
}
