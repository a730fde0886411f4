package webpage

import (
	"fmt"
	"strings"
	"time"

	"github.com/vigil-operator/vigil/internal/uptime"
	"github.com/vigil-operator/vigil/internal/words"
)

// Days is how many days a page draws a mark for: 13 weeks, the 90-day
// span and today.
const Days = 91

// Day is a day of a check's history as a mark, coloured by how much of its
// known time the check was up: the check page's calendar square, or a
// shape of a status page's strip.
type Day struct {
	X, Y  float64
	Width float64 // days, on a status page's strip
	// Class is up, mostly (99%+), some (partly down), down, maintenance,
	// paused or unknown (no data: before the check existed).
	Class string
	Title string
}

// DayOf is the day [day, next) of the history, up to now: coloured by its
// uptime that day, titled with it. A day with no up or down time is
// maintenance or paused when it was, else no data.
func DayOf(h uptime.History, day, next, now time.Time) Day {
	if now.Before(next) {
		next = now
	}
	fig := h.Measure(day, next)
	name := day.Format("Mon 2 Jan")
	share, ok := fig.Uptime()
	switch {
	case !ok && fig.Maintenance > 0:
		return Day{Class: "maintenance", Title: name + ": under maintenance"}
	case !ok && fig.Paused > 0:
		return Day{Class: "paused", Title: name + ": paused"}
	case !ok:
		return Day{Class: "unknown", Title: name + ": no data"}
	}
	d := Day{Title: fmt.Sprintf("%s: up %s", name, words.Percent(share))}
	if fig.Downs > 0 {
		d.Title += fmt.Sprintf(", down %s for %s", words.Plural(int64(fig.Downs), "time"), words.Duration(fig.Down))
	}
	switch {
	case share >= 1:
		d.Class = "up"
	case share >= 0.99:
		d.Class = "mostly"
	case share > 0:
		d.Class = "some"
	default:
		d.Class = "down"
	}
	return d
}

// Strip is the last Days days (UTC) in a row, oldest first, X their place
// and Width how many days a shape covers: what a public status page draws.
// Whole days up, and days with no data, in a row are one shape ("Mon 2 Nov
// – Sun 6 Dec: up 100%"); a day with a down is its own. So a quiet check is
// a shape or two, and one that flapped all quarter at most Days, however
// often it flipped.
func Strip(h uptime.History, now time.Time) []Day {
	y, m, d := now.UTC().Date()
	var strip []Day
	var runFrom time.Time
	for i := range Days {
		day := time.Date(y, m, d-(Days-1)+i, 0, 0, 0, 0, time.UTC)
		cd := DayOf(h, day, day.AddDate(0, 0, 1), now)
		cd.X, cd.Width = float64(i), 1
		if n := len(strip); n > 0 && (cd.Class == "up" || cd.Class == "unknown" || cd.Class == "paused") && strip[n-1].Class == cd.Class {
			last := &strip[n-1]
			last.Width++
			_, text, _ := strings.Cut(cd.Title, ": ")
			last.Title = runFrom.Format("Mon 2 Jan") + " – " + day.Format("Mon 2 Jan") + ": " + text
			continue
		}
		runFrom = day
		strip = append(strip, cd)
	}
	return strip
}
