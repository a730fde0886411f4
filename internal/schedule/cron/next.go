package cron

import (
	"math/bits"
	"time"
)

const (
	secondsPerDay = 86400

	// searchYears is how far Next looks: it gives up once the (local) year exceeds
	// the starting year by more than this, like the reference.
	searchYears = 50

	// Unix-second bounds (roughly years -100000 and 100000) outside which Next
	// reports no occurrence rather than risk arithmetic overflow.
	minUnix = -3_217_862_419_200
	maxUnix = 3_093_527_980_800
)

// Next returns the first occurrence strictly after t truncated to whole seconds,
// evaluated in loc (nil means UTC), as an instant (its Location may be loc or UTC; callers
// compare instants). ok is false when there is none within 50 years after t.
//
// "Within 50 years" follows the reference exactly: the search stops once the local
// calendar year exceeds the year of t by more than 50, so it always covers at
// least 50 full years.
//
// With loc nil or time.UTC the expression is matched against UTC wall-clock time.
// With any other location the DST model described in the package documentation
// applies.
func (e *Expression) Next(t time.Time, loc *time.Location) (next time.Time, ok bool) {
	if loc == nil {
		loc = time.UTC
	}
	u0 := t.Unix() // truncates to whole seconds (floor)
	if u0 < minUnix || u0 > maxUnix {
		return time.Time{}, false
	}
	var u int64
	switch {
	case loc == time.UTC:
		u, ok = e.nextNaive(u0)
	case e.fixedTime:
		u, ok = e.nextFixedTime(u0, loc)
	default:
		u, ok = e.nextRealTime(u0, loc)
	}
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(u, 0).In(loc), true
}

// nextNaive matches UTC wall-clock time: plain calendar arithmetic.
func (e *Expression) nextNaive(u0 int64) (int64, bool) {
	w := walker{e: e, naive: true, w: u0}
	if !w.advance() {
		return 0, false
	}
	return w.w, true
}

// nextFixedTime implements the Debian-cron model for jobs at fixed times: the
// schedule is matched on local wall-clock time with no regard to DST; a match
// that falls into a spring-forward gap moves to the first wall-clock minute that
// exists, and an ambiguous (repeated) wall-clock time means its first instant.
func (e *Expression) nextFixedTime(u0 int64, loc *time.Location) (int64, bool) {
	z := zoneCursor{loc: loc}
	wall, _ := z.fromUTC(u0)
	w := walker{e: e, naive: true, w: wall}
	// The reference starts from the wall-clock time of t, so when t is the second
	// instant of a repeated wall-clock time it can produce a match whose first
	// instant lies before t. Such matches are skipped to keep Next strictly after t:
	// the job already fired at that instant.
	for range 100_000 {
		if !w.advance() {
			return 0, false
		}
		for i := 0; i < 7*24*60 && z.isImaginary(w.w); i++ {
			w.w += 60
		}
		if u := z.toUTC(w.w, false); u > u0 {
			return u, true
		}
	}
	return 0, false
}

// nextRealTime implements the model for jobs whose minute or hour field starts
// with "*": the schedule is matched against the local wall-clock time of every
// real instant, so skipped wall-clock times never match and repeated ones match
// twice. The walk reproduces the reference's stepping, including its behaviour
// around transitions that are not whole hours or that happen at midnight (see
// the package documentation for the two deliberate differences).
func (e *Expression) nextRealTime(u0 int64, loc *time.Location) (int64, bool) {
	w := walker{e: e, z: zoneCursor{loc: loc}, furthest: u0}
	w.w, w.fold = w.z.fromUTC(u0)
	// A match at or before t (possible around transitions, see the package
	// documentation) is skipped; if that keeps happening, the stall detection in
	// advance breaks the cycle.
	for range 100_000 {
		if !w.advance() {
			return 0, false
		}
		if u := w.z.toUTC(w.w, w.fold); u > u0 {
			return u, true
		}
	}
	return 0, false
}

// walker is the search state: a wall-clock time in seconds (the local date and
// time read as if it were UTC) plus the fold flag that tells the first (false)
// from the second (true) instant of a repeated wall-clock time. In naive mode
// the wall clock is simply advanced; otherwise every step moves the real instant
// and re-reads the local wall-clock time, as the reference does.
type walker struct {
	e     *Expression
	naive bool
	z     zoneCursor
	w     int64
	fold  bool

	// Real-time mode only: the latest instant reached so far and the number of
	// steps since it last grew, to detect walks going round in circles.
	furthest int64
	stalled  int

	// cache of the matching-days mask for one month
	maskYear  int64
	maskMonth int
	mask      uint64
}

// tick moves the state s seconds forward in real time.
func (w *walker) tick(s int64) {
	if w.naive {
		w.w += s
		return
	}
	u := w.z.toUTC(w.w, w.fold)
	w.w, w.fold = w.z.fromUTC(u + s)
}

// lockstep reports whether moving s seconds forward in real time advances the
// wall clock by exactly s seconds at every step on the way (no UTC-offset change
// and the current wall-clock time really exists). Then a single jump gives the
// same result as the reference's unit-by-unit loop.
func (w *walker) lockstep(s int64) bool {
	if w.naive {
		return true
	}
	u := w.z.toUTC(w.w, w.fold)
	return w.z.contains(u) && w.z.contains(u+s) && u+w.z.off == w.w
}

// advance moves the state one second forward and then to the first state that
// matches every field, stepping month, day, hour, minute and second like the
// reference. It returns false if the local year exceeds the starting year by
// more than 50.
func (w *walker) advance() bool {
	e := w.e
	w.tick(1)
	startYear, _, _ := civil(floorDiv(w.w, secondsPerDay))
	for range 1 << 20 {
		if !w.naive {
			if u := w.z.toUTC(w.w, w.fold); u > w.furthest {
				w.furthest, w.stalled = u, 0
			} else if w.stalled++; w.stalled > maxStalledSteps {
				// The reference's steps are going round in circles (it would
				// never return); see escape.
				if w.escape(w.furthest) {
					return true
				}
				w.furthest, w.stalled = w.z.toUTC(w.w, w.fold), 0
			}
		}

		days := floorDiv(w.w, secondsPerDay)
		sod := w.w - days*secondsPerDay
		y, m, d := civil(days)

		// Month.
		if e.months>>m&1 == 0 {
			y, m = e.nextMonth(y, m)
			if y > startYear+searchYears {
				return false
			}
			w.setMidnight(y, m, 1)
			continue
		}
		if y > startYear+searchYears {
			return false
		}

		// Day.
		mask := w.dayMask(y, m)
		if mask>>d&1 == 0 {
			if rest := mask >> (d + 1) << (d + 1); rest != 0 {
				w.setMidnight(y, m, bits.TrailingZeros64(rest))
			} else if m == 12 {
				w.setMidnight(y+1, 1, 1)
			} else {
				w.setMidnight(y, m+1, 1)
			}
			continue
		}

		// Hour.
		h := int(sod / 3600)
		if e.hours>>h&1 == 0 {
			w.w -= sod % 3600
			target := nextBit(e.hours, h+1, 24)
			if delta := int64(target-h) * 3600; w.lockstep(delta) {
				w.tick(delta)
			} else {
				for range 100 {
					w.tick(3600)
					hh := int(floorMod(w.w, secondsPerDay) / 3600)
					if e.hours>>hh&1 != 0 || hh == 0 {
						break
					}
				}
			}
			continue
		}

		// Minute.
		mi := int(sod / 60 % 60)
		if e.minutes>>mi&1 == 0 {
			w.w -= sod % 60
			if bits.OnesCount64(e.minutes) == 1 {
				// The reference jumps straight to a lone minute value.
				target := bits.TrailingZeros64(e.minutes)
				w.tick(int64((target-mi+60)%60) * 60)
				mi = int(floorMod(w.w, 3600) / 60)
			}
			if e.minutes>>mi&1 == 0 {
				target := nextBit(e.minutes, mi+1, 60)
				if delta := int64(target-mi) * 60; w.lockstep(delta) {
					w.tick(delta)
				} else {
					for range 200 {
						w.tick(60)
						mm := int(floorMod(w.w, 3600) / 60)
						if e.minutes>>mm&1 != 0 || mm == 0 {
							break
						}
					}
				}
			}
			continue
		}

		// Second (always 0 in five-field expressions).
		if sec := sod % 60; sec != 0 {
			w.tick(60 - sec)
			for i := 0; i < 60 && floorMod(w.w, 60) != 0; i++ {
				w.tick(1)
			}
			continue
		}
		return true
	}
	return false
}

// maxStalledSteps is how many steps in a row may fail to reach a new instant
// before the walk is considered stuck. Normal walks progress at nearly every step;
// stuck ones repeat a cycle of a few steps.
const maxStalledSteps = 64

// escape handles a walk stuck in a cycle. The reference gets into one when a DST
// transition that is not on a whole hour makes a step go back across it: in
// Pacific/Chatham (clocks fall back from 03:45 to 02:45) "48 */3 * * 0"
// reaches 02:48 after the transition, rounds down to 02:00, which only exists
// before it, and climbs back to 02:48 forever. Here the wall-clock time of each
// real minute after the furthest instant reached is checked directly, for up to
// scanMinutes minutes; escape returns true with the state at the first match, or
// false with the state at the end of the scan, well past the transition.
func (w *walker) escape(furthest int64) bool {
	const scanMinutes = 6 * 60
	wall, _ := w.z.fromUTC(furthest)
	u := furthest + 60 - floorMod(wall, 60)
	for range scanMinutes {
		wall, fold := w.z.fromUTC(u)
		if w.matches(wall) {
			w.w, w.fold = wall, fold
			return true
		}
		u += 60
	}
	w.w, w.fold = w.z.fromUTC(u)
	return false
}

// matches reports whether a wall-clock time matches every field.
func (w *walker) matches(wall int64) bool {
	e := w.e
	days := floorDiv(wall, secondsPerDay)
	sod := wall - days*secondsPerDay
	y, m, d := civil(days)
	return sod%60 == 0 &&
		e.minutes>>(sod/60%60)&1 != 0 &&
		e.hours>>(sod/3600)&1 != 0 &&
		e.months>>m&1 != 0 &&
		w.dayMask(y, m)>>d&1 != 0
}

// setMidnight moves the state to 00:00 of the given date, taking its first instant
// if that wall-clock time is repeated. The one exception is where that instant lies
// before the current one, which happens only in zones that fall back shortly after
// midnight (America/St_Johns until 2011 switched at 00:01): there the reference
// jumps back and forth forever, and the second instant is used instead.
func (w *walker) setMidnight(y int64, m, d int) {
	wall := daysFromCivil(y, m, d) * secondsPerDay
	fold := !w.naive && w.z.toUTC(wall, false) <= w.z.toUTC(w.w, w.fold)
	w.w, w.fold = wall, fold
}

// nextMonth returns the first selected month after (y, m).
func (e *Expression) nextMonth(y int64, m int) (int64, int) {
	if n := nextBit(e.months, m+1, 13); n <= 12 {
		return y, n
	}
	return y + 1, nextBit(e.months, 1, 13)
}

// nextBit returns the lowest set bit of set at or above from, or limit if none is
// below limit.
func nextBit(set uint64, from, limit int) int {
	if from >= 64 {
		return limit
	}
	rest := set >> from << from
	if rest == 0 {
		return limit
	}
	if b := bits.TrailingZeros64(rest); b < limit {
		return b
	}
	return limit
}

// every7 has bits 0, 7, 14, 21 and 28 set.
const every7 = 1 | 1<<7 | 1<<14 | 1<<21 | 1<<28

// dayMask returns the days (bits 1-31) of month m of year y that match the
// day-of-month and day-of-week fields.
func (w *walker) dayMask(y int64, m int) uint64 {
	if w.maskMonth == m && w.maskYear == y {
		return w.mask
	}
	e := w.e
	n := daysIn(y, m)
	valid := rangeBits(1, n)
	var mask uint64
	if e.everyDay {
		mask = valid
	} else {
		dom := e.dom & valid
		if e.domLast {
			dom |= 1 << n
		}
		if e.domLastWeekday {
			last := n
			switch weekday(daysFromCivil(y, m, n)) {
			case 0: // Sunday
				last -= 2
			case 6: // Saturday
				last--
			}
			dom |= 1 << last
		}
		first := weekday(daysFromCivil(y, m, 1))
		var dow uint64
		for wd := range 7 {
			start := 1 + (wd-first+7)%7 // first day of the month with weekday wd
			occ := uint64(every7) << start & valid
			if e.dow>>wd&1 != 0 {
				dow |= occ
			}
			if e.dowLast>>wd&1 != 0 {
				dow |= 1 << (63 - bits.LeadingZeros64(occ))
			}
			for nth := e.dowNth[wd]; nth != 0; nth &= nth - 1 {
				k := bits.TrailingZeros8(nth)
				if day := start + 7*(k-1); day <= n {
					dow |= 1 << day
				}
			}
		}
		if e.dayAnd {
			mask = dom & dow
		} else {
			mask = dom | dow
		}
	}
	w.maskYear, w.maskMonth, w.mask = y, m, mask
	return mask
}

// zoneCursor converts between instants and local wall-clock times for one
// location, caching the zone period (span of constant UTC offset) it last used.
// Wall-clock times are seconds since 1970-01-01 00:00 read as if local were UTC.
type zoneCursor struct {
	loc      *time.Location
	loaded   bool
	hasStart bool  // false: the period extends to the beginning of time
	hasEnd   bool  // false: the period extends forever
	start    int64 // first instant of the period
	end      int64 // first instant after the period
	off      int64 // UTC offset in the period
	prevOff  int64 // UTC offset just before start
	nextOff  int64 // UTC offset from end on
}

func (z *zoneCursor) contains(u int64) bool {
	return z.loaded && (!z.hasStart || u >= z.start) && (!z.hasEnd || u < z.end)
}

func (z *zoneCursor) load(u int64) {
	t := time.Unix(u, 0).In(z.loc)
	_, off := t.Zone()
	start, end := t.ZoneBounds()
	if !end.IsZero() && end.Unix() <= u {
		// Work around Go issue 81583: for instants on the last UTC day of a
		// leap year served by a zone's TZ footer rule, ZoneBounds reports an end
		// before the instant. No real transition happens there, so take the
		// period boundary that follows from the next day's period instead.
		s2, e2 := time.Unix(u+2*secondsPerDay, 0).In(z.loc).ZoneBounds()
		switch {
		case !s2.IsZero() && s2.Unix() > u:
			end = s2
		case e2.IsZero() || e2.Unix() > u:
			end = e2
		default:
			end = time.Unix(u+1, 0)
		}
	}
	if !start.IsZero() && start.Unix() > u {
		start = time.Unix(u, 0) // never seen; keeps start <= u < end
	}
	z.loaded = true
	z.off = int64(off)
	z.hasStart = !start.IsZero()
	if z.hasStart {
		z.start = start.Unix()
		_, prev := time.Unix(z.start-1, 0).In(z.loc).Zone()
		z.prevOff = int64(prev)
	}
	z.hasEnd = !end.IsZero()
	if z.hasEnd {
		z.end = end.Unix()
		_, next := time.Unix(z.end, 0).In(z.loc).Zone()
		z.nextOff = int64(next)
	}
}

// fromUTC returns the wall-clock time of instant u and whether u is the second
// instant of a repeated wall-clock time.
func (z *zoneCursor) fromUTC(u int64) (wall int64, fold bool) {
	if !z.contains(u) {
		z.load(u)
	}
	fold = z.hasStart && z.prevOff > z.off && u-z.start < z.prevOff-z.off
	return u + z.off, fold
}

// toUTC returns the instant of a wall-clock time following Python's zoneinfo
// rules: a repeated wall-clock time maps to its first instant unless fold is
// set; a skipped one is read with the offset in effect before the transition
// (or after it if fold is set).
func (z *zoneCursor) toUTC(wall int64, fold bool) int64 {
	const far = 2 * secondsPerDay
	if !z.loaded || (z.hasStart && wall < z.start-far) || (z.hasEnd && wall > z.end+far) {
		z.load(wall - z.offsetNear(wall))
	}
	for range 8 {
		if z.hasStart && wall < z.start+pick(fold, z.prevOff, z.off) {
			z.load(z.start - 1)
			continue
		}
		if z.hasEnd && wall >= z.end+pick(fold, z.off, z.nextOff) {
			z.load(z.end)
			continue
		}
		break
	}
	return wall - z.off
}

// offsetNear is a first guess of the UTC offset around a wall-clock time.
func (z *zoneCursor) offsetNear(wall int64) int64 {
	_, off := time.Unix(wall, 0).In(z.loc).Zone()
	return int64(off)
}

// isImaginary reports whether a wall-clock time does not exist (falls into a gap).
func (z *zoneCursor) isImaginary(wall int64) bool {
	back, _ := z.fromUTC(z.toUTC(wall, false))
	return back != wall
}

// pick returns the larger of a and b for the first instant (fold false) and the
// smaller for the second: the wall-clock time at which a transition takes effect.
func pick(fold bool, a, b int64) int64 {
	if (a > b) != fold {
		return a
	}
	return b
}

// Calendar helpers (proleptic Gregorian, days counted from 1970-01-01).

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// daysFromCivil returns the day number of a date.
func daysFromCivil(y int64, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := int64((m + 9) % 12)
	doy := (153*mp+2)/5 + int64(d) - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civil returns the date of a day number.
func civil(days int64) (y int64, m, d int) {
	days += 719468
	era := floorDiv(days, 146097)
	doe := days - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = int(doy - (153*mp+2)/5 + 1)
	if mp < 10 {
		m = int(mp + 3)
	} else {
		m = int(mp - 9)
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

// weekday returns the day of the week of a day number, 0 = Sunday.
func weekday(days int64) int { return int(floorMod(days+4, 7)) }

func isLeap(y int64) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func daysIn(y int64, m int) int {
	if m == 2 && isLeap(y) {
		return 29
	}
	return maxDaysInMonth[m] - btoi(m == 2)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
