// Package metrics holds Vigil's Prometheus metrics, served on the manager's
// metrics endpoint. Labels are bounded: namespace, state, type, direction,
// kind (a volume's, or a Channel's of the 29), outcome, why.
package metrics

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Metrics are the manager's metrics. A nil *Metrics counts nothing.
type Metrics struct {
	pings        *prometheus.CounterVec
	flips        *prometheus.CounterVec
	lateness     prometheus.Histogram
	checks       *prometheus.GaugeVec
	storeBytes   prometheus.Gauge
	storeFull    prometheus.Gauge
	volume       *prometheus.GaugeVec
	statusLag    prometheus.Gauge
	statusWrites *prometheus.CounterVec
	observed     *prometheus.CounterVec
	overShare    *prometheus.CounterVec
	bodyBytes    *prometheus.GaugeVec
	bodyRefused  *prometheus.CounterVec
	deliveries   *prometheus.CounterVec
	sendTime     *prometheus.HistogramVec
	oldest       prometheus.Gauge
}

// New creates the metrics and registers them with reg (the
// controller-runtime registry when nil).
func New(reg prometheus.Registerer) *Metrics {
	if reg == nil {
		reg = ctrlmetrics.Registry
	}
	m := &Metrics{
		pings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_pings_total",
			Help: "Pings stored, by namespace and type (success, start, fail, log, ign).",
		}, []string{"namespace", "type"}),
		flips: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_flips_total",
			Help: "Flips recorded, by namespace and direction (up, down).",
		}, []string{"namespace", "direction"}),
		lateness: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "vigil_down_lateness_seconds",
			Help:    "How long after its deadline a check was recorded down.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300},
		}),
		checks: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_checks",
			Help: "Checks by namespace and state (new, up, grace, down, paused), from the ping store; exported by the leader.",
		}, []string{"namespace", "state"}),
		storeBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_store_bytes",
			Help: "Size of the ping store on disk.",
		}),
		storeFull: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_store_full",
			Help: "1 while the ping store's writes fail because its volume is full (pings and writes are answered 503), else 0.",
		}),
		volume: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_store_volume_bytes",
			Help: "The filesystem that holds the embedded ping store: its size and the bytes still available (embedded store only).",
		}, []string{"kind"}),
		statusLag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_status_lag_seconds",
			Help: "How long the oldest change in the ping store has waited to reach its Check's status.",
		}),
		statusWrites: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_status_writes_total",
			Help: "Check status writes, by why (state: a state or spec verdict changed; stats: ping statistics only).",
		}, []string{"why"}),
		observed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_checks_observed_total",
			Help: "Checks the ping store's writer looked at outside their pings (the deadline loop, spec and maintenance window changes), by namespace.",
		}, []string{"namespace"}),
		overShare: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_check_writes_refused_total",
			Help: "Writes of Check objects refused because their namespace already had --check-writes-waiting waiting (answered 429), by namespace.",
		}, []string{"namespace"}),
		bodyBytes: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "vigil_store_ping_body_bytes",
			Help: "Ping body bytes the store keeps for the namespace's checks together, bounded by its body-bytes-limit.",
		}, []string{"namespace"}),
		bodyRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_ping_bodies_refused_total",
			Help: "Pings recorded without their body because their namespace's checks held its body-bytes-limit of bodies, by namespace.",
		}, []string{"namespace"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vigil_delivery_attempts_total",
			Help: "Attempts to deliver a notification, by the Channel's kind and outcome (delivered; error: tried again later unless it was the last attempt; rejected: the service refused it for good).",
		}, []string{"kind", "outcome"}),
		sendTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "vigil_delivery_duration_seconds",
			Help:    "How long an attempt to deliver a notification took, by the Channel's kind, whatever its outcome.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
		}, []string{"kind"}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vigil_delivery_oldest_pending_seconds",
			Help: "How long the oldest notification still to be delivered (due or waiting to be tried again) has waited since it was queued; 0 when none is; exported by the leader.",
		}),
	}
	m.pings = register(reg, m.pings)
	m.flips = register(reg, m.flips)
	m.lateness = register(reg, m.lateness)
	m.checks = register(reg, m.checks)
	m.storeBytes = register(reg, m.storeBytes)
	m.storeFull = register(reg, m.storeFull)
	m.volume = register(reg, m.volume)
	m.statusLag = register(reg, m.statusLag)
	m.statusWrites = register(reg, m.statusWrites)
	m.observed = register(reg, m.observed)
	m.overShare = register(reg, m.overShare)
	m.bodyBytes = register(reg, m.bodyBytes)
	m.bodyRefused = register(reg, m.bodyRefused)
	m.deliveries = register(reg, m.deliveries)
	m.sendTime = register(reg, m.sendTime)
	m.oldest = register(reg, m.oldest)
	return m
}

// register registers c, or returns the collector already registered under
// its name: managers that share a process (benchmarks of several replicas)
// share the series, as controller-runtime's own do.
func register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if err := reg.Register(c); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// Ping counts a stored ping.
func (m *Metrics) Ping(namespace string, kind monitor.PingKind) {
	if m != nil {
		m.pings.WithLabelValues(namespace, string(kind)).Inc()
	}
}

// Flip counts a recorded flip; lateness is how long after the deadline a
// timeout was recorded (ignored for other flips).
func (m *Metrics) Flip(namespace string, up bool, reason monitor.Reason, lateness time.Duration) {
	if m == nil {
		return
	}
	if up {
		m.flips.WithLabelValues(namespace, "up").Inc()
		return
	}
	m.flips.WithLabelValues(namespace, "down").Inc()
	if reason == monitor.ReasonTimeout && lateness >= 0 {
		m.lateness.Observe(lateness.Seconds())
	}
}

// SetChecks replaces the check counts with counts, keyed by namespace and
// state.
func (m *Metrics) SetChecks(counts map[[2]string]int) {
	if m == nil {
		return
	}
	m.checks.Reset()
	for k, n := range counts {
		m.checks.WithLabelValues(k[0], k[1]).Set(float64(n))
	}
}

// SetBodyBytes replaces the ping body bytes kept, by namespace.
func (m *Metrics) SetBodyBytes(byNamespace map[string]int64) {
	if m == nil {
		return
	}
	m.bodyBytes.Reset()
	for ns, n := range byNamespace {
		m.bodyBytes.WithLabelValues(ns).Set(float64(n))
	}
}

// BodyRefused counts a ping recorded without its body, past its
// namespace's ping body limit.
func (m *Metrics) BodyRefused(namespace string) {
	if m != nil {
		m.bodyRefused.WithLabelValues(namespace).Inc()
	}
}

// SetStoreBytes records the store's size.
func (m *Metrics) SetStoreBytes(n int64) {
	if m != nil {
		m.storeBytes.Set(float64(n))
	}
}

// SetStoreFull records whether the store's writes fail for want of space.
func (m *Metrics) SetStoreFull(full bool) {
	if m == nil {
		return
	}
	v := 0.0
	if full {
		v = 1
	}
	m.storeFull.Set(v)
}

// SetStoreVolume records the size of the store's filesystem and the bytes
// still available on it.
func (m *Metrics) SetStoreVolume(available, size int64) {
	if m != nil {
		m.volume.WithLabelValues("available").Set(float64(available))
		m.volume.WithLabelValues("size").Set(float64(size))
	}
}

// SetStatusLag records how long the oldest unprojected change has waited.
func (m *Metrics) SetStatusLag(d time.Duration) {
	if m != nil {
		m.statusLag.Set(d.Seconds())
	}
}

// Observed counts checks of a namespace the store's writer looked at
// outside their pings.
func (m *Metrics) Observed(namespace string, n int) {
	if m != nil && n > 0 {
		m.observed.WithLabelValues(namespace).Add(float64(n))
	}
}

// WriteRefused counts a write of the namespace's checks refused past its
// share.
func (m *Metrics) WriteRefused(namespace string) {
	if m != nil {
		m.overShare.WithLabelValues(namespace).Inc()
	}
}

// StatusWrite counts a status write.
func (m *Metrics) StatusWrite(stateChanged bool) {
	if m == nil {
		return
	}
	why := "stats"
	if stateChanged {
		why = "state"
	}
	m.statusWrites.WithLabelValues(why).Inc()
}

// The outcomes of a delivery attempt (vigil_delivery_attempts_total).
const (
	Delivered = "delivered"
	// DeliveryError: the attempt failed; the delivery is tried again
	// unless it was its last attempt.
	DeliveryError = "error"
	// DeliveryRejected: the service refused it for good.
	DeliveryRejected = "rejected"
)

// Delivery counts an attempt to deliver a notification through a Channel
// of the kind, its outcome one of Delivered, DeliveryError and
// DeliveryRejected, and how long it took.
func (m *Metrics) Delivery(kind, outcome string, took time.Duration) {
	if m == nil {
		return
	}
	m.deliveries.WithLabelValues(kind, outcome).Inc()
	m.sendTime.WithLabelValues(kind).Observe(took.Seconds())
}

// DeliveryKinds starts every kind's attempt and duration series at 0, so
// that the first failure of a kind is an increase (an alert on it fires)
// and the series exist before any delivery.
func (m *Metrics) DeliveryKinds(kinds []string) {
	if m == nil {
		return
	}
	for _, kind := range kinds {
		for _, outcome := range []string{Delivered, DeliveryError, DeliveryRejected} {
			m.deliveries.WithLabelValues(kind, outcome)
		}
		m.sendTime.WithLabelValues(kind)
	}
}

// SetOldestPending sets how long the oldest pending notification has
// waited (0: none is pending).
func (m *Metrics) SetOldestPending(age time.Duration) {
	if m != nil {
		m.oldest.Set(max(age, 0).Seconds())
	}
}
