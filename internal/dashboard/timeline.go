package dashboard

import (
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// timelineSpan is how far back a check's page shows its flips.
const timelineSpan = 90 * 24 * time.Hour

// timelineFlips is how many of a check's flips, the newest, a page reads
// for its timeline: what a page costs stays bounded however often a check
// flipped (a flapping check's earlier part of the span shows no data).
const timelineFlips = 1000

// timeline is a check's up and down periods over the span, as a bar.
type timeline struct {
	Segments []segment
	// Downs is how many down periods began in the span; DownFor their
	// total length within it; UpPercent the share of the known time up.
	Downs     int
	DownFor   string
	UpPercent float64
	Known     bool // some of the span has a known state
	// Maintenance: some of the span was down inside a maintenance window,
	// which the figures leave out.
	Maintenance bool
}

// segment is one period: its state and where it lies on the bar, in
// percent of the span.
type segment struct {
	State        string // up, down, maintenance, unknown
	Left, Width  float64
	From, To     time.Time
	Length, Word string
}

// timelineOf lays the flips (newest first, as the store returns them) over
// the span ending at now. Before the check was created, and before its
// first flip, its state is unknown, unless it is up or down now and never
// flipped (a new or paused check that never flipped: unknown throughout).
// A down that a maintenance window held is maintenance until the window's
// end: the figures leave it out, and it counts as a down only if it
// outlasts the window.
func timelineOf(flips []store.Flip, status monitor.Status, created, now time.Time) timeline {
	start := now.Add(-timelineSpan)
	// Walk oldest first: the state at the span's start is that of the last
	// flip before it.
	state := "unknown"
	if len(flips) == 0 {
		switch status {
		case monitor.StatusUp, monitor.StatusGrace:
			state = "up"
		case monitor.StatusDown:
			state = "down"
		}
	}
	var tl timeline
	from := start
	var downFor, known time.Duration
	if created.After(start) && len(flips) == 0 {
		tl.Segments = append(tl.Segments, segment{State: "unknown", Word: "unknown", From: start, To: created,
			Width: pct(created.Sub(start)), Length: words(created.Sub(start))})
		from = created
	}
	add := func(to time.Time) {
		if !to.After(from) {
			return
		}
		d := to.Sub(from)
		if n := len(tl.Segments); n > 0 && tl.Segments[n-1].State == state {
			last := &tl.Segments[n-1] // one period, however it was reached
			last.To, last.Width, last.Length = to, pct(to.Sub(last.From)), words(to.Sub(last.From))
		} else {
			tl.Segments = append(tl.Segments, segment{State: state, From: from, To: to,
				Left: pct(from.Sub(start)), Width: pct(d), Length: words(d), Word: state})
		}
		switch state {
		case "down":
			downFor += d
			known += d
		case "up":
			known += d
		case "maintenance":
			tl.Maintenance = true
		}
	}
	// A held down's window ends at maintEnd: down from there, unless a
	// flip comes first.
	var maintEnd time.Time
	endMaintenance := func(before time.Time) {
		if state != "maintenance" || maintEnd.After(before) {
			return
		}
		if maintEnd.After(start) {
			add(maintEnd)
			from = maintEnd
			tl.Downs++
		}
		state = "down"
	}
	for i := len(flips) - 1; i >= 0; i-- {
		f := flips[i]
		if f.At.After(now) {
			break
		}
		endMaintenance(f.At)
		held := !f.Up && f.HeldBy() != "" && f.HeldUntil.After(f.At)
		if f.At.After(start) {
			add(f.At)
			from = f.At
			if !f.Up && !held {
				tl.Downs++
			}
		}
		state = stateWord(f.Up)
		if held {
			state, maintEnd = "maintenance", f.HeldUntil
		}
	}
	endMaintenance(now)
	add(now)
	tl.Known = known > 0
	tl.DownFor = words(downFor)
	if known > 0 {
		tl.UpPercent = 100 * float64(known-downFor) / float64(known)
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
