package api

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"time"

	"github.com/go-logr/logr"
)

// Handler is Vigil's whole HTTP surface: the Management API (/api/v1/,
// /api/v2/, /api/v3/), the public badges (/badge/, /b/), each project's
// Prometheus endpoint (/projects/<uuid>/metrics/) and, when given, the ping
// endpoints (/ping/) and the dashboard (/, /login, /logout, /checks/,
// /static/; package dashboard). Every request gets an ID (X-Request-Id, kept when
// the client or a proxy sent one) that its log line carries, and every
// answer says X-Content-Type-Options: nosniff.
func (s *Server) Handler(ping, dashboard http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/", s.ServeAPI)
	mux.HandleFunc("/badge/", s.ServeBadge)
	mux.HandleFunc("/b/", s.ServeBadge)
	mux.HandleFunc("/projects/", s.ServeMetrics)
	if ping != nil {
		mux.Handle("/ping/", ping)
	}
	if dashboard != nil {
		for _, p := range []string{"/{$}", "/login", "/logout", "/checks/", "/static/"} {
			mux.Handle(p, dashboard)
		}
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not found")
	})
	return withRequestLog(s.Log, mux)
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
		// The route, not the path: paths carry credentials.
		log.V(v).Info("request", "requestID", id, "method", r.Method, "route", templateOf(r.URL.Path),
			"status", rec.status, "bytes", rec.bytes, "duration", time.Since(start).String())
	})
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
