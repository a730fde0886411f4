package dashboard

import (
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/words"
)

// dependsView is what a check page says of spec.dependsOn: the checks it
// depends on, what holds its notifications now, or why they hold nothing.
type dependsView struct {
	Parents []parentLink
	// Missing are names spec.dependsOn gives that no check has.
	Missing []string
	// Held says which parent holds the check's notifications now.
	Held string
	// Problem says why its dependencies hold nothing.
	Problem string
}

// parentLink is one check it depends on, linked to its page.
type parentLink struct {
	Name, URL, State string
}

// depends is the check page's dependency lines; nil without
// spec.dependsOn.
func (s *Server) depends(c *v1.Check, obs store.Check, readWrite bool, now time.Time) *dependsView {
	if c.Spec.DependsOn == nil {
		return nil
	}
	res := s.Checks.Dependencies(c)
	v := &dependsView{Missing: res.Missing}
	if res.Problem != nil {
		v.Problem = "Its dependencies hold nothing: " + res.Problem.Error() + "."
		return v
	}
	for _, name := range res.Parents {
		link := parentLink{Name: name, State: "unknown"}
		if p := s.Checks.Named(c.Namespace, name); p != nil {
			link.URL = "/checks/" + checkID(p, readWrite)
			if p.Status.State != "" {
				link.State = string(p.Status.State)
			}
		}
		v.Parents = append(v.Parents, link)
	}
	if d := obs.Dependency; d.Parent != "" {
		v.Held = "Held: depends on " + d.Parent + ", which is down"
		if !d.Since.IsZero() {
			v.Held += " since " + inZone(string(c.Spec.Zone()))(d.Since) + " (" + words.Relative(d.Since, now) + ")"
		}
		v.Held += ". Its downs notify nobody until " + d.Parent + " is back; then the Channels hear once if it is still down."
	}
	return v
}
