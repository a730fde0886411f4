package ping

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Metrics count pings on the manager's metrics endpoint.
type Metrics struct {
	pings *prometheus.CounterVec
}

// NewMetrics creates the ping metrics and registers them with reg (the
// controller-runtime registry when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	m := &Metrics{pings: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "vigil_pings_total",
		Help: "Pings stored, by namespace and type (success, start, fail, log, ign).",
	}, []string{"namespace", "type"})}
	reg.MustRegister(m.pings)
	return m
}

func (m *Metrics) ping(namespace string, kind monitor.PingKind) {
	if m == nil {
		return
	}
	m.pings.WithLabelValues(namespace, string(kind)).Inc()
}
