// Package checkstate translates between a Check object and the monitoring
// core: the Config its spec describes and the Facts its status stores. The
// controller, the ping path and the API all convert through it, so the three
// writers agree on what each status field means.
package checkstate

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/schedule"
)

// DefaultTimeout is a Simple check's period when the spec sets neither
// timeout nor schedule, as the contract's default on create.
const DefaultTimeout = 86400 * time.Second

// Config returns the monitoring configuration a spec describes. The error,
// from an invalid schedule or time zone, is one a user can act on; the
// configuration returned with it is that of a simple check with the
// spec's grace (timeout a day), for paths that must go on regardless, such
// as logging a ping.
func Config(spec *v1.CheckSpec) (monitor.Config, error) {
	cfg := monitor.Config{
		Timeout:      DefaultTimeout,
		Grace:        time.Duration(spec.Grace) * time.Second,
		ManualResume: spec.ManualResume,
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Hour
	}
	if spec.Timeout != nil {
		cfg.Timeout = time.Duration(*spec.Timeout) * time.Second
	}
	if spec.Schedule != nil {
		tz := string(spec.TZ)
		if tz == "" {
			tz = "UTC"
		}
		s, err := schedule.Parse(*spec.Schedule, tz)
		if err != nil {
			return cfg, err
		}
		cfg.Schedule = s
	}
	return cfg, nil
}

// Facts returns the facts a status stores.
func Facts(st *v1.CheckStatus) monitor.Facts {
	f := monitor.Facts{
		LastPing:       micro(st.LastPing),
		LastPingFailed: st.LastPingType == v1.PingFail,
		LastStart:      micro(st.LastStart),
		LastStartRID:   st.LastStartRID,
		PausedAt:       micro(st.PausedAt),
		ResumedAt:      micro(st.ResumedAt),
		State:          monitor.Status(st.State),
		StateSince:     micro(st.StateSince),
	}
	if st.LastDuration != nil {
		f.LastDuration = st.LastDuration.Duration
	}
	return f
}

// SetPingFacts writes the ping path's fields of f into st.
func SetPingFacts(st *v1.CheckStatus, f monitor.Facts) {
	st.LastPing = microPtr(f.LastPing)
	st.LastPingType = ""
	if !f.LastPing.IsZero() {
		st.LastPingType = v1.PingSuccess
		if f.LastPingFailed {
			st.LastPingType = v1.PingFail
		}
	}
	st.LastStart = microPtr(f.LastStart)
	st.LastStartRID = f.LastStartRID
	st.LastDuration = nil
	if f.LastDuration > 0 {
		st.LastDuration = &metav1.Duration{Duration: f.LastDuration}
	}
}

// CatchUp replays onto f, the facts of a status that has counted seen
// pings, the pings the history h holds beyond them, in order. History is
// written before status, so it runs ahead after a crash between the two
// writes, or while another writer's status write is on its way. Ignored and
// log pings change nothing.
func CatchUp(cfg monitor.Config, f monitor.Facts, seen int64, h *v1.CheckHistory) monitor.Facts {
	for _, p := range h.Pings {
		if p.N <= seen {
			continue
		}
		f, _ = cfg.RecordPing(f, monitor.Ping{Kind: monitor.PingKind(p.Type), At: p.Date.Time, RID: p.RID})
	}
	return f
}

// CatchUpStatus brings st's ping fields and count up to the history h (as
// CatchUp) and returns the facts it now holds. Both writers of ping facts,
// the ping path and the controller, catch up through it.
func CatchUpStatus(cfg monitor.Config, st *v1.CheckStatus, h *v1.CheckHistory) monitor.Facts {
	f := CatchUp(cfg, Facts(st), st.NPings, h)
	SetPingFacts(st, f)
	st.NPings = h.LastN
	return f
}

// SetPauseFacts writes the API's pause fields of f into st.
func SetPauseFacts(st *v1.CheckStatus, f monitor.Facts) {
	st.PausedAt = microPtr(f.PausedAt)
	st.ResumedAt = microPtr(f.ResumedAt)
}

// SetObserved writes the reconciler's recorded state of f into st.
func SetObserved(st *v1.CheckStatus, f monitor.Facts) {
	st.State = v1.CheckState(f.State)
	st.StateSince = microPtr(f.StateSince)
}

func micro(t *metav1.MicroTime) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

// microPtr stores an instant with the microsecond precision the API server
// keeps, so that a fact read back compares equal to the one written.
func microPtr(t time.Time) *metav1.MicroTime {
	if t.IsZero() {
		return nil
	}
	m := metav1.NewMicroTime(t.UTC().Truncate(time.Microsecond))
	return &m
}

// FlipOf is the record of a flip the monitoring core reports, with the
// microsecond precision the API server keeps: the controller stores it,
// and the API recognises it by comparing with what was stored.
func FlipOf(f *monitor.Flip) v1.Flip {
	return v1.Flip{Time: metav1.NewMicroTime(f.At.UTC().Truncate(time.Microsecond)), Up: f.Up(), Reason: string(f.Reason)}
}

// SetNextPing records when the next ping is due, in whole seconds: that is
// all the serialized status keeps, so a writer comparing its result with
// what it read back does not see a difference that is not there.
func SetNextPing(s *v1.CheckStatus, next time.Time, ok bool) {
	s.NextPing = nil
	if ok {
		t := metav1.NewTime(next.Truncate(time.Second))
		s.NextPing = &t
	}
}
