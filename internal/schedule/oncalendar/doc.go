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
// to whole seconds) at which the wall clock in the line's zone first shows a
// time matching the line, as the reference does: a time skipped by a
// spring-forward change never fires, and a time repeated by a fall-back
// change fires once, at its first instant (before the change), so a job run
// once in the repeated hour is not reported late. Iteration stops at the year
// 2200; after that there is no next occurrence (a check on such a schedule
// never goes down).
//
// The reference walks wall-clock times from the given instant's, so from
// the second pass of a repeated hour it can answer the first instant of a
// later wall-clock time in that hour, which lies before the given instant.
// Next answers the next occurrence after the given instant instead (from
// 01:10 EST on the New York fall-back night, "*:30" answers 02:30 EST, not
// 01:30 EDT, which has passed). The reference library's documentation says
// a repeated time fires at both instants, but its code, which the reference
// service runs, fires it once; Vigil follows the code.
package oncalendar
