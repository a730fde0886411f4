package dashboard

import (
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/uptime"
	"github.com/vigil-operator/vigil/internal/words"
)

// timelineSpan is how far back a check's page shows its flips.
const timelineSpan = 90 * 24 * time.Hour

// timelineFlips is how many of a check's flips, the newest, a page reads
// for its timeline: what a page costs stays bounded however often a check
// flipped (a flapping check's earlier part of the span shows no data).
const timelineFlips = 1000

// historyOf is the check's history until now by the uptime rule, from the
// flips a page read (the newest timelineFlips) and what the store holds.
func historyOf(c *v1.Check, obs store.Check, status monitor.Status, flips []store.Flip, now time.Time) uptime.History {
	return uptime.Of(uptime.Check{Created: c.CreationTimestamp.Time, Flips: flips, Truncated: len(flips) >= timelineFlips,
		Status: status, PausedAt: obs.Facts.PausedAt, ResumedAt: obs.Facts.ResumedAt}, now)
}

// timeline is a check's states over the span, as a bar.
type timeline struct {
	Segments []segment
	// Downs is how many down periods began in the span; DownFor their
	// total length within it; Uptime the share of the up and down time
	// that was up (the uptime rule's), in [0, 1].
	Downs   int
	DownFor string
	Uptime  float64
	Known   bool // some of the span was up or down
	// Maintenance and Paused: some of the span was down inside a
	// maintenance window, or paused, which the figures leave out.
	Maintenance, Paused bool
}

// segment is one period: its state and where it lies on the bar, in
// percent of the span.
type segment struct {
	State        string // up, down, maintenance, paused, unknown
	Left, Width  float64
	From, To     time.Time
	Length, Word string
}

// timelineOf lays the history over the span ending at now.
func timelineOf(h uptime.History, now time.Time) timeline {
	start := now.Add(-timelineSpan)
	var tl timeline
	for _, s := range h.Within(start, now) {
		word := string(s.State)
		if s.State == uptime.Unknown {
			word = "no data"
		}
		tl.Segments = append(tl.Segments, segment{State: string(s.State), Word: word, From: s.From, To: s.To,
			Left: pct(s.From.Sub(start)), Width: pct(s.To.Sub(s.From)), Length: words.Duration(s.To.Sub(s.From))})
	}
	fig := h.Measure(start, now)
	tl.Downs, tl.DownFor = fig.Downs, words.Duration(fig.Down)
	tl.Maintenance, tl.Paused = fig.Maintenance > 0, fig.Paused > 0
	if share, ok := fig.Uptime(); ok {
		tl.Uptime, tl.Known = share, true
	}
	return tl
}

func stateWord(up bool) string {
	if up {
		return "up"
	}
	return "down"
}

func pct(d time.Duration) float64 { return 100 * float64(d) / float64(timelineSpan) }
