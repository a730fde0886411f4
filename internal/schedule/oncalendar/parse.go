package oncalendar

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/vigil-operator/vigil/internal/schedule/pytext"
)

// Calendar bounds. Years are limited to 1970..2199 like systemd, so every
// search ends.
const (
	minYear = 1970
	maxYear = 2200 // exclusive
)

// field identifies a component of a calendar event; its name appears in
// errors.
type field int

const (
	fieldWeekday field = iota
	fieldYear
	fieldMonth
	fieldDay
	fieldHour
	fieldMinute
	fieldSecond
)

var fieldNames = [...]string{"day-of-week", "year", "month", "day-of-month", "hour", "minute", "second"}

// fieldRange is each field's inclusive range of values.
var fieldRange = [...][2]int{{0, 6}, {minYear, maxYear - 1}, {1, 12}, {1, 31}, {0, 23}, {0, 59}, {0, 59}}

var (
	longWeekdays  = [...]string{"MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"}
	shortWeekdays = [...]string{"MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"}
)

// shortcuts are the named events systemd knows, as their long forms.
var shortcuts = map[string]string{
	"minutely":     "*-*-* *:*:00",
	"hourly":       "*-*-* *:00:00",
	"daily":        "*-*-* 00:00:00",
	"monthly":      "*-*-01 00:00:00",
	"weekly":       "Mon *-*-* 00:00:00",
	"yearly":       "*-01-01 00:00:00",
	"annually":     "*-01-01 00:00:00",
	"quarterly":    "*-01,04,07,10-01 00:00:00",
	"semiannually": "*-01,07-01 00:00:00",
}

// Error is a line the parser rejects.
type Error struct {
	// Line is the 1-based line of the expression.
	Line int
	// Msg says what is wrong.
	Msg string
}

func (e *Error) Error() string {
	if e.Line > 1 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// errBad is an error for one field; Parse adds the line.
type errBad struct{ msg string }

func (e errBad) Error() string { return e.msg }

func bad(f field, value string) error {
	return errBad{fmt.Sprintf("bad %s: %q", fieldNames[f], value)}
}

// Expression is a parsed OnCalendar schedule: one or more events, the first
// occurrence of any of them counts.
type Expression struct {
	events []*event
	src    string
}

// event is one line: a set of calendar values and, optionally, its own zone.
type event struct {
	weekdays uint8 // bit 0 = Monday
	years    [4]uint64
	months   uint16 // bit m
	days     uint32 // bit d, for days counted from the start of the month
	revDays  uint64 // bit k: the k-th day counted from the month's end (1 = last)
	hours    uint32
	minutes  uint64
	seconds  uint64
	loc      *time.Location // nil: the schedule's zone
}

// Parse parses an OnCalendar expression: one event per line, each
// "[weekdays] [[year-]month-day] [hour:minute[:second]] [zone]" or a
// shortcut such as "daily", as the reference service accepts it. It does
// not check that the expression ever fires; Next tells.
func Parse(expr string) (*Expression, error) {
	lines := strings.Split(strings.TrimFunc(expr, pytext.IsSpace), "\n")
	e := &Expression{src: expr}
	for i, line := range lines {
		ev, err := parseLine(line)
		if err != nil {
			return nil, &Error{Line: i + 1, Msg: err.Error()}
		}
		e.events = append(e.events, ev)
	}
	return e, nil
}

// String returns the expression as given.
func (e *Expression) String() string { return e.src }

func parseLine(line string) (*event, error) {
	line = strings.TrimFunc(line, pytext.IsSpace)
	var loc *time.Location
	last := ""
	// A trailing word is a zone when it names one; only a plain space
	// separates it, as in the reference.
	if strings.Contains(line, " ") {
		fields := strings.FieldsFunc(line, pytext.IsSpace)
		last = fields[len(fields)-1]
		if l := loadZone(last); l != nil {
			loc = l
			line = strings.TrimRightFunc(strings.TrimSuffix(line, last), pytext.IsSpace)
		}
	}
	ev, err := parseEvent(line)
	if err != nil {
		// "12:34 Mars/Olympus" fails on its first word; the user's mistake
		// is the zone.
		if loc == nil && strings.Contains(last, "/") && !strings.ContainsRune("0123456789*", rune(last[0])) {
			return nil, errBad{fmt.Sprintf("unknown time zone %q", last)}
		}
		return nil, err
	}
	ev.loc = loc
	return ev, nil
}

// loadZone returns the zone a word names, or nil. Words that start with a
// digit or "*" are calendar values, never zones.
func loadZone(word string) *time.Location {
	if word == "" || strings.ContainsRune("0123456789*", rune(word[0])) || word == "Local" {
		return nil
	}
	loc, err := time.LoadLocation(word)
	if err != nil {
		return nil
	}
	return loc
}

func parseEvent(s string) (*event, error) {
	if long, ok := shortcuts[asciiLower(s)]; ok {
		s = long
	}
	parts := strings.FieldsFunc(strings.ReplaceAll(s, "~", "-~"), pytext.IsSpace)
	if len(parts) == 0 {
		return nil, errBad{"empty expression"}
	}
	ev := &event{}
	var err error

	hours, minutes, seconds := []int{0}, []int{0}, []int{0}
	if last := parts[len(parts)-1]; strings.Contains(last, ":") {
		parts = parts[:len(parts)-1]
		t := strings.Split(last, ":")
		if len(t) != 2 && len(t) != 3 {
			return nil, errBad{fmt.Sprintf("bad time: %q", last)}
		}
		if len(t) == 2 {
			t = append(t, "0")
		}
		if hours, err = parseField(fieldHour, t[0], false); err != nil {
			return nil, err
		}
		if minutes, err = parseField(fieldMinute, t[1], false); err != nil {
			return nil, err
		}
		if seconds, err = parseField(fieldSecond, t[2], false); err != nil {
			return nil, err
		}
	}
	for _, v := range hours {
		ev.hours |= 1 << v
	}
	for _, v := range minutes {
		ev.minutes |= 1 << v
	}
	for _, v := range seconds {
		ev.seconds |= 1 << v
	}

	years, months, days := fullRange(fieldYear), fullRange(fieldMonth), fullRange(fieldDay)
	if n := len(parts); n > 0 && strings.Contains(parts[n-1], "-") && strings.ContainsRune("0123456789*", rune(parts[n-1][0])) {
		last := parts[n-1]
		parts = parts[:n-1]
		d := strings.Split(last, "-")
		if len(d) != 2 && len(d) != 3 {
			return nil, errBad{fmt.Sprintf("bad date: %q", last)}
		}
		if len(d) == 2 {
			d = append([]string{"*"}, d...)
		}
		if years, err = parseField(fieldYear, d[0], false); err != nil {
			return nil, err
		}
		if months, err = parseField(fieldMonth, d[1], false); err != nil {
			return nil, err
		}
		if days, err = parseField(fieldDay, d[2], false); err != nil {
			return nil, err
		}
	}
	for _, v := range years {
		i := v - minYear
		ev.years[i/64] |= 1 << (i % 64)
	}
	for _, v := range months {
		ev.months |= 1 << v
	}
	for _, v := range days {
		if v > 0 {
			ev.days |= 1 << v
		} else if v < 0 {
			ev.revDays |= 1 << -v
		}
	}

	weekdays := fullRange(fieldWeekday)
	if len(parts) > 0 {
		if weekdays, err = parseField(fieldWeekday, parts[0], false); err != nil {
			return nil, err
		}
		parts = parts[1:]
	}
	for _, v := range weekdays {
		ev.weekdays |= 1 << v
	}
	if len(parts) > 0 {
		return nil, errBad{fmt.Sprintf("unexpected %q: an event is [weekdays] [[year-]month-day] [hour:minute[:second]] [time zone]", strings.Join(parts, " "))}
	}
	return ev, nil
}

func fullRange(f field) []int {
	r := fieldRange[f]
	out := make([]int, 0, r[1]-r[0]+1)
	for v := r[0]; v <= r[1]; v++ {
		out = append(out, v)
	}
	return out
}

// parseField parses one field's text into its values (with duplicates; the
// caller sets bits). reverse marks days counted from the month's end ("~"),
// which come out negative.
func parseField(f field, s string, reverse bool) ([]int, error) {
	if s == "*" && f != fieldWeekday {
		return fullRange(f), nil
	}
	if f == fieldWeekday && strings.HasSuffix(s, ",") {
		return parseField(f, s[:len(s)-1], reverse)
	}
	if f == fieldWeekday && strings.Contains(s, "-") {
		return parseField(f, strings.ReplaceAll(s, "-", ".."), reverse)
	}
	if f == fieldDay && strings.HasPrefix(s, "~") {
		return parseField(f, s[1:], true)
	}
	if strings.Contains(s, ",") {
		var out []int
		for _, term := range strings.Split(s, ",") {
			vs, err := parseField(f, term, reverse)
			if err != nil {
				return nil, err
			}
			out = append(out, vs...)
		}
		return out, nil
	}
	if term, stepText, ok := strings.Cut(s, "/"); ok && f != fieldWeekday {
		step, ok := parseDigits(stepText)
		if !ok || step == 0 {
			return nil, bad(f, s)
		}
		items, err := parseField(f, term, reverse)
		if err != nil {
			return nil, err
		}
		items = sortedUnique(items)
		if len(items) == 1 {
			// A single start value runs to the field's end (to 0 when
			// counting from the month's end).
			end := fieldRange[f][1]
			if reverse {
				end = 0
			}
			var out []int
			for v := items[0]; v <= end; v += step {
				out = append(out, v)
				if step > end-v {
					break
				}
			}
			return out, nil
		}
		var out []int
		for i := 0; i < len(items); i += step {
			out = append(out, items[i])
			if step > len(items)-i {
				break
			}
		}
		return out, nil
	}
	if lo, hi, ok := strings.Cut(s, ".."); ok {
		start, err := value(f, lo)
		if err != nil {
			return nil, err
		}
		end, err := value(f, hi)
		if err != nil {
			return nil, err
		}
		if end < start {
			return nil, bad(f, s)
		}
		if reverse {
			start, end = -end, -start
		}
		out := make([]int, 0, end-start+1)
		for v := start; v <= end; v++ {
			out = append(out, v)
		}
		return out, nil
	}
	v, err := value(f, s)
	if err != nil {
		return nil, err
	}
	if reverse {
		// systemd rejects "~" days above 28.
		if v > 28 {
			return nil, bad(f, "~"+s)
		}
		v = -v
	}
	return []int{v}, nil
}

// value parses a single value of a field: a weekday name, or digits in the
// field's range (two-digit years are 2000-2069 and 1970-1999).
func value(f field, s string) (int, error) {
	if f == fieldWeekday {
		up := pythonUpper(s)
		for i := range longWeekdays {
			if up == longWeekdays[i] || up == shortWeekdays[i] {
				return i, nil
			}
		}
		return 0, bad(f, s)
	}
	v, ok := parseDigits(s)
	if !ok {
		return 0, bad(f, s)
	}
	if f == fieldYear && v < 70 {
		v += 2000
	} else if f == fieldYear && v < 100 {
		v += 1900
	}
	if r := fieldRange[f]; v < r[0] || v > r[1] {
		return 0, bad(f, s)
	}
	return v, nil
}

// tooBig stands for any number above every field's range.
const tooBig = 1 << 30

// parseDigits parses a non-empty string of ASCII digits; values above
// tooBig saturate to it.
func parseDigits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v < tooBig {
			v = v*10 + int(c-'0')
		}
	}
	return min(v, tooBig), true
}

func sortedUnique(vs []int) []int {
	seen := map[int]bool{}
	out := make([]int, 0, len(vs))
	for _, v := range vs {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	// Insertion sort: sets are small (at most 230 years).
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// asciiLower lowers ASCII letters only, so no non-ASCII spelling of a
// shortcut ("DAİLY") is taken for one; Python's str.lower turns İ into two
// code points, which never match either. The Kelvin sign lowers to k in
// both.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\u212a' {
			return 'k'
		}
		if r < 0x80 {
			return unicode.ToLower(r)
		}
		return r
	}, s)
}

// pythonUpper upper-cases as Python's str.upper does for the letters that
// can spell a weekday: Go and Python agree on simple mappings (ı → I,
// ſ → S); letters Python expands to several (ß → SS) never spell one.
func pythonUpper(s string) string {
	return strings.Map(unicode.ToUpper, s)
}
