package runner

import (
	"sync"
	"unicode/utf8"
)

// Ring keeps the last Limit bytes written to it: the tail of a command's
// output. It is safe for concurrent use. Memory grows with the data written,
// up to the limit, so a large limit costs nothing for a quiet command.
type Ring struct {
	mu    sync.Mutex
	limit int
	buf   []byte // len(buf) <= limit; once full, the oldest byte is at pos
	pos   int
	total int64
}

// NewRing returns a Ring keeping the last limit bytes (none if limit <= 0).
func NewRing(limit int) *Ring {
	return &Ring{limit: max(limit, 0)}
}

// Write keeps the tail of p. It never fails.
func (r *Ring) Write(p []byte) (int, error) {
	n := len(p)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total += int64(n)
	if r.limit == 0 {
		return n, nil
	}
	if len(p) > r.limit {
		p = p[len(p)-r.limit:]
	}
	if len(r.buf) < r.limit {
		k := min(r.limit-len(r.buf), len(p))
		r.buf = append(r.buf, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		k := copy(r.buf[r.pos:], p)
		p = p[k:]
		r.pos = (r.pos + k) % r.limit
	}
	return n, nil
}

// Bytes returns a copy of the bytes kept, oldest first.
func (r *Ring) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bytesLocked()
}

func (r *Ring) bytesLocked() []byte {
	out := make([]byte, 0, len(r.buf))
	out = append(out, r.buf[r.pos:]...)
	return append(out, r.buf[:r.pos]...)
}

// Len returns how many bytes are kept.
func (r *Ring) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.buf)
}

// Total returns how many bytes were written, kept or not.
func (r *Ring) Total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}

// Truncated reports whether older bytes were dropped.
func (r *Ring) Truncated() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total > int64(len(r.buf))
}

// Limit returns the current limit.
func (r *Ring) Limit() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.limit
}

// SetLimit changes the limit. Shrinking drops the oldest bytes; growing keeps
// everything and makes room for more (bytes already dropped stay dropped).
func (r *Ring) SetLimit(limit int) {
	limit = max(limit, 0)
	r.mu.Lock()
	defer r.mu.Unlock()
	data := r.bytesLocked()
	if len(data) > limit {
		data = data[len(data)-limit:]
	}
	r.buf, r.pos, r.limit = data, 0, limit
}

// trimPartialRune drops up to utf8.UTFMax-1 leading continuation bytes: what
// is left of a multi-byte character whose start was cut off. A body starting
// with invalid UTF-8 can make a Healthchecks-compatible server that filters
// bodies by keyword fail with 500.
func trimPartialRune(b []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return b
}
