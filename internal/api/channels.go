package api

import (
	"net/http"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// apiKinds maps Vigil's channel kinds to the reference's kind names where the
// reference has the same integration under another name, so clients that
// switch on kind keep working.
var apiKinds = map[v1.ChannelKind]string{
	v1.ChannelPagerDuty: "pd",
	v1.ChannelMSTeams:   "msteamsw",
	v1.ChannelPushover:  "po",
}

func apiKind(k v1.ChannelKind) string {
	if name, ok := apiKinds[k]; ok {
		return name
	}
	return string(k)
}

// channelName is the name the API shows: the display name, or the object's
// name when none is set.
func channelName(ch *v1.Channel) string {
	if ch.Spec.DisplayName != "" {
		return ch.Spec.DisplayName
	}
	return ch.Name
}

// listChannels answers GET /channels/.
func (s *Server) listChannels(w http.ResponseWriter, r *request) {
	channels, err := s.Checks.ProjectChannels(r.Context(), r.namespace)
	if err != nil {
		s.internalError(w, r, "listing channels", err)
		return
	}
	writeList(w, "channels", func(yield func(*object) bool) {
		for i := range channels {
			o := &object{}
			o.add("id", string(channels[i].UID))
			o.add("name", channelName(&channels[i]))
			o.add("kind", apiKind(channels[i].Spec.Kind))
			if !yield(o) {
				return
			}
		}
	})
}
