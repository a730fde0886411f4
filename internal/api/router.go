package api

import (
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// route is one Management API endpoint: the methods it accepts, whether it
// needs a read-write key, and its handler.
type route struct {
	methods map[string]handlerFunc
}

// handlerFunc serves an authenticated API request.
type handlerFunc func(w http.ResponseWriter, r *request)

var (
	uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
	// The reference's sha1 converter is [A-z0-9]{40}; unique keys are
	// lowercase hex, and anything else of that shape simply finds nothing.
	uniqueKeyRE = regexp.MustCompile(`^[A-z0-9]{40}$`)
	intRE       = regexp.MustCompile(`^[0-9]+$`)
)

// match finds the route for a path below /api/vN/ and the path parameters.
// Paths are accepted with and without a trailing slash.
func (s *Server) match(rest string) (*route, params, bool) {
	rest = strings.TrimSuffix(rest, "/")
	parts := strings.Split(rest, "/")
	p := params{}
	switch {
	case rest == "checks":
		return &route{methods: map[string]handlerFunc{
			http.MethodGet:  s.read(s.listChecks),
			http.MethodPost: s.write(s.createCheck),
		}}, p, true
	case rest == "channels":
		return &route{methods: map[string]handlerFunc{http.MethodGet: s.write(s.listChannels)}}, p, true
	case rest == "badges":
		return &route{methods: map[string]handlerFunc{http.MethodGet: s.read(s.listBadges)}}, p, true
	case len(parts) < 2 || parts[0] != "checks":
		return nil, params{}, false
	}

	id := parts[1]
	switch {
	case uuidRE.MatchString(id):
		p.uuid = id
	case uniqueKeyRE.MatchString(id):
		p.uniqueKey = id
	default:
		return nil, params{}, false
	}
	sub := parts[2:]
	switch {
	case len(sub) == 0 && p.uuid != "":
		return &route{methods: map[string]handlerFunc{
			http.MethodGet:    s.read(s.getCheck),
			http.MethodPost:   s.write(s.updateCheck),
			http.MethodDelete: s.write(s.deleteCheck),
		}}, p, true
	case len(sub) == 0:
		return &route{methods: map[string]handlerFunc{http.MethodGet: s.read(s.getCheck)}}, p, true
	case len(sub) == 1 && sub[0] == "flips":
		return &route{methods: map[string]handlerFunc{http.MethodGet: s.read(s.listFlips)}}, p, true
	case len(sub) == 1 && sub[0] == "stats":
		return &route{methods: map[string]handlerFunc{http.MethodGet: s.read(s.runStats)}}, p, true
	case len(sub) == 1 && sub[0] == "dependencies":
		return &route{methods: map[string]handlerFunc{http.MethodGet: s.read(s.getDependencies)}}, p, true
	case p.uuid == "":
		return nil, params{}, false
	case len(sub) == 1 && sub[0] == "pause":
		return &route{methods: map[string]handlerFunc{http.MethodPost: s.write(s.pauseCheck)}}, p, true
	case len(sub) == 1 && sub[0] == "resume":
		return &route{methods: map[string]handlerFunc{http.MethodPost: s.write(s.resumeCheck)}}, p, true
	case len(sub) == 1 && sub[0] == "ack":
		return &route{methods: map[string]handlerFunc{
			http.MethodGet:  s.read(s.getAck),
			http.MethodPost: s.write(s.ackCheck),
		}}, p, true
	case len(sub) == 1 && sub[0] == "snooze":
		return &route{methods: map[string]handlerFunc{
			http.MethodPost:   s.write(s.snoozeCheck),
			http.MethodDelete: s.write(s.unsnoozeCheck),
		}}, p, true
	case len(sub) == 1 && sub[0] == "pings":
		return &route{methods: map[string]handlerFunc{http.MethodGet: s.write(s.listPings)}}, p, true
	case len(sub) == 3 && sub[0] == "pings" && sub[2] == "body" && intRE.MatchString(sub[1]):
		n, err := strconv.ParseInt(sub[1], 10, 64)
		if err != nil {
			return nil, params{}, false // more digits than any serial
		}
		p.n = n
		return &route{methods: map[string]handlerFunc{http.MethodGet: s.write(s.pingBody)}}, p, true
	}
	return nil, params{}, false
}

// params are the parts of the path a handler needs.
type params struct {
	uuid      string
	uniqueKey string
	n         int64
}

// allowed lists a route's methods for CORS and Allow headers.
func (rt *route) allowed() string {
	m := make([]string, 0, len(rt.methods)+1)
	for k := range rt.methods {
		m = append(m, k)
	}
	sort.Strings(m)
	return strings.Join(append(m, http.MethodOptions), ", ")
}
