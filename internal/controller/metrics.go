package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Metrics are the controller's Prometheus metrics, served on the manager's
// metrics endpoint. Labels are bounded: namespace, state, direction.
type Metrics struct {
	checks   *prometheus.GaugeVec
	flips    *prometheus.CounterVec
	lateness prometheus.Histogram

	mu    sync.Mutex
	state map[types.NamespacedName]string // last state counted per check
}

// NewMetrics creates the metrics and registers them with reg (the
// controller-runtime registry when nil).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	m := &Metrics{
		checks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_checks",
			Help: "Checks by namespace and state (new, up, grace, down, paused).",
		}, []string{"namespace", "state"}),
		flips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_flips_total",
			Help: "Flips recorded, by namespace and direction (up, down).",
		}, []string{"namespace", "direction"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_down_lateness_seconds",
			Help:    "How long after its deadline a check was marked down.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}),
		state: map[types.NamespacedName]string{},
	}
	reg.MustRegister(m.checks, m.flips, m.lateness)
	return m
}

func (m *Metrics) observe(check *v1.Check) {
	if m == nil {
		return
	}
	key := types.NamespacedName{Namespace: check.Namespace, Name: check.Name}
	state := string(check.Status.State)
	m.mu.Lock()
	defer m.mu.Unlock()
	old, seen := m.state[key]
	if seen && old == state {
		return
	}
	if seen {
		m.checks.WithLabelValues(check.Namespace, old).Dec()
	}
	m.checks.WithLabelValues(check.Namespace, state).Inc()
	m.state[key] = state
}

func (m *Metrics) forget(key types.NamespacedName) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, seen := m.state[key]; seen {
		m.checks.WithLabelValues(key.Namespace, old).Dec()
		delete(m.state, key)
	}
}

func (m *Metrics) flip(namespace string, up bool, lateness time.Duration) {
	if m == nil {
		return
	}
	if up {
		m.flips.WithLabelValues(namespace, "up").Inc()
		return
	}
	m.flips.WithLabelValues(namespace, "down").Inc()
	if lateness >= 0 {
		m.lateness.Observe(lateness.Seconds())
	}
}
