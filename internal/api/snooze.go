package api

import (
	"errors"
	"net/http"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/api/checkinput"
	"github.com/vigil-operator/vigil/internal/maintenance"
)

// snoozeView is a snooze as the API shows it (a Vigil extension).
type snoozeView struct {
	// Window is the MaintenanceWindow that holds the check's
	// notifications, in the check's namespace.
	Window string `json:"window"`
	From   string `json:"from"`
	Until  string `json:"until"`
}

// snoozeCheck answers POST /checks/<uuid>/snooze {"duration": seconds}:
// the check's notifications are held from now for that long (a one-off
// MaintenanceWindow for the check; snoozing again moves it).
func (s *Server) snoozeCheck(w http.ResponseWriter, r *request) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	d, err := checkinput.Snooze(r.body)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	mw, err := s.Checks.Snooze(r.Context(), c, d)
	if errors.Is(err, maintenance.ErrSnoozeTaken) {
		writeError(w, http.StatusConflict, err.Error())
		return
	}
	if err != nil {
		s.internalError(w, r, "snoozing the check", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"snooze": snoozeOf(mw)})
}

// unsnoozeCheck answers DELETE /checks/<uuid>/snooze: the snooze ends now
// (what it held is told, as at any window's end).
func (s *Server) unsnoozeCheck(w http.ResponseWriter, r *request) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	if err := s.Checks.Unsnooze(r.Context(), c); err != nil {
		s.internalError(w, r, "ending the snooze", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"snooze": nil})
}

func snoozeOf(mw *v1.MaintenanceWindow) snoozeView {
	return snoozeView{Window: mw.Name, From: mw.Spec.From.UTC().Format(time.RFC3339), Until: mw.Spec.To.UTC().Format(time.RFC3339)}
}
