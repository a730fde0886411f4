package checks

import (
	"context"
	"errors"
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

// View computes a check's status at now from the facts the ping store
// holds, as the reference computes status at read time: a check reads down
// as soon as its deadline passes, before the deadline loop records it.
func (d *Door) View(c *v1.Check, obs store.Check, now time.Time) View {
	return viewOf(c, &obs, d.specs.of(c), now)
}

// unseen is what the store holds of a check it has not seen; read only.
var unseen store.Check

// viewOf is View with c's spec parsed; obs nil for a check the store has
// not seen.
func viewOf(c *v1.Check, obs *store.Check, spec *parsed, now time.Time) View {
	if obs == nil {
		obs = &unseen
	}
	facts := &obs.Facts
	v := View{Scheduled: c.Spec.Schedule != nil, LastDur: facts.LastDuration, Started: facts.Started(),
		LastPing: facts.DisplayedLastPing(), NPings: obs.NPings}
	if spec.err != nil {
		// The controller reports the spec error; show the recorded state.
		v.Status = facts.State
		if v.Status == "" {
			v.Status = monitor.StatusNew
		}
		return v
	}
	v.Status = spec.config.Status(*facts, now)
	v.NextPing, v.HasNext = spec.config.NextPing(*facts)
	return v
}

// Observed is what the ping store holds of c: its facts, ping count and
// last flip (the zero Check for one never pinged).
func (d *Door) Observed(ctx context.Context, c *v1.Check) (store.Check, error) {
	obs, _, err := d.store.Check(ctx, c.UID)
	return obs, err
}

// Usual is c's usual range of run durations, as its next run will be
// judged by (the zero Usual without alertPolicy.anomaly, or before
// enough runs).
func (d *Door) Usual(ctx context.Context, c *v1.Check) (monitor.Usual, error) {
	cfg, _ := d.Config(c)
	return d.store.Usual(ctx, c.UID, cfg.Anomaly)
}

// ObservedIn is what the ping store holds of a project's checks, by UID.
func (d *Door) ObservedIn(ctx context.Context, namespace string) (store.Observed, error) {
	return d.store.ChecksIn(ctx, namespace)
}

// Pings is c's ping log, newest first, as long as its project's ping-log
// limit.
func (d *Door) Pings(ctx context.Context, c *v1.Check) ([]store.LoggedPing, error) {
	return d.store.Pings(ctx, c.UID, d.PingLogLimit(c.Namespace))
}

// BodyPreviews are the first maxBytes of the bodies of c's ping log, by
// ping number.
func (d *Door) BodyPreviews(ctx context.Context, c *v1.Check, maxBytes int) (map[int64][]byte, error) {
	return d.store.BodyPreviews(ctx, c.UID, d.PingLogLimit(c.Namespace), maxBytes)
}

// What PingBody finds when there is no body to show.
var (
	// ErrPingExpired: the ping is older than the ping log keeps.
	ErrPingExpired = errors.New("ping is older than the ping log keeps")
	// ErrNoPing: the check has no ping of that number.
	ErrNoPing = errors.New("ping not found")
)

// PingBody is the body of c's ping number n (empty when it had none),
// ErrPingExpired once the ping log no longer holds it, or ErrNoPing.
func (d *Door) PingBody(ctx context.Context, c *v1.Check, n int64) ([]byte, error) {
	obs, err := d.Observed(ctx, c)
	if err != nil {
		return nil, err
	}
	if n <= obs.NPings-int64(d.PingLogLimit(c.Namespace)) {
		return nil, ErrPingExpired
	}
	body, found, err := d.store.PingBody(ctx, c.UID, n)
	switch {
	case err != nil:
		return nil, err
	case !found:
		return nil, ErrNoPing
	}
	return body, nil
}

// Flips are c's flips, newest first.
func (d *Door) Flips(ctx context.Context, c *v1.Check) ([]store.Flip, error) {
	return d.store.Flips(ctx, c.UID)
}

// RecentFlips are c's newest flips, at most limit, newest first.
func (d *Door) RecentFlips(ctx context.Context, c *v1.Check, limit int) ([]store.Flip, error) {
	return d.store.RecentFlips(ctx, c.UID, limit)
}

// Notifications are the check's last flips and notices, newest first, with
// what became of each (store.Notifications).
func (d *Door) Notifications(ctx context.Context, c *v1.Check, limit int) ([]store.Notification, error) {
	return d.store.Notifications(ctx, c.UID, limit)
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
	if len(wanted) == 0 {
		return true // a list without a tag filter asks this of every check
	}
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

// RunKinds are the kinds of ping c's log holds for the run rid, and the
// time before which its log may have forgotten pings (zero: it forgot
// none): what the Job controller reads so that it records each of a Job's
// pings once.
func (d *Door) RunKinds(ctx context.Context, c *v1.Check, rid string) (map[monitor.PingKind]bool, time.Time, error) {
	return d.store.RunKinds(ctx, c.UID, rid)
}
