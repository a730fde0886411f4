package httpserver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"
)

// DefaultBodyBudget bounds the request body bytes the handlers hold at once:
// 671 ping bodies of 100 kB, or 512 unauthenticated API bodies, being read
// at the same time.
const DefaultBodyBudget = 64 << 20

// smallBody is what a body may weigh without being charged to the budget:
// no more than the connection's own read buffer (4 KiB), so connections
// (which MaxConnections bounds) bound them. A ping without a body, or with a
// short one, never waits for the budget.
const smallBody = 4 << 10

// budgetWait is how long a body waits for room in the budget before it is
// answered 503 with Retry-After.
const budgetWait = time.Second

var (
	// ErrBodyTooLarge is returned with the first limit bytes of a longer
	// body.
	ErrBodyTooLarge = errors.New("request body too large")
	// ErrBusy is returned when the budget had no room for a body in time:
	// answer 503 with Retry-After.
	ErrBusy = errors.New("too many request bodies being read, try again")
)

// BodyBudget bounds the bytes of the request bodies the handlers read at
// once, across the server. Each body is charged what it may weigh (its
// Content-Length, or the handler's limit when it has none) before a byte
// is read, and until the handler is done with it; a body that finds no room
// waits a second, then is refused. A nil *BodyBudget charges nothing.
type BodyBudget struct {
	limit int64

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed, and replaced, whenever bytes come back
}

// NewBodyBudget returns a budget of limit bytes (DefaultBodyBudget when not
// positive).
func NewBodyBudget(limit int64) *BodyBudget {
	if limit <= 0 {
		limit = DefaultBodyBudget
	}
	return &BodyBudget{limit: limit, freed: make(chan struct{})}
}

// ReadBody reads r's body, at most limit bytes of it. It returns
// ErrBodyTooLarge, with the first limit bytes, when the body is longer;
// ErrBusy when the budget had no room; the read's error when the client
// failed to send it. release gives the bytes back to the budget: call it,
// whatever the error, once done with the data.
func (b *BodyBudget) ReadBody(r *http.Request, limit int64) (data []byte, release func(), err error) {
	n := limit + 1 // one byte more tells a longer body
	if r.ContentLength >= 0 && r.ContentLength < n {
		n = r.ContentLength
	}
	release = func() {}
	if n == 0 {
		return nil, release, nil
	}
	if b != nil && n > smallBody {
		charged, err := b.acquire(r.Context(), n)
		if err != nil {
			return nil, release, err
		}
		release = sync.OnceFunc(func() { b.release(charged) })
	}
	var buf bytes.Buffer
	if r.ContentLength >= 0 {
		buf.Grow(int(n)) // the client said how much: no doubling
	}
	if _, err := buf.ReadFrom(io.LimitReader(r.Body, n)); err != nil {
		return nil, release, err
	}
	data = buf.Bytes()
	if int64(len(data)) > limit {
		return data[:limit], release, ErrBodyTooLarge
	}
	return data, release, nil
}

// acquire charges n bytes, or the whole budget when n is more (such a body
// is read alone), waiting up to budgetWait for room. It returns what it
// charged.
func (b *BodyBudget) acquire(ctx context.Context, n int64) (int64, error) {
	n = min(n, b.limit)
	timer := time.NewTimer(budgetWait)
	defer timer.Stop()
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			return n, nil
		}
		freed := b.freed
		b.mu.Unlock()
		select {
		case <-freed:
		case <-timer.C:
			return 0, ErrBusy
		case <-ctx.Done():
			return 0, ErrBusy
		}
	}
}

func (b *BodyBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// InUse is how many bytes the budget has charged.
func (b *BodyBudget) InUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
