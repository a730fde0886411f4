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
// An occurrence is a real instant whose wall-clock time in the event's zone
// matches the event: a time skipped by a daylight-saving change never fires
// and a repeated one fires at both of its instants.
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
// answer.
func (ev *event) next(after time.Time, loc *time.Location) (time.Time, bool) {
	from := after.Add(time.Second)
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
		hit, ok := ev.nextWall(civilOf(local))
		if !ok {
			return time.Time{}, false
		}
		at := hit.utc().Add(-time.Duration(offset) * time.Second)
		if !end.IsZero() && !at.Before(end) {
			from = end
			continue
		}
		if offsetAt(at, loc) == offset {
			return at, true
		}
		from = nextOffsetChange(from, at, loc, offset)
	}
	return time.Time{}, false
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
