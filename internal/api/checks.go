package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/api/checkinput"
	"github.com/vigil-operator/vigil/internal/checkindex"
	"github.com/vigil-operator/vigil/internal/checkstate"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// projectChecks lists a project's checks, in no particular order.
//
// The items share their contents with the informer cache (no deep copy:
// with thousands of checks, copying them for every list or create is most
// of the request's cost), so callers only read them, and DeepCopy one before
// changing it.
func (s *Server) projectChecks(ctx context.Context, namespace string) ([]v1.Check, error) {
	var list v1.CheckList
	if err := s.Client.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// listChecks answers GET /checks/, filtered by slug and tags, oldest first
// (the reference's insertion order).
func (s *Server) listChecks(w http.ResponseWriter, r *request) {
	q := r.URL.Query()
	slug := ""
	if v := q["slug"]; len(v) > 0 {
		slug = v[len(v)-1] // the last value wins, as in the reference
	}
	var checks []v1.Check
	var err error
	if slug != "" {
		checks, err = checkindex.BySlug(r.Context(), s.Client, r.namespace, slug) // sorted
	} else if checks, err = s.projectChecks(r.Context(), r.namespace); err == nil {
		checkindex.SortOldestFirst(checks)
	}
	if err != nil {
		s.internalError(w, r, "listing checks", err)
		return
	}
	tags := q["tag"]
	var channels []v1.Channel
	if !r.readOnly() {
		if channels, err = s.projectChannels(r); err != nil {
			s.internalError(w, r, "listing channels", err)
			return
		}
	}
	observed, err := s.Store.ChecksIn(r.Context(), r.namespace)
	if err != nil {
		s.internalError(w, r, "reading the ping store", err)
		return
	}
	writeList(w, "checks", func(yield func(*object) bool) {
		for i := range checks {
			c := &checks[i]
			if checkstate.HasAllTags(c.Spec.Tags, tags) && !yield(s.renderCheck(c, observed[c.UID], r, channels)) {
				return
			}
		}
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
	obs, _, err := s.Store.Check(r.Context(), c.UID)
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
		if channels, err = s.projectChannels(r); err != nil {
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
	spec := checkinput.Defaults()
	in.Apply(&spec, r.version)
	if in.Channels != nil {
		names, ok := s.resolveChannels(w, r, *in.Channels)
		if !ok {
			return
		}
		spec.Channels = names
	}
	// Under the project's creation lock (package quota): the unique match
	// and the limit see every earlier creation, on any replica.
	var match *v1.Check
	var overLimit int
	c, err := s.Creates.Create(r.Context(), r.namespace, func(checks []v1.Check, limit int) (*v1.Check, error) {
		if in.UniqueLookup() {
			// Unsorted: the oldest match is found in one pass.
			if oldest := checkindex.Oldest(checks, func(c *v1.Check) bool { return in.Matches(c.Spec) }); oldest != nil {
				match = oldest.DeepCopy()
				return nil, nil
			}
		}
		if len(checks) >= limit {
			overLimit = limit
			return nil, nil
		}
		id := uuid.NewString()
		spec.UUID = id
		c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: r.namespace, Name: objectName(&spec, id)}, Spec: spec}
		return c, s.Checks.Create(r.Context(), c)
	})
	switch {
	case err != nil && c == nil:
		// The project's turn or its list failed (a lock wait that timed
		// out, the database or API server away): transient.
		s.Log.Error(err, "creating a check", "namespace", r.namespace)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "the check could not be created now; try again")
	case err != nil:
		s.writeFailed(w, r, "creating the check", err)
	case match != nil:
		s.applyUpdate(w, r, match, in, http.StatusOK)
	case overLimit > 0:
		writeError(w, http.StatusForbidden, fmt.Sprintf("the project has reached its limit of %d checks", overLimit))
	default:
		s.waitForCache(r.Context(), c)
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
	s.waitForCache(r.Context(), updated)
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
	default:
		s.internalError(w, r, what, err)
	}
}

// resolveChannels resolves a channels field against the project's channels,
// answering 400 itself.
func (s *Server) resolveChannels(w http.ResponseWriter, r *request, value string) ([]string, bool) {
	channels, err := s.projectChannels(r)
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
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	obs, _, err := s.Store.Check(r.Context(), c.UID)
	if err != nil {
		s.internalError(w, r, "reading the ping store", err)
		return
	}
	if err := s.Checks.Delete(r.Context(), c); err != nil {
		s.writeFailed(w, r, "deleting the check", err)
		return
	}
	s.waitForGone(r.Context(), c)
	// The reference answers with the check as it was, its channel links
	// already gone. Its rows in the store go when the controller sees the
	// deletion.
	writeRawJSON(w, http.StatusOK, s.renderCheck(c, obs, r, nil).bytes())
}

// pauseCheck answers POST /checks/<uuid>/pause. Pausing a paused check
// changes nothing.
func (s *Server) pauseCheck(w http.ResponseWriter, r *request) {
	s.changePause(w, r, s.Store.Pause)
}

// resumeCheck answers POST /checks/<uuid>/resume: 409 unless paused.
func (s *Server) resumeCheck(w http.ResponseWriter, r *request) {
	s.changePause(w, r, s.Store.Resume)
}

// changePause pauses or resumes in the ping store: observed state, never
// spec, which belongs to the user.
func (s *Server) changePause(w http.ResponseWriter, r *request, change func(context.Context, store.Target, time.Time) (store.Check, error)) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	obs, err := change(r.Context(), checkstate.Target(c, s.Client, s.pingLogLimit(c.Namespace)), s.now())
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

// waitForCache waits, briefly, until the informer cache holds obj at least
// at its resourceVersion, so that the client's next read sees the write.
func (s *Server) waitForCache(ctx context.Context, obj client.Object) {
	s.CacheWatch.Version(ctx, client.ObjectKeyFromObject(obj), "", obj.GetResourceVersion(), s.CacheWait)
}

// waitForGone waits, briefly, until the informer cache no longer holds obj.
func (s *Server) waitForGone(ctx context.Context, obj client.Object) {
	s.CacheWatch.Gone(ctx, client.ObjectKeyFromObject(obj), s.CacheWait)
}

// objectName is the readable, deterministic name of a check created
// through the API: its slug (or slugified name) and the start of its UUID.
func objectName(spec *v1.CheckSpec, id string) string {
	base := spec.Slug
	if base == "" {
		base = checkinput.Slugify(spec.Name)
	}
	return checkindex.ObjectName(base, id)
}
