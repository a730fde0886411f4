package api

import (
	"net/http"
	"time"
)

// dependenciesView is what a check depends on, as the API shows it (a
// Vigil extension): spec.dependsOn resolved.
type dependenciesView struct {
	// DependsOn are the checks it depends on.
	DependsOn []parentView `json:"depends_on"`
	// Missing are names spec.dependsOn gives that no check has.
	Missing []string `json:"missing"`
	// HeldBy is the check whose down holds its notifications now.
	HeldBy *heldByView `json:"held_by"`
	// Problem says why its dependencies hold nothing (a cycle, too many).
	Problem *string `json:"problem"`
}

// parentView is one check it depends on: its object name, its status, and
// its UUID (read-write keys) or unique key (read-only keys), as the check
// list shows them.
type parentView struct {
	Name      string `json:"name"`
	Status    string `json:"status"`
	UUID      string `json:"uuid,omitempty"`
	UniqueKey string `json:"unique_key,omitempty"`
}

type heldByView struct {
	Name      string `json:"name"`
	DownSince string `json:"down_since,omitempty"`
}

// getDependencies answers GET /checks/<uuid>/dependencies.
func (s *Server) getDependencies(w http.ResponseWriter, r *request) {
	c, obs, ok := s.lookupObserved(w, r)
	if !ok {
		return
	}
	res := s.Checks.Dependencies(c)
	v := dependenciesView{DependsOn: []parentView{}, Missing: res.Missing}
	if v.Missing == nil {
		v.Missing = []string{}
	}
	if res.Problem != nil {
		msg := res.Problem.Error()
		v.Problem = &msg
	}
	for _, name := range res.Parents {
		pv := parentView{Name: name, Status: "unknown"}
		if p := s.Checks.Named(c.Namespace, name); p != nil {
			if p.Status.State != "" {
				pv.Status = string(p.Status.State)
			}
			keys := s.Checks.Keys(p)
			if r.readOnly() {
				pv.UniqueKey = keys.UniqueKey
			} else {
				pv.UUID = keys.UUID
			}
		}
		v.DependsOn = append(v.DependsOn, pv)
	}
	if d := obs.Dependency; d.Parent != "" {
		v.HeldBy = &heldByView{Name: d.Parent}
		if !d.Since.IsZero() {
			v.HeldBy.DownSince = d.Since.UTC().Format(time.RFC3339)
		}
	}
	writeJSON(w, http.StatusOK, v)
}
