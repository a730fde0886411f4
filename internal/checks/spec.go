package checks

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
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
	if spec.Schedule != nil {
		s, err := schedule.Parse(*spec.Schedule, string(spec.Zone()))
		if err != nil {
			return cfg, err
		}
		cfg.Schedule = s
	}
	return cfg, nil
}

// Config is Config(&c.Spec), parsed once per spec generation: every ping,
// view and projection of the check reads it.
func (d *Door) Config(c *v1.Check) (monitor.Config, error) {
	return d.specs.config(c)
}

// specs keeps each check's parsed spec, by UID, for the generation it was
// parsed at; a check's entry goes when the cache sees it deleted.
type specs struct {
	mu      sync.RWMutex
	entries map[types.UID]parsed
}

type parsed struct {
	generation int64
	config     monitor.Config
	err        error
}

func (s *specs) config(c *v1.Check) (monitor.Config, error) {
	if c.UID == "" || c.Generation == 0 {
		// Not from the API server (a spec being built): nothing to key it by.
		return Config(&c.Spec)
	}
	s.mu.RLock()
	p, ok := s.entries[c.UID]
	s.mu.RUnlock()
	if ok && p.generation == c.Generation {
		return p.config, p.err
	}
	cfg, err := Config(&c.Spec)
	s.mu.Lock()
	defer s.mu.Unlock()
	// A newer generation parsed meanwhile wins: the cache moves forward.
	if cur, ok := s.entries[c.UID]; !ok || cur.generation < c.Generation {
		if s.entries == nil {
			s.entries = map[types.UID]parsed{}
		}
		s.entries[c.UID] = parsed{generation: c.Generation, config: cfg, err: err}
	}
	return cfg, err
}

func (s *specs) forget(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, uid)
}
