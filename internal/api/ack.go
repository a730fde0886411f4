package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/vigil-operator/vigil/internal/store"
)

// ackView is an acknowledgement as the API shows it (a Vigil extension).
type ackView struct {
	// At is when the down was acknowledged, By who ("API key hcw_…",
	// "dashboard (key hcw_…)").
	At string `json:"at"`
	By string `json:"by"`
}

func ackOf(c store.Check) *ackView {
	ack, ok := c.Acknowledged()
	if !ok {
		return nil
	}
	return &ackView{At: ack.At.UTC().Format(time.RFC3339), By: ack.By}
}

// ackCheck answers POST /checks/<uuid>/ack: the check's current down is
// acknowledged by the key that asks, and its re-alerts and escalation
// stop until it ends. 409 unless the check is down; a down acknowledged
// already keeps its first acknowledgement.
func (s *Server) ackCheck(w http.ResponseWriter, r *request) {
	c, ok := s.lookupCheck(w, r)
	if !ok {
		return
	}
	obs, err := s.Checks.Acknowledge(r.Context(), c, "API key "+r.keyLabel)
	if errors.Is(err, store.ErrNotDown) {
		writeError(w, http.StatusConflict, "check is not down")
		return
	}
	if err != nil {
		s.internalError(w, r, "acknowledging the down", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ack": ackOf(obs)})
}

// getAck answers GET /checks/<uuid>/ack: the acknowledgement of the
// check's current down, or null.
func (s *Server) getAck(w http.ResponseWriter, r *request) {
	_, obs, ok := s.lookupObserved(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"ack": ackOf(obs)})
}
