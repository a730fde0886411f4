package podlog

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func TestLastBytes(t *testing.T) {
	long := strings.Repeat("0123456789", 1000)
	tests := []struct {
		name, in string
		n        int
		oneByte  bool
	}{
		{name: "empty", in: "", n: 4},
		{name: "shorter than n", in: "ab", n: 4},
		{name: "exactly n", in: "abcd", n: 4},
		{name: "twice n", in: "abcdefgh", n: 4},
		{name: "much longer", in: long, n: 7},
		{name: "much longer, a byte at a time", in: long + "end", n: 5, oneByte: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r io.Reader = strings.NewReader(tt.in)
			if tt.oneByte {
				r = iotest.OneByteReader(r)
			}
			got, err := lastBytes(r, tt.n)
			want := tt.in[max(0, len(tt.in)-tt.n):]
			if err != nil || string(got) != want {
				t.Errorf("lastBytes = %q, %v; want %q", got, err, want)
			}
		})
	}
	if _, err := lastBytes(iotest.ErrReader(errors.New("boom")), 4); err == nil {
		t.Error("a read error was swallowed")
	}
}
