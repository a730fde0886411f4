package api

import (
	"sort"
	"strings"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/api/checkinput"
	"github.com/vigil-operator/vigil/internal/checkindex"
	"github.com/vigil-operator/vigil/internal/checkstate"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// view is what the API shows of a check at an instant.
type view struct {
	status    monitor.Status
	started   bool
	lastPing  time.Time
	nextPing  time.Time
	hasNext   bool
	lastDur   time.Duration
	nPings    int64
	scheduled bool
}

// viewOf computes a check's status at now from the facts the ping store
// holds, as the reference computes status at read time: a check reads down
// as soon as its deadline passes, before the deadline loop records it.
func viewOf(c *v1.Check, obs store.Check, now time.Time) view {
	facts := obs.Facts
	v := view{scheduled: c.Spec.Schedule != nil, lastDur: facts.LastDuration, started: facts.Started(),
		lastPing: facts.DisplayedLastPing(), nPings: obs.NPings}
	cfg, err := checkstate.Config(&c.Spec)
	if err != nil {
		// The controller reports the spec error; show the recorded state.
		v.status = facts.State
		if v.status == "" {
			v.status = monitor.StatusNew
		}
		return v
	}
	v.status = cfg.Status(facts, now)
	v.nextPing, v.hasNext = cfg.NextPing(facts)
	return v
}

// apiStatus is the status string of an API version: v1 reports a running
// check that is not down as "started".
func (v view) apiStatus(version int) string {
	if version == 1 && v.started && v.status != monitor.StatusDown {
		return "started"
	}
	return string(v.status)
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
	v := viewOf(c, obs, s.now())
	uuid := checkindex.UUIDOf(c)
	subject, subjectFail := checkinput.SubjectFields(c.Spec)
	o := &object{}
	o.add("name", c.Spec.Name)
	o.add("slug", c.Spec.Slug)
	o.add("tags", c.Spec.Tags)
	o.add("desc", c.Spec.Desc)
	o.add("grace", c.Spec.Grace)
	o.add("n_pings", v.nPings)
	o.add("status", v.apiStatus(r.version))
	o.add("started", v.started)
	o.add("last_ping", optionalTime(v.lastPing, true))
	o.add("next_ping", optionalTime(v.nextPing, v.hasNext))
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
	o.add("badge_url", s.BaseURL+"/b/2/"+checkindex.BadgeKey(uuid)+".svg")
	if secs := int64(v.lastDur / time.Second); secs != 0 {
		o.add("last_duration", secs)
	}
	if r.readOnly() {
		o.add("unique_key", checkindex.UniqueKey(uuid))
	} else {
		update := s.BaseURL + apiPrefix(r.version) + "checks/" + uuid
		o.add("uuid", uuid)
		o.add("ping_url", s.BaseURL+"/ping/"+uuid)
		o.add("update_url", update)
		o.add("pause_url", update+"/pause")
		o.add("resume_url", update+"/resume")
		o.add("channels", channelIDs(&c.Spec, channels))
	}
	if v.scheduled {
		o.add("schedule", *c.Spec.Schedule)
		tz := string(c.Spec.TZ)
		if tz == "" {
			tz = "UTC"
		}
		o.add("tz", tz)
	} else {
		timeout := int64(checkstate.DefaultTimeout / time.Second)
		if c.Spec.Timeout != nil {
			timeout = *c.Spec.Timeout
		}
		o.add("timeout", timeout)
	}
	return o
}
