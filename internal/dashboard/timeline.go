package dashboard

import (
	"time"

	"github.com/vigil-operator/vigil/internal/uptime"
	"github.com/vigil-operator/vigil/internal/webpage"
	"github.com/vigil-operator/vigil/internal/words"
)

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
	start := now.Add(-webpage.Span)
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

func pct(d time.Duration) float64 { return 100 * float64(d) / float64(webpage.Span) }
