package runner

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"
)

// testCheck is the UUID the tests ping.
const testCheck = "5b8a3f0e-1c2d-4e5f-8a9b-0c1d2e3f4a5b"

// fastRetry keeps retrying tests quick.
var fastRetry = RetryPolicy{
	Attempts:       3,
	AttemptTimeout: 2 * time.Second,
	InitialBackoff: 10 * time.Millisecond,
	MaxBackoff:     50 * time.Millisecond,
	MaxElapsed:     5 * time.Second,
}

// pingRecord is one request the fake ping endpoint received.
type pingRecord struct {
	Method      string
	Path        string
	Query       url.Values
	Body        string
	ContentType string
	UserAgent   string
}

// Suffix is the path after /ping/<testCheck>: "", "/start", "/3", ….
func (r pingRecord) Suffix() string {
	const prefix = "/ping/" + testCheck
	if len(r.Path) >= len(prefix) && r.Path[:len(prefix)] == prefix {
		return r.Path[len(prefix):]
	}
	return r.Path
}

// pingServer records requests like the ping endpoint and answers 200 "OK"
// with a Ping-Body-Limit header, or the statuses queued in statuses first.
type pingServer struct {
	*httptest.Server
	mu         sync.Mutex
	reqs       []pingRecord
	limit      int
	statuses   []int
	retryAfter string
	delays     []time.Duration // per request, in order; missing means none
}

func newPingServer(t *testing.T, limit int, statuses ...int) *pingServer {
	t.Helper()
	s := &pingServer{limit: limit, statuses: statuses}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *pingServer) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.reqs)
	s.reqs = append(s.reqs, pingRecord{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: string(body),
		ContentType: r.Header.Get("Content-Type"), UserAgent: r.UserAgent(),
	})
	status := http.StatusOK
	if n < len(s.statuses) {
		status = s.statuses[n]
	}
	var delay time.Duration
	if n < len(s.delays) {
		delay = s.delays[n]
	}
	limit, retryAfter := s.limit, s.retryAfter
	s.mu.Unlock()

	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	if status == http.StatusOK {
		if limit > 0 {
			w.Header().Set(BodyLimitHeader, strconv.Itoa(limit))
		}
		_, _ = io.WriteString(w, "OK")
		return
	}
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, map[int]string{400: "invalid url format", 404: "not found"}[status])
}

func (s *pingServer) requests() []pingRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]pingRecord(nil), s.reqs...)
}

// checkURL is the test check's ping URL on s.
func (s *pingServer) checkURL() string { return s.URL + "/ping/" + testCheck }

// closedURL returns a URL at which nothing listens.
func closedURL(t *testing.T) string {
	t.Helper()
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr
}

// syncBuffer is a bytes.Buffer safe for concurrent use that can signal its
// first write containing a marker.
type syncBuffer struct {
	mu     sync.Mutex
	b      []byte
	marker string
	seen   chan struct{}
	once   sync.Once
}

func newSyncBuffer(marker string) *syncBuffer {
	return &syncBuffer{marker: marker, seen: make(chan struct{})}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b = append(s.b, p...)
	if s.marker != "" && bytes.Contains(s.b, []byte(s.marker)) {
		s.once.Do(func() { close(s.seen) })
	}
	return len(p), nil
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.b)
}
