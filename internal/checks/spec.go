package checks

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/intern"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/schedule"
)

// Config returns the monitoring configuration a spec describes. The error,
// from an invalid schedule or time zone, is one a user can act on (the
// controller reports it on the Check); the configuration returned with it
// is that of a Simple check with the spec's grace, which paths that must go
// on regardless (recording a ping) use.
func Config(spec *v1.CheckSpec) (monitor.Config, error) {
	cfg := monitor.Config{
		Timeout:      time.Duration(spec.TimeoutSeconds()) * time.Second,
		Grace:        time.Duration(spec.GraceSeconds()) * time.Second,
		ManualResume: spec.ManualResume,

		FailureThreshold:  int(spec.FailureThreshold),
		RecoveryThreshold: int(spec.RecoveryThreshold),
	}
	if spec.MaxRuntime != nil {
		cfg.MaxRuntime = spec.MaxRuntime.Duration
	}
	if spec.MinRuntime != nil {
		cfg.MinRuntime = spec.MinRuntime.Duration
	}
	if a := spec.Anomaly; a != nil {
		cfg.Anomaly = anomalyConfig(a)
	}
	if spec.Schedule != nil {
		expr, tz := *spec.Schedule, string(spec.Zone())
		s, err := schedules.Get(scheduleKey{expr, tz}, func() (schedule.Schedule, error) { return schedule.Parse(expr, tz) })
		if err != nil {
			return cfg, err
		}
		cfg.Schedule = s
	}
	return cfg, nil
}

// schedules are the parsed schedules, shared by the checks that have the
// same one: a fleet's CronJobs run on few schedules, and a parsed one
// never changes. At most 4,096 of them, about 2 MiB.
var schedules = intern.NewPool[scheduleKey, schedule.Schedule](1 << 12)

type scheduleKey struct{ expr, tz string }

// anomalyConfig is the anomaly setting with its defaults.
func anomalyConfig(a *v1.AnomalyPolicy) *monitor.Anomaly {
	out := &monitor.Anomaly{Runs: int(a.Runs), MinRuns: int(a.MinRuns), Tolerance: float64(a.Tolerance)}
	if out.Runs <= 0 {
		out.Runs = monitor.DefaultAnomalyRuns
	}
	if out.MinRuns <= 0 {
		out.MinRuns = min(monitor.DefaultAnomalyMinRuns, out.Runs)
	}
	if out.Tolerance <= 0 {
		out.Tolerance = monitor.DefaultAnomalyTolerance
	}
	return out
}

// Config is Config(&c.Spec), parsed once per spec generation: every ping,
// view and projection of the check reads it.
func (d *Door) Config(c *v1.Check) (monitor.Config, error) {
	p := d.specs.of(c)
	return p.config, p.err
}

// specs keeps each check's parsed spec, by UID, for the generation it was
// parsed at; a check's entry goes when the cache sees it deleted.
type specs struct {
	mu      sync.RWMutex
	entries map[types.UID]*parsed
}

// parsed is a spec's Config; never changed once made.
type parsed struct {
	generation int64
	config     monitor.Config
	err        error
}

// of is c's spec parsed.
func (s *specs) of(c *v1.Check) *parsed {
	if c.UID == "" || c.Generation == 0 {
		// Not from the API server (a spec being built): nothing to key it by.
		cfg, err := Config(&c.Spec)
		return &parsed{config: cfg, err: err}
	}
	s.mu.RLock()
	p := s.entries[c.UID]
	s.mu.RUnlock()
	if p != nil && p.generation == c.Generation {
		return p
	}
	cfg, err := Config(&c.Spec)
	p = &parsed{generation: c.Generation, config: cfg, err: err}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A newer generation parsed meanwhile wins: the cache moves forward.
	if cur := s.entries[c.UID]; cur == nil || cur.generation < c.Generation {
		if s.entries == nil {
			s.entries = map[types.UID]*parsed{}
		}
		s.entries[c.UID] = p
	}
	return p
}

func (s *specs) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, uid)
}
