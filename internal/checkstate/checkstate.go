// Package checkstate translates a Check object into what the monitoring core
// and the ping store need: the Config its spec describes, and the store
// Target that identifies it. The ping path, the API, the deadline loop and
// the controller all convert through it, so they agree on what a spec
// means.
package checkstate

import (
	"context"
	"sort"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/schedule"
	"github.com/vigil-operator/vigil/internal/store"
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
		Timeout:      Timeout(spec),
		Grace:        time.Duration(spec.Grace) * time.Second,
		ManualResume: spec.ManualResume,
	}
	if cfg.Grace <= 0 {
		cfg.Grace = time.Hour
	}
	if spec.Schedule != nil {
		s, err := schedule.Parse(*spec.Schedule, TimeZone(spec))
		if err != nil {
			return cfg, err
		}
		cfg.Schedule = s
	}
	return cfg, nil
}

// Timeout is a Simple check's period: the spec's, or DefaultTimeout.
func Timeout(spec *v1.CheckSpec) time.Duration {
	if spec.Timeout != nil {
		return time.Duration(*spec.Timeout) * time.Second
	}
	return DefaultTimeout
}

// TimeZone is the zone a schedule is read in: the spec's, or UTC.
func TimeZone(spec *v1.CheckSpec) string {
	if spec.TZ == "" {
		return "UTC"
	}
	return string(spec.TZ)
}

// Target is the check as the store's writes need it. channels reads the
// Channels of the check's namespace (the informer cache), only when a flip
// is recorded; pingLogLimit is the project's ping-log limit.
func Target(c *v1.Check, channels client.Reader, pingLogLimit int) store.Target {
	cfg, _ := Config(&c.Spec) // a broken spec is monitored as a simple check; the controller reports it
	return store.Target{
		UID: c.UID, Namespace: c.Namespace, Name: c.Name, Config: cfg, PingLogLimit: pingLogLimit,
		Channels: func() ([]string, error) { return AssignedChannels(context.Background(), channels, c) },
	}
}

// AssignedChannels are the existing Channels the check's spec assigns, by
// object name, sorted; "*" is every Channel in the namespace.
func AssignedChannels(ctx context.Context, r client.Reader, c *v1.Check) ([]string, error) {
	if len(c.Spec.Channels) == 0 || r == nil {
		return nil, nil
	}
	var list v1.ChannelList
	if err := r.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return nil, err
	}
	var names []string
	for _, ch := range list.Items {
		if c.Spec.Assigns(ch.Name) {
			names = append(names, ch.Name)
		}
	}
	sort.Strings(names)
	return names, nil
}
