// Package cron parses five-field cron expressions and computes their next
// occurrence with exactly the semantics of the reference service (Healthchecks,
// which uses the Python library cronsim 2.7, itself modelled on Debian cron).
// It is pure Go with no dependencies beyond the standard library.
//
// # Dialect
//
// An expression has exactly five fields separated by any whitespace: minute
// (0-59), hour (0-23), day of month (1-31), month (1-12) and day of week (0-7,
// where 0 and 7 are Sunday). Input is case-insensitive. Months and days of the
// week may also be written as three-letter names (JAN-DEC, SUN-SAT; MONDAY or
// JANUARY are rejected), also as range endpoints (MON-FRI, JAN-MAR). Each field
// is "*" or a comma-separated list of terms:
//
//   - a value ("5"), or a range "a-b" (a reversed range such as "5-1" or SAT-SUN
//     is rejected);
//   - a step: "*/n", "a-b/n" keep every n-th value of the range counting from its
//     first ("1-10/4" = 1,5,9), and "a/n" runs from a to the field maximum
//     ("5/15" = 5,20,35,50); n = 0 is rejected. A range of one value counts as a
//     start value ("5-5/10" = 5,15,25 in the minute field), as in the reference;
//   - day of month only: "L" (last day of the month), "LW" (last Monday-Friday of
//     the month); "L/n" and "LW/n" mean L and LW; "1-L", "L-2" and "1W" are rejected;
//   - day of week only: "<d>L" with a numeric d (the last weekday d of the month,
//     "5L" = last Friday; "FRIL" and a bare "L" are rejected) and "<d>#<n>" with d
//     a number or name and n in 1-5 (the n-th weekday d of the month, "MON#2").
//
// Not supported, as in the reference: "?", "H", "W" with a day number, macros
// such as @daily, seconds and year fields. When the day-of-month or the
// day-of-week field starts with "*", a day must match both fields; otherwise a
// day matching either field is enough ("0 0 13 * FRI" fires every 13th and
// every Friday, "0 0 */1 * FRI" only on Fridays). If the smallest day-of-month
// value exceeds 29 it must exist in at least one selected month ("0 0 30 2 *" and
// "0 0 31 4,6 *" are rejected; February counts as 29 days), and Parse rejects
// expressions with no occurrence within 50 years after 2000-01-01 00:00 UTC
// ("* * */20 * 1L").
//
// # Time zones and daylight saving time
//
// Next finds the first occurrence strictly after a given instant truncated to
// whole seconds. In UTC (loc nil or time.UTC) that is plain calendar arithmetic.
// In any other location the reference mimics Debian cron, and so does this
// package. If neither the minute nor the hour field starts with "*" (a job at
// fixed times, such as "30 3 * * *" or "0 1,13 * * *"), the schedule is
// matched on the local wall clock as if there were no DST: a wall-clock time
// skipped by a spring-forward change fires at the first wall-clock minute that
// exists after it (Europe/Riga 2023-03-26 "30 3 * * *" fires at 04:00 local =
// 01:00Z), and a wall-clock time repeated by a fall-back change fires once, at
// its first instant (Riga 2023-10-29 "30 3 * * *" fires at 00:30Z only).
// Otherwise (for example "30 * * * *" or "*/15 9-17 * * *") the schedule is
// matched against the local time of every real instant: skipped wall-clock
// times never fire and repeated ones fire twice (Riga "30 * * * *" fires at
// 2023-10-29T00:30Z and 01:30Z, both 03:30 local). Results are instants; compare
// them as such, never as wall-clock times.
//
// For the second kind the iterator reproduces the reference's stepping rather
// than an idealised model, because the two differ in rare cases: a day that
// starts inside a gap can fire at the end of the gap ("*/30 0 3 9 *" in
// America/Santiago fires once at 2023-09-03T04:00Z, 01:00 local), and in zones
// whose DST shift is not a whole hour (Australia/Lord_Howe) hour steps can skip
// an occurrence. Zone data comes from the Go time package; Python's zoneinfo
// conventions for skipped and repeated times are reproduced.
//
// There are three deliberate differences, all where the reference gives no
// usable answer:
//
//   - The reference can return a time at or before the instant it started from.
//     For a fixed-time job this happens when it starts from the second instant of
//     a repeated wall-clock time: it restarts from the local wall-clock time and
//     maps the match to its first instant (Riga "30 3 * * *" after
//     2023-10-29T01:15Z gives 00:30Z). Next always returns a time strictly after
//     t, so it skips such matches (giving 2023-10-30T01:30Z): the job already
//     fired at that instant.
//   - In a zone that falls back shortly after midnight (America/St_Johns switched
//     at 00:01 until 2011) a day step can take the reference back to the first
//     instant of midnight, before where it was, after which it loops forever.
//     Next uses the second instant of midnight instead.
//   - Where a transition is not on a whole hour, the reference's hour steps can
//     also go round in circles forever (Pacific/Chatham falls back from 03:45 to
//     02:45: "48 */3 * * *" reaches 02:48, rounds down to 02:00, which exists only
//     before the transition, and climbs back to 02:48). Next detects the cycle and
//     checks the following real minutes one by one instead, giving 03:48.
//
// # Library comparison
//
// The project prefers a maintained library over its own code, so these were
// checked (throw-away module, 27 vectors from the reference; results as of
// robfig/cron v3.0.1, hashicorp/cronexpr v1.1.3, adhocore/gronx v1.20.4). None
// matches:
//
//   - github.com/robfig/cron/v3 (ParseStandard): no L, LW, <d>L or <d>#<n>; rejects
//     day-of-week 7; ANDs day fields only when one is exactly "*", so
//     "0 0 */2 * FRI" fires on 2020-01-05 (reference: 2020-01-17) and
//     "0 0 1-7 * */7" on 2020-01-02 (reference: 2020-01-05); accepts "?" and
//     @daily; accepts "0 0 30 2 *" (Next returns the zero time); in Riga a
//     "30 3 * * *" job skips the spring-forward day (fires 2023-03-27T00:30Z
//     instead of 2023-03-26T01:00Z) and fires twice on the fall-back day.
//   - github.com/hashicorp/cronexpr: has L, LW, <d>L and #, but has the same
//     AND/OR error for "*/2"; rejects "*/7" in the day-of-week field; accepts
//     "1W", "?", @daily, seconds and year fields and full names (MONDAY); does
//     not reject impossible dates; mis-evaluates "* * */20 * 1L" (matches
//     2020-01-01T00:01Z); same DST behaviour as robfig.
//   - github.com/adhocore/gronx: closest on syntax but rejects LW and L/2, accepts
//     FRIL, 1W, "?", @daily and six fields; IsValid accepts "0 0 30 2 *" (only
//     NextTickAfter fails, "tried so hard"); DST is wrong both ways (skips the
//     spring-forward run to the next day, fires a fixed-time job at the second
//     instant of a repeated hour, 01:30Z instead of 00:30Z, and fires
//     "30 * * * *" only once in the repeated hour).
//
// So the parser and iterator are written here, from the reference's documented
// behaviour and cronsim's tests; the package tests carry those vectors.
package cron
