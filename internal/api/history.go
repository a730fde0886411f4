package api

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/store"
)

// lookupCheck finds the check the path names, answering 404 (no such check)
// or 403 (another project's check, named by UUID) itself.
func (s *Server) lookupCheck(w http.ResponseWriter, r *request) (*v1.Check, bool) {
	var c *v1.Check
	var err error
	if r.uuid != "" {
		c, err = s.Checks.ByUUID(r.Context(), r.uuid)
	} else {
		c, err = s.Checks.ByUniqueKey(r.namespace, r.uniqueKey)
	}
	switch {
	case errors.Is(err, checks.ErrNotFound):
		writeError(w, http.StatusNotFound, "check not found")
		return nil, false
	case err != nil:
		s.internalError(w, r, "looking up the check", err)
		return nil, false
	case c.Namespace != r.namespace:
		writeError(w, http.StatusForbidden, "the check belongs to another project")
		return nil, false
	}
	return c, true
}

// lookupObserved finds the check the path names, as lookupCheck does, and
// what the ping store holds of it, answering a failure itself.
func (s *Server) lookupObserved(w http.ResponseWriter, r *request) (*v1.Check, store.Check, bool) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return nil, store.Check{}, false
	}
	obs, err := s.Checks.Observed(r.Context(), c)
	if err != nil {
		s.internalError(w, r, "reading the ping store", err)
		return nil, store.Check{}, false
	}
	return c, obs, true
}

// internalError answers a failure of the store or the cache: 503 with
// Retry-After while the store's database does not answer (said once by the
// store, not logged per request), 500 otherwise.
func (s *Server) internalError(w http.ResponseWriter, r *request, what string, err error) {
	if errors.Is(err, store.ErrFull) {
		w.Header().Set("Retry-After", "30")
		writeError(w, http.StatusServiceUnavailable, "the ping store is full; try again later")
		return
	}
	if s.Checks.Unavailable(err) {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "the ping store is unavailable; try again")
		return
	}
	if errors.Is(err, checks.ErrOverShare) {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, err.Error())
		return
	}
	if errors.Is(err, checks.ErrBusy) {
		logr.FromContextOrDiscard(r.Context()).Info(what+" was given up", "reason", err.Error())
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, checks.ErrBusy.Error()+"; try again")
		return
	}
	// The request's logger carries its ID, as its request line does with
	// its route.
	logr.FromContextOrDiscard(r.Context()).Error(err, what)
	writeError(w, http.StatusInternalServerError, what+" failed; try again")
}

// listPings answers GET /checks/<uuid>/pings/: newest first, at most the
// project's ping-log limit, with run durations paired as the reference
// pairs them.
func (s *Server) listPings(w http.ResponseWriter, r *request) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	pings, err := s.Checks.Pings(r.Context(), c)
	if err != nil {
		s.internalError(w, r, "reading the ping log", err)
		return
	}
	durations := checks.RunDurations(pings)
	uuid := checks.UUIDOf(c)
	writeList(w, "pings", func(yield func(*object) bool) {
		for i, p := range pings {
			if !yield(s.renderPing(p, durations, i, uuid, r.version)) {
				return
			}
		}
	})
}

// renderPing is the i-th ping of the log as the API lists it; durations
// are the log's run durations by index.
func (s *Server) renderPing(p store.LoggedPing, durations map[int]time.Duration, i int, uuid string, version int) *object {
	o := &object{}
	o.add("type", string(p.Kind))
	o.add("date", isoMicro(p.At))
	o.add("n", p.N)
	o.add("scheme", p.Scheme)
	o.add("remote_addr", nullIfEmpty(p.RemoteAddr))
	o.add("method", p.Method)
	o.add("ua", p.UA)
	o.add("rid", nullIfEmpty(p.RID))
	if p.BodySize > 0 {
		o.add("body_url", s.BaseURL+apiPrefix(version)+"checks/"+uuid+"/pings/"+strconv.FormatInt(p.N, 10)+"/body")
	} else {
		o.add("body_url", nil)
	}
	if d, ok := durations[i]; ok {
		o.add("duration", math.Round(d.Seconds()*100)/100)
	}
	return o
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func apiPrefix(version int) string {
	switch version {
	case 1:
		return "/api/v1/"
	case 2:
		return "/api/v2/"
	}
	return "/api/v" + strconv.Itoa(version) + "/"
}

// pingBody answers GET /checks/<uuid>/pings/<n>/body with the body verbatim.
func (s *Server) pingBody(w http.ResponseWriter, r *request) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	body, err := s.Checks.PingBody(r.Context(), c, r.n)
	switch {
	case errors.Is(err, checks.ErrPingExpired), errors.Is(err, checks.ErrNoPing):
		writeError(w, http.StatusNotFound, err.Error())
	case err != nil:
		s.internalError(w, r, "reading the ping log", err)
	case len(body) == 0:
		writeError(w, http.StatusNotFound, "ping has no body")
	default:
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body)
	}
}

// listFlips answers GET /checks/<uuid or unique_key>/flips/ with a bare
// array, newest first, filtered by seconds, start and end.
func (s *Server) listFlips(w http.ResponseWriter, r *request) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	filter, err := parseFlipFilter(r.URL.Query(), s.Checks.Now())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	flips, err := s.Checks.Flips(r.Context(), c)
	if err != nil {
		s.internalError(w, r, "reading the flips", err)
		return
	}
	writeList(w, "", func(yield func(*object) bool) {
		for _, f := range flips {
			if !filter.keep(f.At) {
				continue
			}
			o := &object{}
			o.add("timestamp", isoSeconds(f.At))
			up := 0
			if f.Up {
				up = 1
			}
			o.add("up", up)
			if !yield(o) {
				return
			}
		}
	})
}

type flipFilter struct {
	from, before   time.Time
	hasFrom, hasTo bool
}

func (f flipFilter) keep(t time.Time) bool {
	if f.hasFrom && t.Before(f.from) {
		return false
	}
	if f.hasTo && !t.Before(f.before) {
		return false
	}
	return true
}

// parseFlipFilter validates the flips query as the reference does: integers
// (Python's int() syntax), start and end in 0..10^10 UNIX seconds, seconds
// in 0..31536000 (0 means no filter, and an empty value is ignored); the
// last of repeated values wins.
func parseFlipFilter(q url.Values, now time.Time) (flipFilter, error) {
	var f flipFilter
	last := func(name string) (string, bool) {
		v, ok := q[name]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[len(v)-1], true
	}
	if v, ok := last("seconds"); ok && strings.TrimSpace(v) != "" {
		n, err := parsePythonInt(v, true)
		if err != nil || n < 0 || n > 31536000 {
			return f, errors.New("seconds must be a whole number of seconds from 0 to 31536000")
		}
		if n > 0 {
			f.from, f.hasFrom = now.Add(-time.Duration(n)*time.Second), true
		}
	}
	for _, name := range []string{"start", "end"} {
		v, ok := last(name)
		if !ok {
			continue
		}
		n, err := parsePythonInt(v, false)
		if err != nil || n < 0 || n > 10_000_000_000 {
			return f, errors.New(name + " must be a UNIX timestamp (whole seconds) from 0 to 10000000000")
		}
		t := time.Unix(n, 0)
		if name == "start" {
			if !f.hasFrom || t.After(f.from) {
				f.from, f.hasFrom = t, true
			}
		} else {
			f.before, f.hasTo = t, true
		}
	}
	return f, nil
}

// parsePythonInt parses an integer the way Python's int() does: surrounding
// whitespace, a leading sign and single underscores between digits allowed.
// With allowPointZero, a trailing ".0", ".00", ... is accepted too, as the
// reference's form field does for seconds.
func parsePythonInt(s string, allowPointZero bool) (int64, error) {
	s = strings.TrimSpace(s)
	if allowPointZero {
		if i := strings.IndexByte(s, '.'); i >= 0 && i < len(s)-1 && strings.Trim(s[i+1:], "0") == "" {
			s = s[:i]
		}
	}
	sign := int64(1)
	switch {
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	case strings.HasPrefix(s, "-"):
		sign, s = -1, s[1:]
	}
	if s == "" || s[0] < '0' || s[0] > '9' || s[len(s)-1] == '_' || strings.Contains(s, "__") {
		return 0, errors.New("not an integer")
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64)
	if err != nil {
		return 0, errors.New("not an integer")
	}
	return sign * n, nil
}
