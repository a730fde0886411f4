package api

import (
	"bytes"
	"context"
	"errors"
	"net/http"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/api/checkinput"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// listChecks answers GET /checks/, filtered by slug and tags, oldest first
// (the reference's insertion order).
func (s *Server) listChecks(w http.ResponseWriter, r *request) {
	q := r.URL.Query()
	slug := ""
	if v := q["slug"]; len(v) > 0 {
		slug = v[len(v)-1] // the last value wins, as in the reference
	}
	tags := q["tag"]
	var channels []v1.Channel
	var err error
	if !r.readOnly() {
		if channels, err = s.Checks.ProjectChannels(r.Context(), r.namespace); err != nil {
			s.internalError(w, r, "listing channels", err)
			return
		}
	}
	project, err := s.Checks.Project(r.Context(), r.namespace)
	if err != nil {
		s.internalError(w, r, "reading the ping store", err)
		return
	}
	form := listForm{namespace: r.namespace, version: r.version, readOnly: r.readOnly()}
	now := s.Checks.Now()
	pass := s.rendered.pass(form, slug == "" && len(tags) == 0, channels, now)
	writeListJSON(w, "checks", func(yield func([]byte) bool) {
		for i, c := range project.Checks { // oldest first
			if slug != "" && c.Spec.Slug != slug || !checks.HasAllTags(c.Spec.Tags, tags) {
				continue
			}
			v := project.View(i, now)
			key := renderKey{generation: c.Generation, view: v, channels: pass.channels}
			item := pass.json(c.UID, key, func() []byte {
				o := s.renderView(c, v, r, channels)
				defer o.release()
				return bytes.Clone(o.bytes())
			})
			if !yield(item) {
				return
			}
		}
		pass.finish()
	})
}

// getCheck answers GET /checks/<uuid> and /checks/<unique_key>.
func (s *Server) getCheck(w http.ResponseWriter, r *request) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	s.respondCheck(w, r, http.StatusOK, c)
}

func (s *Server) respondCheck(w http.ResponseWriter, r *request, status int, c *v1.Check) {
	obs, err := s.Checks.Observed(r.Context(), c)
	if err != nil {
		s.internalError(w, r, "reading the ping store", err)
		return
	}
	s.respondObserved(w, r, status, c, obs)
}

// respondObserved answers with the check as the store observed it.
func (s *Server) respondObserved(w http.ResponseWriter, r *request, status int, c *v1.Check, obs store.Check) {
	var channels []v1.Channel
	if !r.readOnly() {
		var err error
		if channels, err = s.Checks.ProjectChannels(r.Context(), r.namespace); err != nil {
			s.internalError(w, r, "listing channels", err)
			return
		}
	}
	writeRawJSON(w, status, s.renderCheck(c, obs, r, channels).bytes())
}

// createCheck answers POST /checks/: create, or update the oldest check that
// matches the request on every field listed in unique.
func (s *Server) createCheck(w http.ResponseWriter, r *request) {
	in, err := checkinput.Validate(r.body, true)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	cr := checks.Creation{Namespace: r.namespace, Spec: v1.DefaultCheckSpec()}
	in.Apply(&cr.Spec, r.version)
	if in.Channels != nil {
		names, ok := s.resolveChannels(w, r, *in.Channels)
		if !ok {
			return
		}
		cr.Spec.Channels = names
	}
	if in.UniqueLookup() {
		cr.Existing = func(c *v1.Check) bool { return in.Matches(c.Spec) }
	}
	c, created, err := s.Checks.Create(r.Context(), cr)
	var limit *checks.LimitError
	var turn *checks.TurnError
	switch {
	case errors.As(err, &limit):
		writeError(w, http.StatusForbidden, limit.Error())
	case errors.As(err, &turn):
		logr.FromContextOrDiscard(r.Context()).Error(err, "creating a check", "namespace", r.namespace)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "the check could not be created now; try again")
	case err != nil:
		s.writeFailed(w, r, "creating the check", err)
	case !created:
		s.applyUpdate(w, r, c, in, http.StatusOK)
	default:
		s.respondCheck(w, r, http.StatusCreated, c)
	}
}

// updateCheck answers POST /checks/<uuid>.
func (s *Server) updateCheck(w http.ResponseWriter, r *request) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	in, err := checkinput.Validate(r.body, false)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.applyUpdate(w, r, c, in, http.StatusOK)
}

// applyUpdate writes the request's fields into the check's spec (omitted
// fields unchanged) with optimistic concurrency, and answers with the check
// as stored.
func (s *Server) applyUpdate(w http.ResponseWriter, r *request, c *v1.Check, in *checkinput.Input, status int) {
	var names []string
	if in.Channels != nil {
		var ok bool
		if names, ok = s.resolveChannels(w, r, *in.Channels); !ok {
			return
		}
	}
	updated, err := s.Checks.Update(r.Context(), c, func(c *v1.Check) error {
		in.Apply(&c.Spec, r.version)
		if in.Channels != nil {
			c.Spec.Channels = names
		}
		return nil
	})
	if err != nil {
		s.writeFailed(w, r, "updating the check", err)
		return
	}
	s.respondCheck(w, r, status, updated)
}

// writeFailed answers a failed write: the check vanished (404), the API
// server rejected the object (400 with its message), or something else.
func (s *Server) writeFailed(w http.ResponseWriter, r *request, what string, err error) {
	switch {
	case apierrors.IsNotFound(err):
		writeError(w, http.StatusNotFound, "check not found")
	case apierrors.IsInvalid(err):
		writeError(w, http.StatusBadRequest, "the check was rejected: "+err.Error())
	default: // checks.ErrBusy among them: 503, try again
		s.internalError(w, r, what, err)
	}
}

// resolveChannels resolves a channels field against the project's channels,
// answering 400 itself.
func (s *Server) resolveChannels(w http.ResponseWriter, r *request, value string) ([]string, bool) {
	channels, err := s.Checks.ProjectChannels(r.Context(), r.namespace)
	if err != nil {
		s.internalError(w, r, "listing channels", err)
		return nil, false
	}
	refs := make([]checkinput.ChannelRef, 0, len(channels))
	for i := range channels {
		refs = append(refs, checkinput.ChannelRef{Object: channels[i].Name, ID: string(channels[i].UID), Name: channelName(&channels[i])})
	}
	names, err := checkinput.ResolveChannels(value, refs)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return nil, false
	}
	return names, true
}

// deleteCheck answers DELETE /checks/<uuid> with the check as it was.
func (s *Server) deleteCheck(w http.ResponseWriter, r *request) {
	c, obs, ok := s.lookupObserved(w, r)
	if !ok {
		return
	}
	if err := s.Checks.Delete(r.Context(), c); err != nil {
		s.writeFailed(w, r, "deleting the check", err)
		return
	}
	// The reference answers with the check as it was, its channel links
	// already gone.
	writeRawJSON(w, http.StatusOK, s.renderCheck(c, obs, r, nil).bytes())
}

// pauseCheck answers POST /checks/<uuid>/pause. Pausing a paused check
// changes nothing.
func (s *Server) pauseCheck(w http.ResponseWriter, r *request) {
	s.changePause(w, r, s.Checks.Pause)
}

// resumeCheck answers POST /checks/<uuid>/resume: 409 unless paused.
func (s *Server) resumeCheck(w http.ResponseWriter, r *request) {
	s.changePause(w, r, s.Checks.Resume)
}

// changePause pauses or resumes in the ping store: observed state, never
// spec, which belongs to the user.
func (s *Server) changePause(w http.ResponseWriter, r *request, change func(context.Context, *v1.Check) (store.Check, error)) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	obs, err := change(r.Context(), c)
	if errors.Is(err, monitor.ErrNotPaused) {
		writeError(w, http.StatusConflict, "check is not paused")
		return
	}
	if err != nil {
		s.internalError(w, r, "changing the pause state", err)
		return
	}
	s.respondObserved(w, r, http.StatusOK, c, obs)
}
