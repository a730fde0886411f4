package oncalendar

import (
	"math/bits"
	"time"
)

// maxPeriods bounds the walk over a zone's offset periods; between 1970 and
// 2200 no zone has nearly this many transitions.
const maxPeriods = 4096

// Next returns the first occurrence strictly after t truncated to whole
// seconds, or ok=false when there is none before the year 2200. Events
// without a zone of their own are evaluated in loc (nil means UTC).
//
// An occurrence is the first real instant at which the wall clock in the
// event's zone shows a matching time, as in the reference: a time skipped by
// a daylight-saving change never fires, and a time repeated by a fall-back
// change fires once, at its first instant (before the change).
func (e *Expression) Next(t time.Time, loc *time.Location) (time.Time, bool) {
	if loc == nil {
		loc = time.UTC
	}
	after := t.Truncate(time.Second)
	var best time.Time
	found := false
	for _, ev := range e.events {
		l := loc
		if ev.loc != nil {
			l = ev.loc
		}
		n, ok := ev.next(after, l)
		if ok && (!found || n.Before(best)) {
			best, found = n, true
		}
	}
	if !found {
		return time.Time{}, false
	}
	return best.In(loc), true
}

// next walks the zone's offset periods from after: within one period wall
// time and instants move together, so the first matching wall time at or
// after the period's start, if it falls before the period's end, is the
// answer. Wall times the zone has already shown, which a fall-back repeats at
// the start of the next period, are not looked at again.
func (ev *event) next(after time.Time, loc *time.Location) (time.Time, bool) {
	from := after.Add(time.Second)
	// The reference walks wall-clock times from after's and takes the first
	// instant of the one it finds, so from the second pass of a repeated hour
	// it can answer an instant before after; the walk goes on past the
	// repeated hour instead.
	shown := latestWallBefore(from, loc)
	for range maxPeriods {
		local := from.In(loc)
		_, offset := local.Zone()
		_, end := local.ZoneBounds()
		if !end.After(from) {
			// Go answers an empty period at some year boundaries of
			// rule-based zones (Europe/Riga at the end of 2040); the
			// offset check below finds the real boundary instead.
			end = time.Time{}
		}
		first := wallAt(from, offset)
		if !shown.Before(first) {
			first = shown.Add(time.Second)
		}
		hit, ok := ev.nextWall(civilOf(first))
		if !ok {
			return time.Time{}, false
		}
		at := hit.utc().Add(-time.Duration(offset) * time.Second)
		if !end.IsZero() && !at.Before(end) {
			shown = later(shown, wallAt(end.Add(-time.Second), offset))
			from = end
			continue
		}
		if offsetAt(at, loc) == offset {
			return at, true
		}
		change := nextOffsetChange(from, at, loc, offset)
		shown = later(shown, wallAt(change.Add(-time.Second), offset))
		from = change
	}
	return time.Time{}, false
}

// wallAt is the wall-clock time, as a UTC time, that the instant t shows at
// the given offset.
func wallAt(t time.Time, offset int) time.Time {
	return t.UTC().Add(time.Duration(offset) * time.Second)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// latestWallBefore returns the latest wall-clock time, as a UTC time, that
// loc showed before the instant t. After a fall-back that is the end of the
// period before, not the wall time just before t. Walking back stops at a
// period that starts more than 26 hours before t: offsets lie between -12
// and +14 hours, so nothing shown before it is later.
func latestWallBefore(t time.Time, loc *time.Location) time.Time {
	var latest time.Time
	for range maxPeriods {
		prev := t.Add(-time.Second).In(loc)
		_, offset := prev.Zone()
		latest = later(latest, wallAt(prev, offset))
		start, _ := prev.ZoneBounds()
		if start.IsZero() || !start.Before(t) || t.Sub(start) > 26*time.Hour {
			break
		}
		t = start
	}
	return latest
}

func offsetAt(t time.Time, loc *time.Location) int {
	_, o := t.In(loc).Zone()
	return o
}

// nextOffsetChange returns the first whole second in (from, to] whose
// offset in loc is not offset, given that to's is not.
func nextOffsetChange(from, to time.Time, loc *time.Location, offset int) time.Time {
	lo, hi := from, to // offset(lo) == offset, offset(hi) != offset
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if !mid.After(lo) {
			break
		}
		if offsetAt(mid, loc) == offset {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// civil is a wall-clock time to the second.
type civil struct{ y, mo, d, h, mi, s int }

func civilOf(t time.Time) civil {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return civil{y, int(mo), d, h, mi, s}
}

// utc is the instant at which a UTC clock shows c.
func (c civil) utc() time.Time {
	return time.Date(c.y, time.Month(c.mo), c.d, c.h, c.mi, c.s, 0, time.UTC)
}

// nextWall returns the first wall-clock time at or after c that matches the
// event, before the year 2200.
func (ev *event) nextWall(c civil) (civil, bool) {
	if c.y < minYear {
		c = civil{y: minYear, mo: 1, d: 1}
	}
	for y := c.y; y < maxYear; y++ {
		if !ev.hasYear(y) {
			continue
		}
		tightY := y == c.y
		mo := 1
		if tightY {
			mo = c.mo
		}
		for ; mo <= 12; mo++ {
			if ev.months&(1<<mo) == 0 {
				continue
			}
			tightM := tightY && mo == c.mo
			d := 1
			if tightM {
				d = c.d
			}
			last := daysIn(y, mo)
			wd := weekday(y, mo, d)
			for ; d <= last; d, wd = d+1, (wd+1)%7 {
				if !ev.dayMatches(d, last, wd) {
					continue
				}
				tightD := tightM && d == c.d
				if hit, ok := ev.timeOfDay(tightD, c); ok {
					hit.y, hit.mo, hit.d = y, mo, d
					return hit, true
				}
			}
		}
	}
	return civil{}, false
}

// timeOfDay returns the first matching time of a matching day, at or after
// c's time when tight (the day is c's).
func (ev *event) timeOfDay(tight bool, c civil) (civil, bool) {
	h0 := 0
	if tight {
		h0 = c.h
	}
	for h := nextBit(uint64(ev.hours), h0); h < 24; h = nextBit(uint64(ev.hours), h+1) {
		tightH := tight && h == c.h
		m0 := 0
		if tightH {
			m0 = c.mi
		}
		for mi := nextBit(ev.minutes, m0); mi < 60; mi = nextBit(ev.minutes, mi+1) {
			s0 := 0
			if tightH && mi == c.mi {
				s0 = c.s
			}
			if s := nextBit(ev.seconds, s0); s < 60 {
				return civil{h: h, mi: mi, s: s}, true
			}
		}
	}
	return civil{}, false
}

func (ev *event) hasYear(y int) bool {
	i := y - minYear
	return i >= 0 && y < maxYear && ev.years[i/64]&(1<<(i%64)) != 0
}

// dayMatches: the weekday (0 = Monday) must match, and the day either
// counted from the month's start or from its end.
func (ev *event) dayMatches(d, last, wd int) bool {
	if ev.weekdays&(1<<wd) == 0 {
		return false
	}
	return ev.days&(1<<d) != 0 || ev.revDays&(1<<(last+1-d)) != 0
}

// nextBit returns the lowest set bit of set at or above from, or 64.
func nextBit(set uint64, from int) int {
	if from >= 64 {
		return 64
	}
	return bits.TrailingZeros64(set >> from << from)
}

func daysIn(y, mo int) int {
	return time.Date(y, time.Month(mo)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// weekday numbers days from Monday = 0, as the expression does.
func weekday(y, mo, d int) int {
	return (int(time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC).Weekday()) + 6) % 7
}
