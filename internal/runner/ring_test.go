package runner

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

func TestRing(t *testing.T) {
	tests := []struct {
		name      string
		limit     int
		writes    []string
		want      string
		truncated bool
	}{
		{name: "empty", limit: 4, want: ""},
		{name: "under the limit", limit: 8, writes: []string{"ab", "cd"}, want: "abcd"},
		{name: "exactly the limit", limit: 4, writes: []string{"ab", "cd"}, want: "abcd"},
		{name: "wraps", limit: 4, writes: []string{"abc", "def"}, want: "cdef", truncated: true},
		{name: "wraps many times", limit: 3, writes: []string{"a", "b", "c", "d", "e", "f", "g"}, want: "efg", truncated: true},
		{name: "one write larger than the limit", limit: 4, writes: []string{"abcdefgh"}, want: "efgh", truncated: true},
		{name: "large write after wrap", limit: 4, writes: []string{"abc", "de", "0123456789"}, want: "6789", truncated: true},
		{name: "zero limit keeps nothing", limit: 0, writes: []string{"abc"}, want: "", truncated: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRing(tt.limit)
			total := 0
			for _, w := range tt.writes {
				n, err := r.Write([]byte(w))
				if err != nil || n != len(w) {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
				total += len(w)
			}
			if got := string(r.Bytes()); got != tt.want {
				t.Errorf("Bytes() = %q, want %q", got, tt.want)
			}
			if r.Len() != len(tt.want) || r.Total() != int64(total) || r.Truncated() != tt.truncated {
				t.Errorf("Len, Total, Truncated = %d, %d, %v; want %d, %d, %v", r.Len(), r.Total(), r.Truncated(), len(tt.want), total, tt.truncated)
			}
		})
	}
}

func TestRingSetLimit(t *testing.T) {
	tests := []struct {
		name      string
		limit     int
		before    string
		newLimit  int
		after     string
		want      string
		wantTrunc bool
	}{
		{name: "shrink drops oldest", limit: 8, before: "abcdef", newLimit: 3, want: "def", wantTrunc: true},
		{name: "shrink a wrapped ring", limit: 4, before: "abcdef", newLimit: 2, after: "g", want: "fg", wantTrunc: true},
		{name: "grow keeps all and makes room", limit: 4, before: "abcd", newLimit: 8, after: "efgh", want: "abcdefgh"},
		{name: "grow a wrapped ring", limit: 4, before: "abcdef", newLimit: 6, after: "gh", want: "cdefgh", wantTrunc: true},
		{name: "grow then wrap", limit: 2, before: "ab", newLimit: 3, after: "cde", want: "cde", wantTrunc: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRing(tt.limit)
			_, _ = r.Write([]byte(tt.before))
			r.SetLimit(tt.newLimit)
			_, _ = r.Write([]byte(tt.after))
			if got := string(r.Bytes()); got != tt.want || r.Truncated() != tt.wantTrunc || r.Limit() != tt.newLimit {
				t.Errorf("after SetLimit(%d): %q truncated=%v limit=%d; want %q %v", tt.newLimit, got, r.Truncated(), r.Limit(), tt.want, tt.wantTrunc)
			}
		})
	}
}

func TestRingConcurrentWrites(t *testing.T) {
	r := NewRing(1000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				_, _ = r.Write([]byte("0123456789"))
			}
		})
	}
	wg.Wait()
	got := r.Bytes()
	if r.Total() != 80_000 || len(got) != 1000 {
		t.Fatalf("Total, Len = %d, %d", r.Total(), len(got))
	}
	// Whole writes land atomically, so the tail is still 0123456789 repeated.
	if want := strings.Repeat("0123456789", 100); string(got) != want {
		t.Errorf("tail mixed up: %q", got)
	}
}

func TestTrimPartialRune(t *testing.T) {
	euro := []byte("€") // e2 82 ac
	tests := []struct {
		name    string
		in, out []byte
	}{
		{name: "ascii", in: []byte("abc"), out: []byte("abc")},
		{name: "whole rune", in: append(append([]byte{}, euro...), 'x'), out: append(append([]byte{}, euro...), 'x')},
		{name: "two continuation bytes", in: append(append([]byte{}, euro[1:]...), 'x'), out: []byte("x")},
		{name: "one continuation byte", in: append([]byte{euro[2]}, 'x'), out: []byte("x")},
		{name: "at most three dropped", in: []byte{0x80, 0x80, 0x80, 0x80, 'x'}, out: []byte{0x80, 'x'}},
		{name: "empty", in: []byte{}, out: []byte{}},
	}
	for _, tt := range tests {
		if got := trimPartialRune(tt.in); !bytes.Equal(got, tt.out) {
			t.Errorf("%s: trimPartialRune(%x) = %x, want %x", tt.name, tt.in, got, tt.out)
		}
	}
}
