// Package api serves the Healthchecks Management API (v1, v2 and v3) from
// Check and Channel objects, so existing Healthchecks clients work against
// Vigil unchanged while kubectl and the API always agree.
//
// Everything it does to a check goes through the door for checks
// (package checks): a check's spec comes from the manager's informer cache
// and its observed state (pings, flips, status, pause) from the ping store;
// spec writes go to the Kubernetes API and return once the cache has seen
// them, so a client reading right after writing sees what it wrote; pause
// and resume are store writes. Behaviour follows
// the contract (shared/spec/management-api-v3.md) where it speaks and the
// reference service's where it is silent; docs/api.md lists the differences.
package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/vigil-operator/vigil/internal/api/checkinput"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/httpserver"
	"github.com/vigil-operator/vigil/internal/project"
)

// Server serves the Management API and the public badges.
type Server struct {
	// Checks is the door for what can be done to a check.
	Checks *checks.Door
	// Projects authenticates API keys and knows each project's keys.
	Projects *project.Registry
	// BaseURL is the site root used in returned URLs, such as
	// "https://vigil.example.com" (no trailing slash).
	BaseURL string
	// MasterBadgeLabel labels the all-checks badge.
	MasterBadgeLabel string
	// MaxBodyBytes bounds request bodies (the reference: 2,621,440).
	MaxBodyBytes int64
	// Bodies bounds the body bytes being read at once, with the ping
	// handler's; nil bounds nothing.
	Bodies *httpserver.BodyBudget

	rendered renderedChecks // the checks' JSON as last listed
}

// request is an API request after routing and authentication.
type request struct {
	*http.Request
	params
	version   int
	namespace string
	access    project.Access
	// keyLabel names the key presented (project.KeyLabel), for who did
	// what.
	keyLabel string
	body     checkinput.Object
}

// readOnly reports whether responses must omit what read-only keys may
// not see.
func (r *request) readOnly() bool { return r.access != project.ReadWrite }

// ServeAPI serves everything under /api/.
func (s *Server) ServeAPI(w http.ResponseWriter, hr *http.Request) {
	version, rest, ok := apiVersion(hr.URL.Path)
	if !ok {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	if rest == "status" || rest == "status/" {
		writeText(w, http.StatusOK, "OK")
		return
	}
	rt, p, ok := s.match(rest)
	if !ok {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	allowed := rt.allowed()
	setCORS(w.Header(), allowed)
	if hr.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h, ok := rt.methods[hr.Method]
	if !ok {
		w.Header().Set("Allow", allowed)
		writeError(w, http.StatusMethodNotAllowed, "method "+hr.Method+" not allowed; use "+allowed)
		return
	}
	h(w, &request{Request: hr, params: p, version: version})
}

// apiVersion splits /api/vN/rest; the reference treats anything that is not
// v2 or v3 as v1, and so do we for the three prefixes it routes.
func apiVersion(path string) (int, string, bool) {
	for v, prefix := range map[int]string{1: "/api/v1/", 2: "/api/v2/", 3: "/api/v3/"} {
		if strings.HasPrefix(path, prefix) {
			return v, strings.TrimPrefix(path, prefix), true
		}
	}
	return 0, "", false
}

func setCORS(h http.Header, methods string) {
	h.Set("Access-Control-Allow-Origin", "*")
	// X-Api-Key as the reference; Content-Type too, so that browsers may
	// send JSON bodies.
	h.Set("Access-Control-Allow-Headers", "X-Api-Key, Content-Type")
	h.Set("Access-Control-Allow-Methods", methods)
	h.Set("Access-Control-Max-Age", "600")
}

// read wraps a handler that a read-only key may call: the key comes from
// the X-Api-Key header only.
func (s *Server) read(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *request) {
		if !s.authenticate(w, r, r.Header.Get("X-Api-Key")) {
			return
		}
		h(w, r)
	}
}

// anonymousBodyLimit bounds the body of a write whose X-Api-Key header is
// absent, read before the key (then in its api_key field) is known: room
// for a create with a 10,000-character description even when every
// character is \u-escaped, as Python's json.dumps writes them (6 bytes
// each, 12 outside the BMP). The full MaxBodyBytes is read only for a key
// in the header that can write.
const anonymousBodyLimit = 128 << 10

// write wraps a handler that needs a read-write key. A key in the X-Api-Key
// header is checked before the body is read. Without one, the key may be in
// a POST body's api_key field (the contract allows it): the body is then
// read first, at most anonymousBodyLimit bytes of it, and a malformed body
// is a 400 before the key is looked at, as in the reference.
func (s *Server) write(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *request) {
		key, fromHeader := r.Header["X-Api-Key"]
		if fromHeader {
			presented := ""
			if len(key) > 0 {
				presented = key[0]
			}
			if !s.authorizeWrite(w, r, presented) {
				return
			}
		}
		if r.Method == http.MethodPost {
			limit := int64(anonymousBodyLimit)
			if fromHeader {
				limit = s.maxBodyBytes()
			}
			release, ok := s.parseBody(w, r, limit)
			defer release()
			if !ok {
				return
			}
		}
		if !fromHeader {
			presented, _ := r.body.APIKey()
			if !s.authorizeWrite(w, r, presented) {
				return
			}
		}
		h(w, r)
	}
}

// authorizeWrite authenticates a key and requires it to be read-write.
func (s *Server) authorizeWrite(w http.ResponseWriter, r *request, key string) bool {
	if !s.authenticate(w, r, key) {
		return false
	}
	if r.access != project.ReadWrite {
		writeError(w, http.StatusForbidden, "this endpoint needs a read-write API key; the key given is read-only")
		return false
	}
	return true
}

func (s *Server) maxBodyBytes() int64 {
	if s.MaxBodyBytes > 0 {
		return s.MaxBodyBytes
	}
	return 2621440
}

// parseBody reads and parses a POST body of at most limit bytes within the
// server's body budget. release gives its bytes back to the budget.
func (s *Server) parseBody(w http.ResponseWriter, r *request, limit int64) (release func(), ok bool) {
	tooLarge := func() {
		msg := "request body too large"
		if limit < s.maxBodyBytes() {
			msg += fmt.Sprintf(": at most %d bytes without an X-Api-Key header", limit)
		}
		writeError(w, http.StatusRequestEntityTooLarge, msg)
	}
	if r.ContentLength > limit {
		tooLarge() // said in advance: nothing to read
		return func() {}, false
	}
	data, release, err := s.Bodies.ReadBody(r.Request, limit)
	switch {
	case errors.Is(err, httpserver.ErrBodyTooLarge):
		tooLarge()
		return release, false
	case errors.Is(err, httpserver.ErrBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return release, false
	case err != nil:
		writeError(w, http.StatusBadRequest, "could not read request body")
		return release, false
	}
	obj, err := checkinput.ParseBody(data)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return release, false
	}
	r.body = obj
	return release, true
}

func (s *Server) authenticate(w http.ResponseWriter, r *request, key string) bool {
	if len(key) != project.KeyLength {
		writeError(w, http.StatusUnauthorized, "missing api key")
		return false
	}
	ns, access := s.Projects.Authenticate(key)
	if access == project.NoAccess {
		writeError(w, http.StatusUnauthorized, "wrong api key")
		return false
	}
	r.namespace, r.access, r.keyLabel = ns, access, project.KeyLabel(key)
	return true
}
