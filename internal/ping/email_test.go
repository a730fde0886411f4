package ping

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/emersion/go-smtp"
)

// countingReader serves n bytes of a message, or bytes without end when n
// is negative, in reads of at most 1000, and counts what it served.
type countingReader struct {
	n, served int
}

func (r *countingReader) Read(b []byte) (int, error) {
	if r.n >= 0 && r.served >= r.n {
		return 0, io.EOF
	}
	b = b[:min(len(b), 1000)]
	if r.n >= 0 {
		b = b[:min(len(b), r.n-r.served)]
	}
	for i := range b {
		b[i] = 'x'
	}
	r.served += len(b)
	return len(b), nil
}

// TestReadMessageStopsAtTheLimit: a message is read whole while it is
// smaller than the limit; a larger one, however long, is refused with
// go-smtp's 552 having read and buffered no more than the limit.
func TestReadMessageStopsAtTheLimit(t *testing.T) {
	const limit = 10_000
	for _, tc := range []struct {
		name string
		size int // -1: without end
		ok   bool
	}{
		{"empty", 0, true},
		{"small", 10, true},
		{"one under the limit", limit - 1, true},
		{"at the limit", limit, false},
		{"one over", limit + 1, false},
		{"without end", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &countingReader{n: tc.size}
			got, err := readMessage(r, limit)
			if r.served > limit {
				t.Fatalf("read %d bytes, more than the limit %d", r.served, limit)
			}
			if !tc.ok {
				if !errors.Is(err, smtp.ErrDataTooLarge) {
					t.Fatalf("err = %v, want ErrDataTooLarge", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, bytes.Repeat([]byte("x"), tc.size)) || cap(got) > limit {
				t.Fatalf("got %d bytes (cap %d), %v; want the %d-byte message", len(got), cap(got), err, tc.size)
			}
		})
	}
}

func TestAddressTemplate(t *testing.T) {
	for _, tc := range []struct{ address, want string }{
		{"5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a@pings.example.com", "{uuid}@{domain}"},
		{"<5D5F3E70-1C6D-4B6C-9C3A-1F0D2E3C4B5A@pings.example.com>", "{uuid}@{domain}"},
		{"kzyl2-8tqp0q6ozm9jsvxq+nightly@pings.example.com", "{ping-key}+{slug}@{domain}"},
		{"postmaster@pings.example.com", "{unknown}@{domain}"},
		{"kzyl2-8tqp0q6ozm9jsvxq", "{unknown}@{domain}"},
	} {
		if got := addressTemplate(tc.address); got != tc.want {
			t.Errorf("addressTemplate(%q) = %q, want %q", tc.address, got, tc.want)
		}
	}
}
