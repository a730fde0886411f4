// Package oncalendar parses systemd OnCalendar expressions (systemd.time(7))
// the way the reference service accepts them as a check's schedule, and
// computes their next occurrence. It is pure Go with no dependencies beyond
// the standard library.
//
// # Why not a library
//
// The reference uses the Python library oncalendar, which implements a subset
// of systemd's grammar with its own quirks (a trailing comma after weekdays,
// "-" as a weekday range, "~" days above 28 rejected, years 1970-2199, no
// fractional seconds). The Go packages that parse OnCalendar either wrap
// systemd's C code through D-Bus or implement the full systemd grammar, and
// so accept or reject different strings; matching the reference exactly
// needs the grammar below.
//
// # Dialect
//
// An expression is one or more lines; the earliest next occurrence of any
// line wins. A line is a shortcut (minutely, hourly, daily, weekly, monthly,
// yearly, annually, quarterly, semiannually; case-insensitive) or
//
//	[weekdays] [[year-]month-day] [hour:minute[:second]] [time zone]
//
// where an omitted date is *-*-*, an omitted time 00:00:00 and omitted
// seconds 0. Weekdays are names, long or short and case-insensitive, with
// lists ("Mon,Wed"), ranges ("Mon..Fri" or "Mon-Fri") and a tolerated
// trailing comma ("Mon, 12:00"). Every other field takes "*", values, lists,
// ranges "a..b", and steps "a/n" (from a to the field's end), "a..b/n" and
// "*/n" (every n-th value). Days may count from the month's end with "~"
// ("*-*~1" is the last day, "*-02~7/1" the last seven days of February).
// Two-digit years are 2000-2069 and 1970-1999. A trailing word that names an
// IANA time zone evaluates the line in that zone ("12:34 Europe/Riga").
//
// # Time zones and daylight saving time
//
// Next returns the first real instant strictly after a given one (truncated
// to whole seconds) whose wall-clock time in the line's zone matches the
// line, as systemd does: a time skipped by a spring-forward change never
// fires, and a time repeated by a fall-back change fires at both of its
// instants. Iteration stops at the year 2200; after that there is no next
// occurrence (a check on such a schedule never goes down).
//
// The version of the reference library we read iterated over naive wall
// times and so fired a repeated time once and could, from inside a repeated
// hour, answer an instant before the one it was asked about. Its own
// documentation describes the behaviour above, which is also what a user
// expects, so that is what this package does.
package oncalendar
