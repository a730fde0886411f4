package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/vigil-operator/vigil/internal/badge"
	"github.com/vigil-operator/vigil/internal/checks"
)

// listBadges answers GET /badges/: the six badge URLs for every tag in the
// project and for "*" (all checks).
func (s *Server) listBadges(w http.ResponseWriter, r *request) {
	info, ok := s.Projects.Project(r.namespace)
	resp := &object{}
	if !ok || info.BadgeKey == "" || info.SigningSecret == "" {
		// A hand-written project Secret without badge keys: no badges.
		resp.add("badges", map[string]badge.URLSet{})
		writeRawJSON(w, http.StatusOK, resp.bytes())
		return
	}
	var tags []string
	for _, c := range s.Checks.InProject(r.namespace) {
		tags = append(tags, checks.Tags(c.Spec.Tags)...)
	}
	resp.add("badges", badge.URLSets(s.BaseURL, info.BadgeKey, info.SigningSecret, tags))
	writeRawJSON(w, http.StatusOK, resp.bytes())
}

// ServeBadge serves the public badges: /badge/<badge_key>/<signature>[/<tag>].<fmt>
// for a tag or all checks, and /b/<states>/<check badge key>.<fmt> for one
// check. No API key: the signature (or the check's badge key) is the
// credential.
func (s *Server) ServeBadge(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodOptions {
		setCORS(w.Header(), "GET, OPTIONS")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		setCORS(w.Header(), "GET, OPTIONS")
		w.Header().Set("Allow", "GET, HEAD, OPTIONS")
		writeError(w, http.StatusMethodNotAllowed, "badges are read with GET")
		return
	}
	path := r.URL.Path
	switch {
	case len(path) > len("/badge/") && path[:len("/badge/")] == "/badge/":
		s.serveProjectBadge(w, r, path[len("/badge/"):])
	case len(path) > len("/b/") && path[:len("/b/")] == "/b/":
		s.serveCheckBadge(w, r, path[len("/b/"):])
	default:
		writeError(w, http.StatusNotFound, "not found")
	}
}

func (s *Server) serveProjectBadge(w http.ResponseWriter, r *http.Request, rest string) {
	req, ok := badge.ParsePath(rest)
	if !ok {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	setCORS(w.Header(), "GET, OPTIONS")
	info, known := s.Projects.ByBadgeKey(req.BadgeKey)
	if !req.Format.Known() || !known || info.SigningSecret == "" || !req.Verify(info.SigningSecret) {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	project, err := s.Checks.Project(r.Context(), info.Namespace)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "try again")
		return
	}
	now := s.Checks.Now()
	statuses := func(yield func(badge.Status) bool) {
		for i, c := range project.Checks {
			if req.Tag != badge.AllTag && !badge.Matches(checks.Tags(c.Spec.Tags), req.Tag) {
				continue
			}
			if !yield(project.View(i, now).Status) {
				return
			}
		}
	}
	label := req.Label(s.masterLabel())
	writeBadge(w, req.Format, req.Format.Render(label, req.Aggregate(statuses)))
}

func (s *Server) serveCheckBadge(w http.ResponseWriter, r *http.Request, rest string) {
	req, ok := badge.ParseCheckPath(rest)
	if !ok {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	setCORS(w.Header(), "GET, OPTIONS")
	c, err := s.Checks.ByBadgeKey(r.Context(), req.BadgeKey)
	if errors.Is(err, checks.ErrNotFound) || !req.Format.Known() {
		writeError(w, http.StatusNotFound, "not found")
		return
	}
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "try again")
		return
	}
	obs, err := s.Checks.Observed(r.Context(), c)
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, "try again")
		return
	}
	res := badge.CheckBadge(s.Checks.View(c, obs, s.Checks.Now()).Status, req.ThreeState)
	label := badge.CheckLabel(c.Spec.Name, c.Spec.Slug, c.Name, checks.UUIDOf(c))
	writeBadge(w, req.Format, req.Format.Render(label, res))
}

func writeBadge(w http.ResponseWriter, f badge.Format, body []byte) {
	h := w.Header()
	h.Set("Content-Type", f.ContentType())
	h.Set("Cache-Control", badge.CacheControl)
	h.Set("Expires", time.Now().UTC().Format(http.TimeFormat))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

func (s *Server) masterLabel() string {
	if s.MasterBadgeLabel != "" {
		return s.MasterBadgeLabel
	}
	return badge.DefaultMasterLabel
}
