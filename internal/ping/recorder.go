package ping

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checkstate"
	"github.com/vigil-operator/vigil/internal/metrics"
	"github.com/vigil-operator/vigil/internal/store"
)

// Recorder stores the pings of HTTP, email and Jobs alike: it describes the
// check to the ping store, which commits the ping with everything it
// causes, and returns once that is durable.
type Recorder struct {
	Store *store.Store
	// Channels reads the Channels a flip notifies (the informer cache).
	Channels client.Reader
	// PingLogLimit is a project's ping-log limit.
	PingLogLimit func(namespace string) int
	// Metrics count the pings when set.
	Metrics *metrics.Metrics
}

// Record stores p for check.
func (r *Recorder) Record(ctx context.Context, check *v1.Check, p store.Ping) (store.Recorded, error) {
	limit := 0
	if r.PingLogLimit != nil {
		limit = r.PingLogLimit(check.Namespace)
	}
	rec, err := r.Store.RecordPing(ctx, checkstate.Target(check, r.Channels, limit), p)
	if err == nil {
		r.Metrics.Ping(check.Namespace, rec.Kind)
	}
	return rec, err
}
