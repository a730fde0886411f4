package webpage

import (
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/uptime"
)

// Span is how far back a page shows a check's history: its 90-day bar,
// its uptime figure and its days.
const Span = 90 * 24 * time.Hour

// FlipsRead is how many of a check's flips, the newest, a page reads for
// its history: what a page costs stays bounded however often a check
// flipped (a flapping check's earlier part of the span shows no data).
const FlipsRead = 1000

// HistoryOf is the check's history until now by the uptime rule, from the
// flips a page read (the newest FlipsRead) and what the store holds.
func HistoryOf(c *v1.Check, obs store.Check, status monitor.Status, flips []store.Flip, now time.Time) uptime.History {
	return uptime.Of(uptime.Check{Created: c.CreationTimestamp.Time, Flips: flips, Truncated: len(flips) >= FlipsRead,
		Status: status, PausedAt: obs.Facts.PausedAt, ResumedAt: obs.Facts.ResumedAt}, now)
}
