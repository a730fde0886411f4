package cron

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the DST vectors must not depend on the host's zone files
)

// nextCase is a test vector: starting just after `after`, Next must return the
// instants in want one after another (each call starts from the previous
// result). Times are RFC 3339; local offsets in the vectors are for readability,
// only the instants are compared. tz "" means loc nil (UTC).
type nextCase struct {
	name  string
	expr  string
	tz    string
	after string
	want  []string
}

var nextCases = []nextCase{
	// Basics and next-occurrence semantics (reference §7.2, §9.4).
	{"every minute", "* * * * *", "", "2020-01-01T00:00:00Z", []string{"2020-01-01T00:01:00Z", "2020-01-01T00:02:00Z"}},
	{"hourly from a ping (hc test)", "0 * * * *", "", "2000-01-01T00:00:00Z", []string{"2000-01-01T01:00:00Z"}},
	{"strictly after exact match", "0 * * * *", "", "2000-01-01T01:00:00Z", []string{"2000-01-01T02:00:00Z"}},
	{"truncated to seconds", "0 * * * *", "", "2000-01-01T00:59:59.5Z", []string{"2000-01-01T01:00:00Z"}},
	{"sub-second after match", "0 * * * *", "", "2000-01-01T01:00:00.999Z", []string{"2000-01-01T02:00:00Z"}},
	{"seconds past match", "0 * * * *", "", "2000-01-01T01:00:30Z", []string{"2000-01-01T02:00:00Z"}},
	{"star step", "*/15 * * * *", "", "2020-01-01T00:07:00Z", []string{"2020-01-01T00:15:00Z", "2020-01-01T00:30:00Z", "2020-01-01T00:45:00Z", "2020-01-01T01:00:00Z"}},
	{"start step", "5/15 * * * *", "", "2020-01-01T00:00:00Z", []string{"2020-01-01T00:05:00Z", "2020-01-01T00:20:00Z", "2020-01-01T00:35:00Z", "2020-01-01T00:50:00Z", "2020-01-01T01:05:00Z"}},
	{"range step", "0-10/4 * * * *", "", "2020-01-01T00:00:00Z", []string{"2020-01-01T00:04:00Z", "2020-01-01T00:08:00Z", "2020-01-01T01:00:00Z"}},
	{"one-value range step runs to max", "5-5/20 * * * *", "", "2020-01-01T00:00:00Z", []string{"2020-01-01T00:05:00Z", "2020-01-01T00:25:00Z", "2020-01-01T00:45:00Z", "2020-01-01T01:05:00Z"}},
	{"two ranges", "1-3,7-9 * * * *", "", "2020-01-01T00:00:00Z", []string{"2020-01-01T00:01:00Z", "2020-01-01T00:02:00Z", "2020-01-01T00:03:00Z", "2020-01-01T00:07:00Z"}},
	{"hour range step", "0 9-17/4 * * *", "", "2020-01-01T00:00:00Z", []string{"2020-01-01T09:00:00Z", "2020-01-01T13:00:00Z", "2020-01-01T17:00:00Z", "2020-01-02T09:00:00Z"}},
	{"month step from name", "0 0 1 JAN/3 *", "", "2020-01-01T00:00:00Z", []string{"2020-04-01T00:00:00Z", "2020-07-01T00:00:00Z", "2020-10-01T00:00:00Z", "2021-01-01T00:00:00Z"}},
	{"name ranges", "0 0 * JAN-MAR MON-FRI", "", "2020-03-30T00:00:00Z", []string{"2020-03-31T00:00:00Z", "2021-01-01T00:00:00Z", "2021-01-04T00:00:00Z"}},
	{"name lists any case", "0 12 * jan,Jul sun,SAT", "", "2020-01-01T00:00:00Z", []string{"2020-01-04T12:00:00Z", "2020-01-05T12:00:00Z", "2020-01-11T12:00:00Z"}},
	{"weekday 7 is sunday", "0 0 * * 7", "", "2020-01-01T00:00:00Z", []string{"2020-01-05T00:00:00Z", "2020-01-12T00:00:00Z"}},
	{"weekday 0 is sunday", "0 0 * * 0", "", "2020-01-01T00:00:00Z", []string{"2020-01-05T00:00:00Z"}},
	{"sun-tue", "0 0 * * sun-tue", "", "2020-01-01T00:00:00Z", []string{"2020-01-05T00:00:00Z", "2020-01-06T00:00:00Z", "2020-01-07T00:00:00Z", "2020-01-12T00:00:00Z"}},
	{"every 3rd weekday from sunday", "1 1 * * */3", "", "2020-01-01T00:00:00Z", []string{"2020-01-01T01:01:00Z", "2020-01-04T01:01:00Z", "2020-01-05T01:01:00Z", "2020-01-08T01:01:00Z"}},
	{"weekday range step 1-7/3", "0 0 * * 1-7/3", "", "2020-01-01T00:00:00Z", []string{"2020-01-02T00:00:00Z", "2020-01-05T00:00:00Z", "2020-01-06T00:00:00Z"}},
	{"whitespace and case", " 0\t12\u00a0*  jan\u2003mon ", "", "2020-01-01T00:00:00Z", []string{"2020-01-06T12:00:00Z", "2020-01-13T12:00:00Z"}},
	{"python-uppercased long s", "0 0 * * ſun", "", "2020-01-01T00:00:00Z", []string{"2020-01-05T00:00:00Z"}},

	// Month ends and leap days.
	{"31st skips short months", "0 0 31 * *", "", "2020-01-31T12:00:00Z", []string{"2020-03-31T00:00:00Z", "2020-05-31T00:00:00Z", "2020-07-31T00:00:00Z", "2020-08-31T00:00:00Z", "2020-10-31T00:00:00Z"}},
	{"30th skips february", "0 0 30 * *", "", "2020-01-30T12:00:00Z", []string{"2020-03-30T00:00:00Z", "2020-04-30T00:00:00Z"}},
	{"31st in april or may", "0 0 31 4,5 *", "", "2020-01-01T00:00:00Z", []string{"2020-05-31T00:00:00Z", "2021-05-31T00:00:00Z"}},
	{"leap day", "0 0 29 2 *", "", "2021-01-01T00:00:00Z", []string{"2024-02-29T00:00:00Z", "2028-02-29T00:00:00Z"}},
	{"leap day skips 2100", "0 0 29 2 *", "", "2096-03-01T00:00:00Z", []string{"2104-02-29T00:00:00Z"}},
	{"year end rollover", "59 23 31 12 *", "", "2020-06-01T00:00:00Z", []string{"2020-12-31T23:59:00Z", "2021-12-31T23:59:00Z"}},

	// L, LW, <d>L, <d>#<n>.
	{"L", "0 0 L * *", "", "2020-01-01T00:00:00Z", []string{"2020-01-31T00:00:00Z", "2020-02-29T00:00:00Z", "2020-03-31T00:00:00Z", "2020-04-30T00:00:00Z"}},
	{"L in february", "0 0 L 2 *", "", "2021-01-01T00:00:00Z", []string{"2021-02-28T00:00:00Z", "2022-02-28T00:00:00Z", "2023-02-28T00:00:00Z", "2024-02-29T00:00:00Z"}},
	{"L/2 is L", "0 0 L/2 * *", "", "2020-01-01T00:00:00Z", []string{"2020-01-31T00:00:00Z", "2020-02-29T00:00:00Z"}},
	{"lowercase l", "1 1 l * *", "", "2020-01-01T00:00:00Z", []string{"2020-01-31T01:01:00Z"}},
	{"L in list", "0 0 L,15 * *", "", "2020-01-01T00:00:00Z", []string{"2020-01-15T00:00:00Z", "2020-01-31T00:00:00Z", "2020-02-15T00:00:00Z", "2020-02-29T00:00:00Z"}},
	{"LW (cronsim)", "1 1 LW 5 *", "", "2020-01-01T00:00:00Z", []string{"2020-05-29T01:01:00Z"}},
	{"LW around weekends", "0 0 LW * *", "", "2023-09-01T00:00:00Z", []string{"2023-09-29T00:00:00Z", "2023-10-31T00:00:00Z", "2023-11-30T00:00:00Z", "2023-12-29T00:00:00Z"}},
	{"LW/3 is LW and lowercase", "0 0 lw/3 * *", "", "2023-09-01T00:00:00Z", []string{"2023-09-29T00:00:00Z"}},
	{"LW in list", "0 0 1,LW * *", "", "2023-09-02T00:00:00Z", []string{"2023-09-29T00:00:00Z", "2023-10-01T00:00:00Z"}},
	{"last friday", "1 1 * * 5L", "", "2020-01-01T00:00:00Z", []string{"2020-01-31T01:01:00Z", "2020-02-28T01:01:00Z", "2020-03-27T01:01:00Z", "2020-04-24T01:01:00Z", "2020-05-29T01:01:00Z", "2020-06-26T01:01:00Z", "2020-07-31T01:01:00Z", "2020-08-28T01:01:00Z", "2020-09-25T01:01:00Z", "2020-10-30T01:01:00Z", "2020-11-27T01:01:00Z", "2020-12-25T01:01:00Z"}},
	{"last sunday as 0L", "1 1 * * 0L", "", "2020-01-01T00:00:00Z", []string{"2020-01-26T01:01:00Z"}},
	{"last sunday as 7L", "1 1 * * 7L", "", "2020-01-01T00:00:00Z", []string{"2020-01-26T01:01:00Z"}},
	{"last weekday in list", "0 0 * * 1L,3", "", "2020-01-20T00:00:00Z", []string{"2020-01-22T00:00:00Z", "2020-01-27T00:00:00Z", "2020-01-29T00:00:00Z"}},
	{"second monday numeric", "1 1 * * 1#2", "", "2020-01-01T00:00:00Z", []string{"2020-01-13T01:01:00Z", "2020-02-10T01:01:00Z"}},
	{"second monday by name", "1 1 * * MON#2", "", "2020-01-01T00:00:00Z", []string{"2020-01-13T01:01:00Z"}},
	{"first sunday", "0 0 * * SUN#1", "", "2020-01-01T00:00:00Z", []string{"2020-01-05T00:00:00Z", "2020-02-02T00:00:00Z"}},
	{"fifth monday only in some months", "0 0 * * 1#5", "", "2020-01-01T00:00:00Z", []string{"2020-03-30T00:00:00Z", "2020-06-29T00:00:00Z", "2020-08-31T00:00:00Z", "2020-11-30T00:00:00Z"}},
	{"40-year gap (fifth sunday of february)", "0 0 */28 2 0#5", "", "2088-02-29T00:00:00Z", []string{"2128-02-29T00:00:00Z"}},
	{"fifth monday of february", "0 0 * 2 MON#5", "", "2020-01-01T00:00:00Z", []string{"2044-02-29T00:00:00Z", "2072-02-29T00:00:00Z"}},
	{"nth mixed with plain weekdays", "0 0 * * 2,3#1", "", "2020-01-01T00:00:00Z", []string{"2020-01-07T00:00:00Z", "2020-01-14T00:00:00Z", "2020-01-21T00:00:00Z", "2020-01-28T00:00:00Z", "2020-02-04T00:00:00Z", "2020-02-05T00:00:00Z"}},

	// Day-of-month / day-of-week: AND when either field starts with "*", else OR.
	{"OR: 13th or friday", "0 0 13 * FRI", "", "2020-04-01T00:00:00Z", []string{"2020-04-03T00:00:00Z", "2020-04-10T00:00:00Z", "2020-04-13T00:00:00Z", "2020-04-17T00:00:00Z"}},
	{"AND: */1 and friday", "0 0 */1 * FRI", "", "2020-04-01T00:00:00Z", []string{"2020-04-03T00:00:00Z", "2020-04-10T00:00:00Z", "2020-04-17T00:00:00Z"}},
	{"AND: odd days and friday", "0 0 */2 * FRI", "", "2020-01-04T00:00:00Z", []string{"2020-01-17T00:00:00Z", "2020-01-31T00:00:00Z"}},
	{"AND: first sunday via */7", "1 1 1-7 * */7", "", "2020-01-01T00:00:00Z", []string{"2020-01-05T01:01:00Z", "2020-02-02T01:01:00Z", "2020-03-01T01:01:00Z", "2020-04-05T01:01:00Z"}},
	{"AND: first monday via */100", "1 1 */100,1-7 * MON", "", "2020-01-01T00:00:00Z", []string{"2020-01-06T01:01:00Z", "2020-02-03T01:01:00Z", "2020-03-02T01:01:00Z", "2020-04-06T01:01:00Z"}},
	{"OR: star not first", "0 0 5,* * MON", "", "2020-01-01T00:00:00Z", []string{"2020-01-02T00:00:00Z", "2020-01-03T00:00:00Z"}},
	{"OR: L or last friday", "0 0 L * 5L", "", "2020-01-01T00:00:00Z", []string{"2020-01-31T00:00:00Z", "2020-02-28T00:00:00Z", "2020-02-29T00:00:00Z"}},

	// Fixed zones behave like UTC shifted.
	{"brisbane (hc test)", "0 10 * * *", "Australia/Brisbane", "2000-01-01T00:00:00Z", []string{"2000-01-02T00:00:00Z", "2000-01-03T00:00:00Z"}},
	{"etc zone", "0 10 * * *", "Etc/GMT+5", "2020-01-01T00:00:00Z", []string{"2020-01-01T15:00:00Z"}},
	{"named UTC", "0 10 * * *", "UTC", "2020-01-01T00:00:00Z", []string{"2020-01-01T10:00:00Z"}},

	// Europe/Riga: reference §9.4 vectors (2023).
	{"riga spring gap, fixed time", "30 3 * * *", "Europe/Riga", "2023-03-25T23:00:00Z", []string{"2023-03-26T01:00:00Z", "2023-03-27T00:30:00Z"}},
	{"riga fall back, fixed time fires once", "30 3 * * *", "Europe/Riga", "2023-10-28T22:00:00Z", []string{"2023-10-29T00:30:00Z", "2023-10-30T01:30:00Z"}},
	{"riga fall back, star job fires twice", "30 * * * *", "Europe/Riga", "2023-10-29T00:00:00Z", []string{"2023-10-29T00:30:00Z", "2023-10-29T01:30:00Z", "2023-10-29T02:30:00Z"}},
	{"riga grace vector (hc test)", "15 * * * *", "Europe/Riga", "2023-10-29T00:55:00Z", []string{"2023-10-29T01:15:00Z"}},
	{"riga after second 03:15, fixed time", "30 3 * * *", "Europe/Riga", "2023-10-29T01:15:00Z", []string{"2023-10-30T01:30:00Z"}},
	{"riga after second 03:15, minute range", "0-59 3 * * *", "Europe/Riga", "2023-10-29T01:15:00Z", []string{"2023-10-30T01:00:00Z", "2023-10-30T01:01:00Z"}},
	{"riga fall back midnight and 3", "0 0,3 * * *", "Europe/Riga", "2023-10-28T23:00:00Z", []string{"2023-10-29T00:00:00Z", "2023-10-29T22:00:00Z", "2023-10-30T01:00:00Z"}},

	// Europe/Riga 2021: cronsim's DST test vectors.
	{"cronsim 001 mar", "0 * * * *", "Europe/Riga", "2021-03-28T01:30:00+02:00", []string{"2021-03-28T02:00:00+02:00", "2021-03-28T04:00:00+03:00"}},
	{"cronsim 001 oct", "0 * * * *", "Europe/Riga", "2021-10-31T01:30:00+03:00", []string{"2021-10-31T02:00:00+03:00", "2021-10-31T03:00:00+03:00", "2021-10-31T03:00:00+02:00", "2021-10-31T04:00:00+02:00"}},
	{"cronsim 002 mar", "*/30 * * * *", "Europe/Riga", "2021-03-28T02:10:00+02:00", []string{"2021-03-28T02:30:00+02:00", "2021-03-28T04:00:00+03:00", "2021-03-28T04:30:00+03:00"}},
	{"cronsim 002 oct", "*/30 * * * *", "Europe/Riga", "2021-10-31T02:10:00+03:00", []string{"2021-10-31T02:30:00+03:00", "2021-10-31T03:00:00+03:00", "2021-10-31T03:30:00+03:00", "2021-10-31T03:00:00+02:00", "2021-10-31T03:30:00+02:00", "2021-10-31T04:00:00+02:00"}},
	{"cronsim 003 oct", "*/15 * * * *", "Europe/Riga", "2021-10-31T02:40:00+03:00", []string{"2021-10-31T02:45:00+03:00", "2021-10-31T03:00:00+03:00", "2021-10-31T03:15:00+03:00", "2021-10-31T03:30:00+03:00", "2021-10-31T03:45:00+03:00", "2021-10-31T03:00:00+02:00", "2021-10-31T03:15:00+02:00", "2021-10-31T03:30:00+02:00", "2021-10-31T03:45:00+02:00", "2021-10-31T04:00:00+02:00"}},
	{"cronsim 004 mar", "0 */2 * * *", "Europe/Riga", "2021-03-28T01:30:00+02:00", []string{"2021-03-28T02:00:00+02:00", "2021-03-28T04:00:00+03:00", "2021-03-28T06:00:00+03:00"}},
	{"cronsim 004 oct", "0 */2 * * *", "Europe/Riga", "2021-10-31T01:30:00+03:00", []string{"2021-10-31T02:00:00+03:00", "2021-10-31T04:00:00+02:00", "2021-10-31T06:00:00+02:00"}},
	{"cronsim 005 oct", "30 */2 * * *", "Europe/Riga", "2021-10-31T01:30:00+03:00", []string{"2021-10-31T02:30:00+03:00", "2021-10-31T04:30:00+02:00"}},
	{"cronsim 006 oct", "0 */3 * * *", "Europe/Riga", "2021-10-31T01:30:00+03:00", []string{"2021-10-31T03:00:00+03:00", "2021-10-31T03:00:00+02:00", "2021-10-31T06:00:00+02:00"}},
	{"cronsim 008 mar", "0 1,2,3,4,5 * * *", "Europe/Riga", "2021-03-28T01:30:00+02:00", []string{"2021-03-28T02:00:00+02:00", "2021-03-28T04:00:00+03:00", "2021-03-28T05:00:00+03:00"}},
	{"cronsim 008 oct", "0 1,2,3,4,5 * * *", "Europe/Riga", "2021-10-31T01:30:00+03:00", []string{"2021-10-31T02:00:00+03:00", "2021-10-31T03:00:00+03:00", "2021-10-31T04:00:00+02:00"}},
	{"cronsim 009 mar", "30 1,2,3,4,5 * * *", "Europe/Riga", "2021-03-28T01:30:00+02:00", []string{"2021-03-28T02:30:00+02:00", "2021-03-28T04:00:00+03:00", "2021-03-28T04:30:00+03:00"}},
	{"cronsim 009 oct", "30 1,2,3,4,5 * * *", "Europe/Riga", "2021-10-31T01:30:00+03:00", []string{"2021-10-31T02:30:00+03:00", "2021-10-31T03:30:00+03:00", "2021-10-31T04:30:00+02:00"}},
	{"cronsim 011 mar", "0 3 * * *", "Europe/Riga", "2021-03-27T01:30:00+02:00", []string{"2021-03-27T03:00:00+02:00", "2021-03-28T04:00:00+03:00", "2021-03-29T03:00:00+03:00"}},
	{"cronsim 011 oct", "0 3 * * *", "Europe/Riga", "2021-10-31T01:30:00+03:00", []string{"2021-10-31T03:00:00+03:00", "2021-11-01T03:00:00+02:00"}},
	{"cronsim 012 oct", "0 4 * * *", "Europe/Riga", "2021-10-30T01:30:00+03:00", []string{"2021-10-30T04:00:00+03:00", "2021-10-31T04:00:00+02:00", "2021-11-01T04:00:00+02:00"}},
	{"cronsim 015 mar", "0 1,3,5,7,9,11,13,15,17,19,21,23 * * *", "Europe/Riga", "2021-03-28T00:30:00+02:00", []string{"2021-03-28T01:00:00+02:00", "2021-03-28T04:00:00+03:00", "2021-03-28T05:00:00+03:00"}},
	{"cronsim 016 oct", "0 1-5 * * *", "Europe/Riga", "2021-10-31T01:30:00+03:00", []string{"2021-10-31T02:00:00+03:00", "2021-10-31T03:00:00+03:00", "2021-10-31T04:00:00+02:00"}},
	{"cronsim 3:15 mar", "15 3 * * *", "Europe/Riga", "2021-03-27T00:00:00+02:00", []string{"2021-03-27T03:15:00+02:00", "2021-03-28T04:00:00+03:00", "2021-03-29T03:15:00+03:00"}},
	{"cronsim 3:15 oct", "15 3 * * *", "Europe/Riga", "2021-10-30T00:00:00+03:00", []string{"2021-10-30T03:15:00+03:00", "2021-10-31T03:15:00+03:00", "2021-11-01T03:15:00+02:00"}},
	{"cronsim every minute mar", "* * * * *", "Europe/Riga", "2021-03-28T02:58:00+02:00", []string{"2021-03-28T02:59:00+02:00", "2021-03-28T04:00:00+03:00"}},
	{"cronsim every minute oct", "* * * * *", "Europe/Riga", "2021-10-31T03:58:00+03:00", []string{"2021-10-31T03:59:00+03:00", "2021-10-31T03:00:00+02:00", "2021-10-31T03:01:00+02:00"}},
	{"cronsim 1-6 mar", "* 1-6 * * *", "Europe/Riga", "2021-03-28T02:58:00+02:00", []string{"2021-03-28T02:59:00+02:00", "2021-03-28T04:00:00+03:00"}},
	{"cronsim 1-6 oct", "* 1-6 * * *", "Europe/Riga", "2021-10-31T03:58:00+03:00", []string{"2021-10-31T03:59:00+03:00", "2021-10-31T03:00:00+02:00", "2021-10-31T03:01:00+02:00"}},

	// America/New_York (2023): both directions, both kinds of job.
	{"new york spring gap, fixed time (reference)", "30 2 * * *", "America/New_York", "2023-03-12T05:00:00Z", []string{"2023-03-12T07:00:00Z", "2023-03-13T06:30:00Z"}},
	{"new york spring, 02:00 job", "0 2 * * *", "America/New_York", "2023-03-11T12:00:00Z", []string{"2023-03-12T07:00:00Z", "2023-03-13T06:00:00Z"}},
	{"new york spring, star job skips 02:xx", "*/30 * * * *", "America/New_York", "2023-03-12T06:10:00Z", []string{"2023-03-12T06:30:00Z", "2023-03-12T07:00:00Z", "2023-03-12T07:30:00Z"}},
	{"new york fall back, fixed time fires once", "30 1 * * *", "America/New_York", "2023-11-05T04:00:00Z", []string{"2023-11-05T05:30:00Z", "2023-11-06T06:30:00Z"}},
	{"new york fall back, 01:00 job", "0 1 * * *", "America/New_York", "2023-11-04T12:00:00Z", []string{"2023-11-05T05:00:00Z", "2023-11-06T06:00:00Z"}},
	{"new york fall back, star job fires twice", "30 * * * *", "America/New_York", "2023-11-05T05:00:00Z", []string{"2023-11-05T05:30:00Z", "2023-11-05T06:30:00Z", "2023-11-05T07:30:00Z"}},
	{"new york fall back, every minute", "* * * * *", "America/New_York", "2023-11-05T05:58:00Z", []string{"2023-11-05T05:59:00Z", "2023-11-05T06:00:00Z", "2023-11-05T06:01:00Z"}},

	// Reference quirks reproduced (checked against cronsim).
	{"santiago: day starting in a gap fires at its end", "*/30 0 3 9 *", "America/Santiago", "2023-09-01T12:00:00Z", []string{"2023-09-03T04:00:00Z", "2024-09-03T04:00:00Z", "2024-09-03T04:30:00Z"}},
	{"cairo: midnight gap, fixed time", "0 0 * * *", "Africa/Cairo", "2023-04-27T12:00:00Z", []string{"2023-04-27T22:00:00Z", "2023-04-28T21:00:00Z"}},
	{"cairo: midnight gap, star job", "* 0 * * *", "Africa/Cairo", "2023-04-27T21:58:00Z", []string{"2023-04-28T21:00:00Z", "2023-04-28T21:01:00Z"}},
	{"lord howe: half-hour fall back", "15 */2 * * *", "Australia/Lord_Howe", "2023-04-01T12:00:00Z", []string{"2023-04-01T13:15:00Z", "2023-04-01T17:45:00Z", "2023-04-01T19:45:00Z"}},
	{"lord howe: half-hour spring forward", "0 */2 * * *", "Australia/Lord_Howe", "2023-10-01T12:00:00Z", []string{"2023-10-01T13:00:00Z", "2023-10-01T15:00:00Z", "2023-10-01T17:00:00Z"}},
	// Where the reference never returns (it loops forever), Next still answers:
	// Pacific/Chatham falls back from 03:45 to 02:45; America/St_Johns fell back
	// at 00:01 until 2011.
	{"chatham: hour steps would cycle", "48 */3 * * *", "Pacific/Chatham", "1986-03-01T11:06:43Z", []string{"1986-03-01T15:03:00Z", "1986-03-01T18:03:00Z"}},
	{"chatham: cycle on a sunday", "48-49 */3 * * 0", "Pacific/Chatham", "2038-04-03T13:15:37Z", []string{"2038-04-03T15:03:00Z", "2038-04-03T15:04:00Z", "2038-04-03T18:03:00Z"}},
	{"hong kong 1970: hour steps would cycle", "48 */3 * * *", "Asia/Hong_Kong", "1970-10-17T15:48:00Z", []string{"1970-10-17T19:48:00Z"}},
	{"st johns: reference keeps returning t", "* 0 * * *", "America/St_Johns", "1987-10-25T02:30:00Z", []string{"1987-10-25T03:30:00Z", "1987-10-25T03:31:00Z"}},
	{"st johns: fall back just after midnight", "18 *,11 * * 7", "America/St_Johns", "2008-11-01T23:44:00Z", []string{"2008-11-02T03:48:00Z", "2008-11-02T04:48:00Z"}},
	{"st johns: midnight repeated", "0 * * * 0", "America/St_Johns", "2008-11-01T23:44:00Z", []string{"2008-11-02T02:30:00Z", "2008-11-02T03:30:00Z", "2008-11-02T04:30:00Z"}},

	// Far future: zone rules from the TZ footer, incl. Go issue 81583 (leap years).
	{"new york 2041", "46 * 1 7 *", "America/New_York", "2040-08-16T11:51:11Z", []string{"2041-07-01T04:46:00Z"}},
	{"warsaw leap year end", "0 * * * *", "Europe/Warsaw", "2040-12-31T12:30:00Z", []string{"2040-12-31T13:00:00Z", "2040-12-31T14:00:00Z"}},
	{"warsaw leap year end, fixed", "0 0 1 1 *", "Europe/Warsaw", "2040-06-01T00:00:00Z", []string{"2040-12-31T23:00:00Z", "2041-12-31T23:00:00Z"}},
}

func loadLocation(t testing.TB, name string) *time.Location {
	t.Helper()
	if name == "" {
		return nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

func parseTime(t testing.TB, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatalf("bad time %q: %v", s, err)
	}
	return v
}

func TestNext(t *testing.T) {
	for _, c := range nextCases {
		t.Run(c.name, func(t *testing.T) {
			e, err := Parse(c.expr)
			if err != nil {
				t.Fatalf("Parse(%q): %v", c.expr, err)
			}
			loc := loadLocation(t, c.tz)
			at := parseTime(t, c.after)
			for i, w := range c.want {
				want := parseTime(t, w)
				got, ok := e.Next(at, loc)
				if !ok {
					t.Fatalf("Next #%d after %s: no occurrence, want %s", i+1, at.Format(time.RFC3339), w)
				}
				if !got.Equal(want) {
					t.Fatalf("Next #%d after %s = %s, want %s", i+1, at.UTC().Format(time.RFC3339), got.UTC().Format(time.RFC3339), want.UTC().Format(time.RFC3339))
				}
				at = got
			}
		})
	}
}

func TestNextLocation(t *testing.T) {
	e, err := Parse("30 3 * * *")
	if err != nil {
		t.Fatal(err)
	}
	riga := loadLocation(t, "Europe/Riga")
	got, _ := e.Next(parseTime(t, "2023-01-01T00:00:00Z"), riga)
	if got.Location() != riga || got.Hour() != 3 || got.Minute() != 30 {
		t.Errorf("got %v in %v, want 03:30 in Europe/Riga", got, got.Location())
	}
	got, _ = e.Next(parseTime(t, "2023-01-01T00:00:00Z"), nil)
	if got.Location() != time.UTC {
		t.Errorf("nil location: got %v, want UTC", got.Location())
	}
	// The input's own location does not matter, only the instant.
	in := parseTime(t, "2023-01-01T00:00:00Z").In(loadLocation(t, "Asia/Tokyo"))
	if got2, _ := e.Next(in, nil); !got2.Equal(got) {
		t.Errorf("input location changed the result: %v vs %v", got2, got)
	}
}

func TestNextNoOccurrence(t *testing.T) {
	// Parse rejects expressions without an occurrence; compile does not.
	e, err := compile("* * */20 * 1L")
	if err != nil {
		t.Fatal(err)
	}
	for _, tz := range []string{"", "Europe/Riga"} {
		if got, ok := e.Next(parseTime(t, "2020-01-01T00:00:00Z"), loadLocation(t, tz)); ok {
			t.Errorf("tz %q: got %v, want no occurrence", tz, got)
		}
	}
	// Far outside the supported range.
	e, _ = Parse("* * * * *")
	if got, ok := e.Next(time.Date(200000, 1, 1, 0, 0, 0, 0, time.UTC), nil); ok {
		t.Errorf("year 200000: got %v, want no occurrence", got)
	}
	// The zero time (year 1) still works.
	if got, ok := e.Next(time.Time{}, nil); !ok || !got.Equal(time.Date(1, 1, 1, 0, 1, 0, 0, time.UTC)) {
		t.Errorf("zero time: got %v %v", got, ok)
	}
}

func TestParseAccepts(t *testing.T) {
	for _, expr := range []string{
		"* * * * *",
		"0 0 31 4,5 *",
		"0 0 29 2 *",
		"0 0 L,30 2 *",
		"0 0 L/2 * *",
		"0 0 LW,L * *",
		"0 0 L * *",
		"0 0 * * SUN#1",
		"0 0 * * 1#2",
		"0 0 * * MON#2",
		"0 0 * * 0#5",
		"0 0 * * 7#1",
		"0 0 * * 0L,7L",
		"0 0 * * 05L",
		"0 0 * JAN-MAR MON-FRI",
		"* * * * 0-7",
		"* * * * */7",
		"00 000 001 01 00",
		"59 23 31 12 7",
		"* * * * MON#001",
		"*/99999999999999999999 * * * *",
		"1/60 * * * *",
		"0 0 * ſep frı",
		"0 0 * * 1\x1c",
		"\n0 0 * * *\n",
	} {
		e, err := Parse(expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", expr, err)
			continue
		}
		if e.String() != expr {
			t.Errorf("String() = %q, want %q", e.String(), expr)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, c := range []struct{ expr, want string }{
		{"", "expected 5 fields, got 0"},
		{"* * * *", "expected 5 fields, got 4"},
		{"* * * * * *", "expected 5 fields, got 6"},
		{"0 0 0 1 1 * 2020", "expected 5 fields, got 7"},
		{"@daily", `macros such as "@daily" are not supported, expected 5 fields, got 1`},
		{"@hourly", `macros such as "@hourly" are not supported, expected 5 fields, got 1`},
		{"61 * * * *", "minute field: 61 is out of range 0-59"},
		{"60 * * * *", "minute field: 60 is out of range 0-59"},
		{"* 24 * * *", "hour field: 24 is out of range 0-23"},
		{"* * 0 * *", "day-of-month field: 0 is out of range 1-31"},
		{"* * 32 * *", "day-of-month field: 32 is out of range 1-31"},
		{"* * * 13 *", "month field: 13 is out of range 1-12"},
		{"* * * 0 *", "month field: 0 is out of range 1-12"},
		{"* * * * 8", "day-of-week field: 8 is out of range 0-7"},
		{"-1 * * * *", `minute field: "-1": negative values are not allowed`},
		{"1-60 * * * *", "minute field: 60 is out of range 0-59"},
		{"5-1 * * * *", `minute field: range "5-1" is reversed (5 > 1)`},
		{"* * 5-1 * *", `day-of-month field: range "5-1" is reversed (5 > 1)`},
		{"* * * * SAT-SUN", `day-of-week field: range "SAT-SUN" is reversed (6 > 0)`},
		{"*/0 * * * *", `minute field: "*/0": step must not be 0`},
		{"1-5/0 * * * *", `minute field: "1-5/0": step must not be 0`},
		{"*/ * * * *", `minute field: "*/": missing step after /`},
		{"/2 * * * *", `minute field: "/2": missing value before /`},
		{"1//2 * * * *", `minute field: "1//2": step "/2" is not a number`},
		{"*/x * * * *", `minute field: "*/x": step "x" is not a number`},
		{"1,,2 * * * *", `minute field: empty list element in "1,,2"`},
		{"1, * * * *", `minute field: empty list element in "1,"`},
		{"1-2-3 * * * *", `minute field: "2-3" in "1-2-3" is not a number`},
		{"1-1_0 * * * *", `minute field: "1_0" in "1-1_0" is not a number`},
		{"** * * * *", `minute field: "**" is not a number`},
		{"¹ * * * *", `minute field: "¹" is not a number`},
		{"0x1 * * * *", `minute field: "0x1" is not a number`},
		{"MON * * * *", `minute field: "MON" is not a number`},
		{"0 0 ? * *", `day-of-month field: "?" is not supported (use *)`},
		{"0 0 * * ?", `day-of-week field: "?" is not supported (use *)`},
		{"H * * * *", `minute field: "H": H (hashed values) is not supported`},
		{"H/5 * * * *", `minute field: "H": H (hashed values) is not supported`},
		{"0 0 1W * *", `day-of-month field: "1W": W is only supported as LW (last weekday of the month)`},
		{"0 0 W * *", `day-of-month field: "W": W is only supported as LW (last weekday of the month)`},
		{"0 0 LWX * *", `day-of-month field: "LWX": W is only supported as LW (last weekday of the month)`},
		{"0 0 LL * *", `day-of-month field: "LL": L is only supported alone (last day of the month)`},
		{"0 0 1-L * *", `day-of-month field: "L" in "1-L": L and LW cannot be combined with ranges`},
		{"0 0 L-2 * *", `day-of-month field: "L" in "L-2": L and LW cannot be combined with ranges`},
		{"0 0 L * *x", `day-of-week field: "*x" is not a number`},
		{"0 0 * * FRIL", `day-of-week field: "FRIL" is not valid: L is only supported as <day number>L, e.g. 5L for the last Friday`},
		{"0 0 * * L", `day-of-week field: "L" is not valid: L is only supported as <day number>L, e.g. 5L for the last Friday`},
		{"0 0 * * 5L-6", `day-of-week field: "5L-6" is not valid: L is only supported as <day number>L, e.g. 5L for the last Friday`},
		{"0 0 * * 5L/3", `day-of-week field: "5L/3" is not valid: L is only supported as <day number>L, e.g. 5L for the last Friday`},
		{"0 0 * * 8L", "day-of-week field: 8 is out of range 0-7"},
		{"0 0 * * 1#0", `day-of-week field: "1#0": 0 after # is out of range 1-5`},
		{"0 0 * * 1#6", `day-of-week field: "1#6": 6 after # is out of range 1-5`},
		{"0 0 * * 1#", `day-of-week field: "1#": "" after # is not a number`},
		{"0 0 * * #2", `day-of-week field: "#2" has an empty value`},
		{"0 0 * * 1##1", `day-of-week field: "1##1": "#1" after # is not a number`},
		{"0 0 * * MONDAY", `day-of-week field: "MONDAY" is not a day number or name (SUN-SAT)`},
		{"0 0 * * 1W", `day-of-week field: "1W": W is not supported in the day-of-week field`},
		{"0 0 * JANUARY *", `month field: "JANUARY" is not a month number or name (JAN-DEC)`},
		{"0 0 * JAN-FOO *", `month field: "FOO" in "JAN-FOO" is not a month number or name (JAN-DEC)`},
		{"0 0 30 2 *", "day-of-month 30 never occurs in month 2"},
		{"0 0 31 2 *", "day-of-month 31 never occurs in month 2"},
		{"0 0 31 4,6 *", "day-of-month 31 never occurs in months 4,6"},
		{"0 0 30 2 MON", "day-of-month 30 never occurs in month 2"},
		{"0 0 30,31 FEB *", "day-of-month 30 never occurs in month 2"},
		{"* * */20 * 1L", "no occurrence within 50 years"},
		{"1 1 */100 * MON#4", "no occurrence within 50 years"},
	} {
		e, err := Parse(c.expr)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want error %q", c.expr, e, c.want)
			continue
		}
		if e != nil {
			t.Errorf("Parse(%q) returned an Expression with an error", c.expr)
		}
		if err.Error() != c.want {
			t.Errorf("Parse(%q) error = %q, want %q", c.expr, err.Error(), c.want)
		}
		if msg := err.Error(); msg != strings.ToLower(msg[:1])+msg[1:] || strings.HasPrefix(msg, "invalid cron expression") {
			t.Errorf("Parse(%q) error %q must start lowercase and carry no prefix", c.expr, msg)
		}
	}
}

// TestDayMaskMatchesDefinition checks the per-month bitmask against a direct,
// day-by-day reading of the day-matching rules for many expressions and months.
func TestDayMaskMatchesDefinition(t *testing.T) {
	exprs := []string{
		"0 0 * * *", "0 0 L * *", "0 0 LW * *", "0 0 L,15 * MON", "0 0 * * 5L", "0 0 * * 0L,3#2",
		"0 0 1-7 * */7", "0 0 13 * FRI", "0 0 */2 * 1#5", "0 0 LW * 6L", "0 0 31 * 7", "0 0 * * 1,3,5",
	}
	for _, expr := range exprs {
		e, err := Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		w := walker{e: e}
		for y := int64(1999); y <= 2030; y++ {
			for m := 1; m <= 12; m++ {
				mask := w.dayMask(y, m)
				n := daysIn(y, m)
				for d := 1; d <= 31; d++ {
					want := d <= n && matchDayDirect(e, y, m, d)
					if got := mask>>d&1 != 0; got != want {
						t.Fatalf("%q %d-%02d-%02d: mask says %v, definition says %v", expr, y, m, d, got, want)
					}
				}
			}
		}
	}
}

func matchDayDirect(e *Expression, y int64, m, d int) bool {
	date := time.Date(int(y), time.Month(m), d, 0, 0, 0, 0, time.UTC)
	last := time.Date(int(y), time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day()
	lastWeekday := last
	switch time.Date(int(y), time.Month(m), last, 0, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday:
		lastWeekday = last - 1
	case time.Sunday:
		lastWeekday = last - 2
	}
	dom := e.dom>>d&1 != 0 || (e.domLast && d == last) || (e.domLastWeekday && d == lastWeekday)
	wd := int(date.Weekday())
	dow := e.dow>>wd&1 != 0 ||
		(e.dowLast>>wd&1 != 0 && d+7 > last) ||
		e.dowNth[wd]>>((d+6)/7)&1 != 0
	if e.dayAnd {
		return dom && dow
	}
	return dom || dow
}

func TestCivil(t *testing.T) {
	for _, y := range []int{-400, -1, 0, 1, 1600, 1899, 1900, 1970, 2000, 2024, 2100, 9999, 10000} {
		for _, m := range []int{1, 2, 3, 12} {
			for _, d := range []int{1, 28, 31} {
				want := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
				days := daysFromCivil(int64(y), m, d)
				if days*secondsPerDay != want.Unix() && d <= daysIn(int64(y), m) {
					t.Errorf("daysFromCivil(%d-%d-%d) = %d, want %d", y, m, d, days, want.Unix()/secondsPerDay)
				}
				gy, gm, gd := civil(want.Unix() / secondsPerDay)
				if int(gy) != want.Year() || gm != int(want.Month()) || gd != want.Day() {
					t.Errorf("civil(%v) = %d-%d-%d", want, gy, gm, gd)
				}
				if weekday(floorDiv(want.Unix(), secondsPerDay)) != int(want.Weekday()) {
					t.Errorf("weekday(%v) wrong", want)
				}
			}
		}
	}
}
