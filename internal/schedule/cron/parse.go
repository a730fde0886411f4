package cron

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vigil-operator/vigil/internal/schedule/pytext"
)

// Expression is a parsed and validated five-field cron expression. It is immutable
// after Parse and safe for concurrent use.
type Expression struct {
	expr string

	minutes uint64 // bit v set: minute v (0-59) selected
	hours   uint64 // bit v set: hour v (0-23) selected
	months  uint64 // bit v set: month v (1-12) selected

	dom            uint64 // bit v set: day-of-month v (1-31) selected
	domLast        bool   // "L": last day of the month
	domLastWeekday bool   // "LW": last Monday-Friday of the month

	dow     uint8    // bit w set: weekday w selected (0 = Sunday; 7 folded into 0)
	dowLast uint8    // bit w set: last weekday w of the month selected ("<w>L")
	dowNth  [7]uint8 // bit n set in dowNth[w]: n-th weekday w of the month selected ("<w>#<n>")

	// dayAnd is true when the day-of-month or the day-of-week field starts with
	// "*": both must then match. Otherwise either one matching is enough.
	dayAnd bool
	// everyDay is true when every day of every selected month matches.
	everyDay bool
	// fixedTime is true when neither the minute nor the hour field starts with
	// "*": such jobs are evaluated on local wall-clock time (see the package doc).
	fixedTime bool
}

// String returns the expression as given to Parse.
func (e *Expression) String() string { return e.expr }

// validationStart is the instant from which Parse requires an occurrence, as the
// reference does (naive 2000-01-01 00:00).
var validationStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// Parse parses and validates a five-field cron expression. It rejects anything the
// reference rejects (wrong field count, out-of-range values, bad names, reversed ranges,
// step 0, unsupported syntax such as ?, H, W with a number, @daily, seconds, years,
// impossible dates like "0 0 30 2 *", and expressions with no occurrence within 50 years
// after 2000-01-01 00:00, e.g. "* * */20 * 1L").
//
// The returned error message is lowercase and has no prefix, for example
// "minute field: 61 is out of range 0-59" or "expected 5 fields, got 6".
//
// Fields are split on any whitespace, newlines included, as cronsim does. Deciding
// whether a schedule is cron at all is the caller's job: the reference treats a
// schedule as cron only if, after trimming whitespace, it contains no "\n" and has
// exactly five whitespace-separated fields; anything else goes to its OnCalendar
// parser.
func Parse(expr string) (*Expression, error) {
	e, err := compile(expr)
	if err != nil {
		return nil, err
	}
	if _, ok := e.Next(validationStart, nil); !ok {
		return nil, errors.New("no occurrence within 50 years")
	}
	return e, nil
}

// compile parses expr and applies every check except the search for an occurrence.
func compile(expr string) (*Expression, error) {
	fields := splitFields(expr)
	if len(fields) != 5 {
		if len(fields) == 1 && strings.HasPrefix(fields[0], "@") {
			return nil, fmt.Errorf("macros such as %q are not supported, expected 5 fields, got 1", fields[0])
		}
		return nil, fmt.Errorf("expected 5 fields, got %d", len(fields))
	}

	var sets [5]valueSet
	for f := range fields {
		s, err := parseField(fieldKind(f), fields[f])
		if err != nil {
			return nil, fmt.Errorf("%s field: %w", fieldSpecs[f].name, err)
		}
		sets[f] = s
	}

	e := &Expression{
		expr:           expr,
		minutes:        sets[fMinute].values,
		hours:          sets[fHour].values,
		dom:            sets[fDOM].values,
		domLast:        sets[fDOM].last,
		domLastWeekday: sets[fDOM].lastWeekday,
		months:         sets[fMonth].values,
		dayAnd:         strings.HasPrefix(fields[fDOM], "*") || strings.HasPrefix(fields[fDOW], "*"),
		fixedTime:      !strings.HasPrefix(fields[fMinute], "*") && !strings.HasPrefix(fields[fHour], "*"),
	}
	dw := sets[fDOW]
	e.dow = uint8(dw.values&0x7f) | uint8(dw.values>>7&1)
	for v := range 8 {
		if dw.dowLast>>v&1 != 0 {
			e.dowLast |= 1 << (v % 7)
		}
		e.dowNth[v%7] |= dw.dowNth[v]
	}
	const allDOM = uint64(1<<32 - 2)
	e.everyDay = e.dayAnd && e.dom == allDOM && e.dow == 0x7f &&
		!e.domLast && !e.domLastWeekday && e.dowLast == 0 && e.dowNth == [7]uint8{}

	// A day-of-month list whose smallest value exceeds 29 must fit in at least one
	// selected month (the reference counts February as 29 days). L and LW exempt
	// the list from this check.
	if !e.domLast && !e.domLastWeekday {
		minDay := bits.TrailingZeros64(e.dom)
		if minDay > 29 {
			longest := 0
			for m := 1; m <= 12; m++ {
				if e.months>>m&1 != 0 && maxDaysInMonth[m] > longest {
					longest = maxDaysInMonth[m]
				}
			}
			if minDay > longest {
				return nil, fmt.Errorf("day-of-month %d never occurs in %s", minDay, describeMonths(e.months))
			}
		}
	}

	return e, nil
}

type fieldKind int

const (
	fMinute fieldKind = iota
	fHour
	fDOM
	fMonth
	fDOW
)

var fieldSpecs = [5]struct {
	name     string
	min, max int
}{
	{"minute", 0, 59},
	{"hour", 0, 23},
	{"day-of-month", 1, 31},
	{"month", 1, 12},
	{"day-of-week", 0, 7},
}

// maxDaysInMonth is the longest a month can be (February counted as 29).
var maxDaysInMonth = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

var (
	monthNames = [...]string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	dayNames   = [...]string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
)

// valueSet is the parsed content of one field (or of one term of a field).
type valueSet struct {
	values      uint64   // plain values; for day-of-week 0-7 (7 kept apart from 0 until the end)
	last        bool     // day-of-month "L"
	lastWeekday bool     // day-of-month "LW"
	dowLast     uint8    // day-of-week "<d>L", bit d for d in 0-7
	dowNth      [8]uint8 // day-of-week "<d>#<n>", bit n of dowNth[d]
}

func (s *valueSet) union(o valueSet) {
	s.values |= o.values
	s.last = s.last || o.last
	s.lastWeekday = s.lastWeekday || o.lastWeekday
	s.dowLast |= o.dowLast
	for i := range s.dowNth {
		s.dowNth[i] |= o.dowNth[i]
	}
}

// isOnlyLast reports whether the set is exactly {L} or exactly {LW}.
func (s valueSet) isOnlyLast() bool {
	return s.values == 0 && s.dowLast == 0 && s.dowNth == [8]uint8{} && s.last != s.lastWeekday
}

// splitFields splits on runs of whitespace as Python's str.split() does.
func splitFields(s string) []string {
	return strings.FieldsFunc(s, pytext.IsSpace)
}

// upper upper-cases s the way Python's str.upper() does for every character whose
// upper-case form is plain ASCII; other characters can never be part of a valid
// expression, so they are left alone (and rejected later).
func upper(s string) string {
	var b strings.Builder
	for i, r := range s {
		var rep string
		switch {
		case r >= 'a' && r <= 'z':
			rep = string(r - 'a' + 'A')
		case r < utf8.RuneSelf:
			rep = ""
		case r == 'ı': // dotless i
			rep = "I"
		case r == 'ſ': // long s
			rep = "S"
		case r == 'ß':
			rep = "SS"
		case r == 'ﬀ':
			rep = "FF"
		case r == 'ﬁ':
			rep = "FI"
		case r == 'ﬂ':
			rep = "FL"
		case r == 'ﬃ':
			rep = "FFI"
		case r == 'ﬄ':
			rep = "FFL"
		case r == 'ﬅ', r == 'ﬆ':
			rep = "ST"
		}
		if rep == "" {
			if b.Len() > 0 {
				b.WriteRune(r)
			}
			continue
		}
		if b.Len() == 0 {
			b.Grow(len(s) + 2)
			b.WriteString(s[:i])
		}
		b.WriteString(rep)
	}
	if b.Len() == 0 {
		return s
	}
	return b.String()
}

// parseField parses one field (or, recursively, one term of it). The order of the
// checks mirrors the reference parser, because it decides what a mixed term means
// (for example "1#2/3" is an nth-weekday term with a bad nth, not a step).
func parseField(f fieldKind, s string) (valueSet, error) {
	spec := fieldSpecs[f]
	if s == "*" {
		return valueSet{values: rangeBits(spec.min, spec.max)}, nil
	}
	if strings.Contains(s, ",") {
		var out valueSet
		for part := range strings.SplitSeq(s, ",") {
			if part == "" {
				return valueSet{}, fmt.Errorf("empty list element in %q", s)
			}
			p, err := parseField(f, part)
			if err != nil {
				return valueSet{}, err
			}
			out.union(p)
		}
		return out, nil
	}
	if f == fDOW && strings.ContainsAny(upper(s), "L") {
		return parseLastWeekday(s)
	}
	if f == fDOW && strings.Contains(s, "#") {
		return parseNthWeekday(s)
	}
	if term, stepStr, ok := strings.Cut(s, "/"); ok {
		return parseStep(f, s, term, stepStr)
	}
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		if lo == "" && hi != "" && isDigits(hi) {
			return valueSet{}, fmt.Errorf("%q: negative values are not allowed", s)
		}
		a, err := parseValue(f, lo, s)
		if err != nil {
			return valueSet{}, err
		}
		b, err := parseValue(f, hi, s)
		if err != nil {
			return valueSet{}, err
		}
		if b < a {
			return valueSet{}, fmt.Errorf("range %q is reversed (%d > %d)", s, a, b)
		}
		return valueSet{values: rangeBits(a, b)}, nil
	}
	if f == fDOM {
		switch upper(s) {
		case "L":
			return valueSet{last: true}, nil
		case "LW":
			return valueSet{lastWeekday: true}, nil
		}
	}
	v, err := parseValue(f, s, s)
	if err != nil {
		return valueSet{}, err
	}
	return valueSet{values: 1 << v}, nil
}

// parseLastWeekday parses "<d>L" (last weekday d of the month); d must be numeric.
func parseLastWeekday(s string) (valueSet, error) {
	_, size := utf8.DecodeLastRuneInString(s)
	num, l := s[:len(s)-size], s[len(s)-size:]
	if (l != "L" && l != "l") || !isDigits(num) {
		return valueSet{}, fmt.Errorf("%q is not valid: L is only supported as <day number>L, e.g. 5L for the last Friday", s)
	}
	v, err := parseValue(fDOW, num, s)
	if err != nil {
		return valueSet{}, err
	}
	return valueSet{dowLast: 1 << v}, nil
}

// parseNthWeekday parses "<d>#<n>" (n-th weekday d of the month), n in 1-5.
func parseNthWeekday(s string) (valueSet, error) {
	day, nthStr, _ := strings.Cut(s, "#")
	if !isDigits(nthStr) {
		return valueSet{}, fmt.Errorf("%q: %q after # is not a number", s, nthStr)
	}
	nth := atoiSaturating(nthStr)
	if nth < 1 || nth > 5 {
		return valueSet{}, fmt.Errorf("%q: %s after # is out of range 1-5", s, nthStr)
	}
	d, err := parseValue(fDOW, day, s)
	if err != nil {
		return valueSet{}, err
	}
	var out valueSet
	out.dowNth[d] = 1 << nth
	return out, nil
}

// parseStep parses "<term>/<step>". A single start value runs to the field maximum
// ("5/15" = 5,20,35,50); a range or "*" keeps every step-th element of its sorted
// values, starting with the first; "L/n" and "LW/n" are just L and LW.
func parseStep(f fieldKind, s, term, stepStr string) (valueSet, error) {
	if !isDigits(stepStr) {
		if stepStr == "" {
			return valueSet{}, fmt.Errorf("%q: missing step after /", s)
		}
		return valueSet{}, fmt.Errorf("%q: step %q is not a number", s, stepStr)
	}
	step := atoiSaturating(stepStr)
	if step == 0 {
		return valueSet{}, fmt.Errorf("%q: step must not be 0", s)
	}
	if term == "" {
		return valueSet{}, fmt.Errorf("%q: missing value before /", s)
	}
	items, err := parseField(f, term)
	if err != nil {
		return valueSet{}, err
	}
	if items.isOnlyLast() {
		return items, nil
	}
	vals := items.values
	if bits.OnesCount64(vals) == 1 {
		vals = rangeBits(bits.TrailingZeros64(vals), fieldSpecs[f].max)
	}
	var out uint64
	for i := 0; vals != 0; i++ {
		v := bits.TrailingZeros64(vals)
		vals &^= 1 << v
		if i%step == 0 {
			out |= 1 << v
		}
	}
	return valueSet{values: out}, nil
}

// parseValue parses a single number, or a name in the month and day-of-week fields.
// whole is the term it came from, for error messages.
func parseValue(f fieldKind, s, whole string) (int, error) {
	spec := fieldSpecs[f]
	up := upper(s)
	switch f {
	case fMonth:
		for i, n := range monthNames {
			if up == n {
				return i + 1, nil
			}
		}
	case fDOW:
		for i, n := range dayNames {
			if up == n {
				return i, nil
			}
		}
	}
	if s == "" {
		if whole == "" {
			return 0, errors.New("empty value")
		}
		return 0, fmt.Errorf("%q has an empty value", whole)
	}
	if !isDigits(s) {
		return 0, notANumber(f, s, up, whole)
	}
	v := atoiSaturating(s)
	if v < spec.min || v > spec.max {
		return 0, fmt.Errorf("%s is out of range %d-%d", s, spec.min, spec.max)
	}
	return v, nil
}

func notANumber(f fieldKind, s, up, whole string) error {
	in := ""
	if whole != s {
		in = fmt.Sprintf(" in %q", whole)
	}
	switch {
	case up == "?":
		return fmt.Errorf("%q%s is not supported (use *)", s, in)
	case strings.HasPrefix(up, "H"):
		return fmt.Errorf("%q%s: H (hashed values) is not supported", s, in)
	case f == fDOM && (up == "L" || up == "LW"):
		return fmt.Errorf("%q%s: L and LW cannot be combined with ranges", s, in)
	case f == fDOM && strings.Contains(up, "W"):
		return fmt.Errorf("%q%s: W is only supported as LW (last weekday of the month)", s, in)
	case f == fDOM && strings.Contains(up, "L"):
		return fmt.Errorf("%q%s: L is only supported alone (last day of the month)", s, in)
	case f == fMonth && isLetters(up):
		return fmt.Errorf("%q%s is not a month number or name (JAN-DEC)", s, in)
	case f == fDOW && isLetters(up):
		return fmt.Errorf("%q%s is not a day number or name (SUN-SAT)", s, in)
	case f == fDOW && strings.Contains(up, "W"):
		return fmt.Errorf("%q%s: W is not supported in the day-of-week field", s, in)
	}
	return fmt.Errorf("%q%s is not a number", s, in)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isLetters(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// atoiSaturating converts a string of ASCII digits, saturating at a large value
// instead of overflowing.
func atoiSaturating(s string) int {
	const limit = 1 << 30
	n := 0
	for i := 0; i < len(s); i++ {
		n = n*10 + int(s[i]-'0')
		if n > limit {
			return limit
		}
	}
	return n
}

func rangeBits(lo, hi int) uint64 {
	return (uint64(1)<<(hi+1) - 1) &^ (uint64(1)<<lo - 1)
}

func describeMonths(months uint64) string {
	var list []string
	for m := 1; m <= 12; m++ {
		if months>>m&1 != 0 {
			list = append(list, strconv.Itoa(m))
		}
	}
	if len(list) == 1 {
		return "month " + list[0]
	}
	return "months " + strings.Join(list, ",")
}
