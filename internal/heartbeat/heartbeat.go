// Package heartbeat tells something outside the cluster that Vigil is alive:
// while the manager that keeps time (the leader, where replicas elect one)
// is healthy, it pings an external Healthchecks-compatible check on a timer. When Vigil stops (its
// pods crash-loop, leadership is lost, the cluster goes away), the pings stop
// and the external check goes down: the dead man's switch that Alertmanager's
// Watchdog alert is for Prometheus. Nothing inside a cluster can report that
// the cluster's own monitor stopped.
package heartbeat

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/vigil-operator/vigil/internal/runner"
)

// DefaultInterval is how often the heartbeat is sent.
const DefaultInterval = time.Minute

// Heartbeat is a manager runnable that pings URL every Interval. It runs
// with the deadline loop, in the leader where replicas elect one: the
// replica that keeps time, so a cluster with no leader stops the heartbeat.
type Heartbeat struct {
	// URL is the external check's ping URL, such as
	// https://hc-ping.com/<uuid>.
	URL string
	// Interval between pings; zero means DefaultInterval.
	Interval time.Duration
	// Healthy reports whether this manager works; when it returns an error,
	// a fail ping carries the error instead of a success ping.
	Healthy func() error
	// Client sends the pings, with retries within one interval.
	Client *runner.Client
	Clock  clock.WithTicker
	Log    logr.Logger
}

// NeedLeaderElection: only the leader sends heartbeats.
func (h *Heartbeat) NeedLeaderElection() bool { return true }

// Start pings at once, then every Interval, until ctx ends.
func (h *Heartbeat) Start(ctx context.Context) error {
	interval := h.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	ticker := h.Clock.NewTicker(interval)
	defer ticker.Stop()
	for {
		h.beat(ctx, interval)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// beat sends one ping: a success while healthy, else a failure saying why.
// A ping that cannot be delivered within the interval is logged and given
// up: the next one follows.
func (h *Heartbeat) beat(ctx context.Context, interval time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, interval)
	defer cancel()
	kind, body := runner.Success, "vigil manager: leader, healthy"
	if err := h.Healthy(); err != nil {
		kind, body = runner.Fail, fmt.Sprintf("vigil manager: leader, not healthy: %v", err)
	}
	u, err := runner.PingURL(h.URL, kind, "")
	if err == nil {
		_, err = h.Client.Ping(ctx, runner.Request{URL: u, Body: []byte(body)})
	}
	if err != nil && ctx.Err() == nil {
		h.Log.Error(err, "sending the heartbeat", "kind", string(kind))
	}
}
