package checkstate

import (
	"strings"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// View is what a check shows at an instant: to the API, the badges, the
// Prometheus endpoint and the dashboard alike, so they never disagree.
type View struct {
	Status    monitor.Status
	Started   bool
	LastPing  time.Time
	NextPing  time.Time
	HasNext   bool
	LastDur   time.Duration
	NPings    int64
	Scheduled bool
}

// ViewOf computes a check's status at now from the facts the ping store
// holds, as the reference computes status at read time: a check reads down
// as soon as its deadline passes, before the deadline loop records it.
func ViewOf(c *v1.Check, obs store.Check, now time.Time) View {
	facts := obs.Facts
	v := View{Scheduled: c.Spec.Schedule != nil, LastDur: facts.LastDuration, Started: facts.Started(),
		LastPing: facts.DisplayedLastPing(), NPings: obs.NPings}
	cfg, err := Config(&c.Spec)
	if err != nil {
		// The controller reports the spec error; show the recorded state.
		v.Status = facts.State
		if v.Status == "" {
			v.Status = monitor.StatusNew
		}
		return v
	}
	v.Status = cfg.Status(facts, now)
	v.NextPing, v.HasNext = cfg.NextPing(facts)
	return v
}

// Tags splits a tags string as the reference does: on single spaces,
// trimmed, empties dropped.
func Tags(tags string) []string {
	var out []string
	for _, t := range strings.Split(tags, " ") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// HasAllTags reports whether a check has every wanted tag (whole-tag,
// case-sensitive); an empty wanted tag matches nothing.
func HasAllTags(tags string, wanted []string) bool {
	have := map[string]bool{}
	for _, t := range Tags(tags) {
		have[t] = true
	}
	for _, w := range wanted {
		if !have[w] {
			return false
		}
	}
	return true
}

// maxRunGap bounds how far back a completion is paired with its start.
const maxRunGap = 72 * time.Hour

// RunDurations computes, for each success or fail ping (by index in pings,
// newest first), the time since the latest earlier start with the same run
// id (an empty id matches an empty id), provided no other success or fail
// with that id lies between them and the gap is under 72 hours. Log and
// ignored pings do not interrupt a run.
func RunDurations(pings []store.LoggedPing) map[int]time.Duration {
	out := map[int]time.Duration{}
	open := map[string]time.Time{} // rid -> start of the run still open
	for i := len(pings) - 1; i >= 0; i-- {
		p := pings[i]
		switch p.Kind {
		case monitor.PingStart:
			open[p.RID] = p.At
		case monitor.PingSuccess, monitor.PingFail:
			if start, ok := open[p.RID]; ok {
				if gap := p.At.Sub(start); gap >= 0 && gap < maxRunGap {
					out[i] = gap
				}
				delete(open, p.RID)
			}
		}
	}
	return out
}
