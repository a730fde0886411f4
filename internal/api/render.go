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
	v := s.Checks.View(c, obs, s.Checks.Now())
	uuid := checks.UUIDOf(c)
	subject, subjectFail := checkinput.SubjectFields(c.Spec)
	o := &object{}
	o.add("name", c.Spec.Name)
	o.add("slug", c.Spec.Slug)
	o.add("tags", c.Spec.Tags)
	o.add("desc", c.Spec.Desc)
	o.add("grace", c.Spec.Grace)
	o.add("n_pings", v.NPings)
	o.add("status", apiStatus(v, r.version))
	o.add("started", v.Started)
	o.add("last_ping", optionalTime(v.LastPing, true))
	o.add("next_ping", optionalTime(v.NextPing, v.HasNext))
	o.add("manual_resume", c.Spec.ManualResume)
	o.add("methods", c.Spec.Methods)
	o.add("subject", subject)
	o.add("subject_fail", subjectFail)
	o.add("start_kw", c.Spec.StartKeywords)
	o.add("success_kw", c.Spec.SuccessKeywords)
	o.add("failure_kw", c.Spec.FailureKeywords)
	o.add("filter_subject", c.Spec.FilterSubject)
	o.add("filter_body", c.Spec.FilterBody)
	o.add("filter_http_body", c.Spec.FilterHTTPBody)
	o.add("filter_default_fail", c.Spec.FilterDefaultFail)
	o.add("badge_url", s.BaseURL+"/b/2/"+checks.BadgeKey(uuid)+".svg")
	if secs := int64(v.LastDur / time.Second); secs != 0 {
		o.add("last_duration", secs)
	}
	if r.readOnly() {
		o.add("unique_key", checks.UniqueKey(uuid))
	} else {
		update := s.BaseURL + apiPrefix(r.version) + "checks/" + uuid
		o.add("uuid", uuid)
		o.add("ping_url", s.BaseURL+"/ping/"+uuid)
		o.add("update_url", update)
		o.add("pause_url", update+"/pause")
		o.add("resume_url", update+"/resume")
		o.add("channels", channelIDs(&c.Spec, channels))
	}
	if v.Scheduled {
		o.add("schedule", *c.Spec.Schedule)
		o.add("tz", string(c.Spec.Zone()))
	} else {
		o.add("timeout", c.Spec.TimeoutSeconds())
	}
	return o
}
