package api

import (
	"sort"
	"strings"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/api/checkinput"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// apiStatus is the status string of an API version: v1 reports a running
// check that is not down as "started".
func apiStatus(v checks.View, version int) string {
	if version == 1 && v.Started && v.Status != monitor.StatusDown {
		return "started"
	}
	return string(v.Status)
}

// channelIDs resolves a spec's channel names to the channels' IDs, sorted
// and comma-joined as the reference prints them; "*" is every channel.
func channelIDs(spec *v1.CheckSpec, channels []v1.Channel) string {
	var ids []string
	for i := range channels {
		if spec.Assigns(channels[i].Name) {
			ids = append(ids, string(channels[i].UID))
		}
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

// renderCheck is the check's JSON, keys in the reference's order: the
// read-write form, or for read-only keys the form without secrets.
func (s *Server) renderCheck(c *v1.Check, obs store.Check, r *request, channels []v1.Channel) *object {
	return s.renderView(c, s.Checks.View(c, obs, s.Checks.Now()), r, channels)
}

// renderView is renderCheck's JSON of the check's view v.
func (s *Server) renderView(c *v1.Check, v checks.View, r *request, channels []v1.Channel) *object {
	keys := s.Checks.Keys(c)
	subject, subjectFail := checkinput.SubjectFields(c.Spec)
	o := newObject()
	o.str("name", c.Spec.Name)
	o.str("slug", c.Spec.Slug)
	o.str("tags", c.Spec.Tags)
	o.str("desc", c.Spec.Desc)
	o.num("grace", c.Spec.Grace)
	o.num("n_pings", v.NPings)
	o.str("status", apiStatus(v, r.version))
	o.flag("started", v.Started)
	o.time("last_ping", v.LastPing, true)
	o.time("next_ping", v.NextPing, v.HasNext)
	o.flag("manual_resume", c.Spec.ManualResume)
	o.str("methods", c.Spec.Methods)
	o.str("subject", subject)
	o.str("subject_fail", subjectFail)
	o.str("start_kw", c.Spec.StartKeywords)
	o.str("success_kw", c.Spec.SuccessKeywords)
	o.str("failure_kw", c.Spec.FailureKeywords)
	o.flag("filter_subject", c.Spec.FilterSubject)
	o.flag("filter_body", c.Spec.FilterBody)
	o.flag("filter_http_body", c.Spec.FilterHTTPBody)
	o.flag("filter_default_fail", c.Spec.FilterDefaultFail)
	o.str("badge_url", s.BaseURL, "/b/2/", keys.BadgeKey, ".svg")
	if secs := int64(v.LastDur / time.Second); secs != 0 {
		o.num("last_duration", secs)
	}
	if r.readOnly() {
		o.str("unique_key", keys.UniqueKey)
	} else {
		prefix := apiPrefix(r.version)
		o.str("uuid", keys.UUID)
		o.str("ping_url", s.BaseURL, "/ping/", keys.UUID)
		o.str("update_url", s.BaseURL, prefix, "checks/", keys.UUID)
		o.str("pause_url", s.BaseURL, prefix, "checks/", keys.UUID, "/pause")
		o.str("resume_url", s.BaseURL, prefix, "checks/", keys.UUID, "/resume")
		o.str("channels", channelIDs(&c.Spec, channels))
	}
	if v.Scheduled {
		o.str("schedule", *c.Spec.Schedule)
		o.str("tz", string(c.Spec.Zone()))
	} else {
		o.num("timeout", c.Spec.TimeoutSeconds())
	}
	return o
}
