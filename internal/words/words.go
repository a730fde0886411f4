// Package words is how Vigil says a duration (in prose, and short on a
// chart), a time relative to now, a count and a share to
// people: on the dashboard and the status page, in every Channel kind's
// message, in the reports, and in the conditions and Events kubectl
// shows. One run reads "1 minute 30 seconds" wherever it is shown.
// Standard library only, so that any package may use it.
package words

import (
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Duration says a duration as people do: in at most two units, the
// larger first ("2 days 3 hours", "1 minute 30 seconds", "45 seconds"),
// and the second left out when it is zero ("1 day", not "1 day 0 hours";
// "1 day 3 minutes" would read as more exact than it is, so it is "1
// day"). Under ten seconds it keeps a tenth ("1.4 seconds"), under a
// second it counts milliseconds ("250 milliseconds"): a run's length
// matters there. A negative duration is said as its length.
func Duration(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d == 0:
		return "0 seconds"
	case d < time.Second:
		return Plural(max(1, d.Round(time.Millisecond).Milliseconds()), "millisecond")
	case d < 10*time.Second:
		s := strconv.FormatFloat(math.Round(d.Seconds()*10)/10, 'f', -1, 64)
		if s == "1" {
			return "1 second"
		}
		return s + " seconds"
	}
	d = d.Round(time.Second)
	units := []struct {
		name string
		size time.Duration
	}{{"day", 24 * time.Hour}, {"hour", time.Hour}, {"minute", time.Minute}, {"second", time.Second}}
	var parts []string
	for _, u := range units {
		if n := d / u.size; n > 0 {
			parts = append(parts, Plural(int64(n), u.name))
			d -= n * u.size
			if len(parts) == 2 {
				break
			}
		} else if len(parts) > 0 {
			break
		}
	}
	return strings.Join(parts, " ")
}

// Short says a duration where room is short, on a chart (its scale, a
// line's or a band's label, a sparkline's figure): to two significant
// figures in an abbreviated unit, "250 ms", "1.5 s", "1.5 min", "2 h".
// Prose, a title or a chart's description for a screen reader says
// Duration.
func Short(d time.Duration) string {
	one := func(v float64) string { return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0") }
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	case d < time.Minute:
		return one(d.Seconds()) + " s"
	case d < time.Hour:
		return one(d.Minutes()) + " min"
	default:
		return one(d.Hours()) + " h"
	}
}

// Relative says when t is, seen from now, in one unit, the largest that
// is whole: "just now" (within 5 seconds), "42 seconds ago", "3 minutes
// ago", "26 hours ago" (hours until two days), "3 days ago", and "in 2
// hours" for a time to come. Narrow enough for a board's column, and
// said the same in a notification's "Last Ping".
func Relative(t, now time.Time) string {
	d := now.Sub(t)
	if d > -5*time.Second && d < 5*time.Second {
		return "just now"
	}
	ahead := d < 0
	if ahead {
		d = -d
	}
	var said string
	switch {
	case d < time.Minute:
		said = Plural(int64(d/time.Second), "second")
	case d < time.Hour:
		said = Plural(int64(d/time.Minute), "minute")
	case d < 48*time.Hour:
		said = Plural(int64(d/time.Hour), "hour")
	default:
		said = Plural(int64(d/(24*time.Hour)), "day")
	}
	if ahead {
		return "in " + said
	}
	return said + " ago"
}

// Plural is a count of a unit: "1 check", "0 checks", "3 checks".
func Plural(n int64, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.FormatInt(n, 10) + " " + unit + "s"
}

// Percent says a share in [0, 1] as a percentage to at most two decimals
// ("100%", "99.95%", "80%", "0%"): PercentValue, written.
func Percent(share float64) string {
	return strconv.FormatFloat(PercentValue(share), 'f', -1, 64) + "%"
}

// PercentValue is a share in [0, 1] as a percentage rounded to two
// decimals, where only a whole share is 100 and only none is 0: a check
// down for a second of 90 days reads 99.99, not 100.
func PercentValue(share float64) float64 {
	p := math.Round(share*10000) / 100
	switch {
	case p >= 100 && share < 1:
		return 99.99
	case p <= 0 && share > 0:
		return 0.01
	}
	return p
}

// Cut bounds s to at most limit bytes, cutting at a character's start so
// that valid UTF-8 stays valid, and reports whether it cut: for what a
// store, a URL or a protocol bounds in bytes.
func Cut(s string, limit int) (string, bool) {
	if len(s) <= limit {
		return s, false
	}
	i := max(0, limit)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}

// Clip is Cut with an ellipsis: at most limit bytes, "…" (3 bytes) among
// them when it cut.
func Clip(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut, _ := Cut(s, limit-len(ellipsis))
	return cut + ellipsis
}

// Ellipsize bounds s to at most limit characters, the last one "…" when it
// cut: for what a person reads, which services bound in characters.
func Ellipsize(s string, limit int) string {
	if utf8.RuneCountInString(s) <= limit {
		return s
	}
	if limit <= 0 {
		return ""
	}
	r := []rune(s)
	return string(r[:limit-1]) + ellipsis
}

const ellipsis = "…"
