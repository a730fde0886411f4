// Package site is the root of Vigil's HTTP server: it routes each path to
// the part that serves it (the Management API, badges, the Prometheus
// endpoints, pings, the dashboard and the public status pages) and logs
// every request by its route, never by a path that carries a credential.
package site

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
)

// Parts are the handlers of Vigil's HTTP surface, each at its own paths.
type Parts struct {
	// API serves the Management API: /api/v1/, /api/v2/, /api/v3/.
	API http.Handler
	// Badges serves the public badges: /badge/, /b/.
	Badges http.Handler
	// Metrics serves each project's Prometheus endpoint: /projects/.
	Metrics http.Handler
	// Pings serves the ping endpoints: /ping/.
	Pings http.Handler
	// Dashboard serves the web dashboard: /, /login, /logout, /checks/,
	// the OpenID Connect sign-in's /auth/, and the pages' shared /static/.
	Dashboard http.Handler
	// StatusPages serves the public status pages: /status/.
	StatusPages http.Handler

	// Ready, when set, is closed once the parts can serve: until then a
	// request goes to Early, and waits for Ready (startWait at most) when
	// Early did not answer it.
	Ready <-chan struct{}
	// Early answers the requests it can before Ready (the pings it can
	// keep), and reports whether it answered.
	Early func(w http.ResponseWriter, r *http.Request) bool
}

// startWait bounds how long a request waits for a starting server's parts:
// longer, it is answered 503 with Retry-After.
const startWait = 20 * time.Second

// Handler is Vigil's whole HTTP surface: each path goes straight to its
// part (a ping to the ping handler, never through the API's router); a
// part left nil, and any other path, answers 404. Every request gets an ID
// (X-Request-Id, kept when the client or a proxy sent one) that its log
// line carries, and every answer says X-Content-Type-Options: nosniff.
func Handler(log logr.Logger, p Parts) http.Handler {
	mux := http.NewServeMux()
	handle := func(h http.Handler, paths ...string) {
		if h != nil {
			for _, path := range paths {
				mux.Handle(path, h)
			}
		}
	}
	handle(p.API, "/api/")
	handle(p.Badges, "/badge/", "/b/")
	handle(p.Metrics, "/projects/")
	handle(p.Pings, "/ping/")
	handle(p.Dashboard, "/{$}", "/login", "/logout", "/auth/", "/checks/", "/static/")
	handle(p.StatusPages, "/status/")
	mux.HandleFunc("/", notFound)
	if p.Ready == nil {
		return withRequestLog(log, mux)
	}
	return withRequestLog(log, untilReady(p.Ready, p.Early, mux))
}

// untilReady holds the requests that come before ready, those early does
// not answer, until it is closed.
func untilReady(ready <-chan struct{}, early func(http.ResponseWriter, *http.Request) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-ready:
		default:
			if early != nil && early(w, r) {
				return
			}
			wait := time.NewTimer(startWait)
			defer wait.Stop()
			select {
			case <-ready:
			case <-wait.C:
				w.Header().Set("Retry-After", "5")
				if strings.HasPrefix(r.URL.Path, "/api/") {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusServiceUnavailable)
					_, _ = io.WriteString(w, `{"error":"starting, try again"}`)
					return
				}
				http.Error(w, "starting, try again", http.StatusServiceUnavailable)
				return
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// notFound answers as the API does, in JSON.
func notFound(w http.ResponseWriter, _ *http.Request) {
	const body = `{"error":"not found"}`
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(w, body)
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (r *statusRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// Unwrap lets http.ResponseController reach the real writer.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func withRequestLog(log logr.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 128 {
			id = newRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		// JSON answers carry <, > and & as they are (the reference's
		// encoding), and badges and pings echo what clients wrote: no
		// browser may take any of them for HTML.
		w.Header().Set("X-Content-Type-Options", "nosniff")
		rec := &statusRecorder{ResponseWriter: w}
		start := time.Now()
		next.ServeHTTP(rec, r.WithContext(logr.NewContext(r.Context(), log.WithValues("requestID", id))))
		// Pings are the hot path: log them at a higher verbosity.
		v := 1
		if len(r.URL.Path) >= 6 && r.URL.Path[:6] == "/ping/" {
			v = 2
		}
		// The route, not the path: paths carry credentials. Worked out only
		// for a line that is written: it is most of a ping's logging cost.
		if l := log.V(v); l.Enabled() {
			l.Info("request", "requestID", id, "method", r.Method, "route", templateOf(r.URL.Path),
				"status", rec.status, "bytes", rec.bytes, "duration", time.Since(start).String())
		}
	})
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
