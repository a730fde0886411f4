// Package report writes a project's periodic report (each check's uptime,
// runs, failures, missed runs, slowest runs and trend over a week or a
// month) and sends it, once per period, to the email Channels that ask for
// one.
package report

import (
	"fmt"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Period is the span a report covers, [From, To) in UTC, and its name,
// unique per Channel: "2026-W47" (ISO week) or "2026-11".
type Period struct {
	From, To time.Time
	ID       string
}

// Last is the newest period of the kind that has ended by now: the week
// from Monday 00:00 UTC, or the calendar month in UTC. ok is false for a
// kind that is not a report period.
func Last(kind v1.ReportPeriod, now time.Time) (p Period, ok bool) {
	y, m, d := now.UTC().Date()
	switch kind {
	case v1.ReportWeekly:
		monday := d - (int(now.UTC().Weekday())+6)%7
		p.To = time.Date(y, m, monday, 0, 0, 0, 0, time.UTC)
		p.From = p.To.AddDate(0, 0, -7)
		wy, w := p.From.ISOWeek()
		p.ID = fmt.Sprintf("%d-W%02d", wy, w)
	case v1.ReportMonthly:
		p.To = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		p.From = p.To.AddDate(0, -1, 0)
		p.ID = p.From.Format("2006-01")
	default:
		return Period{}, false
	}
	return p, true
}

// Name is the period in words: "the week of 16 November 2026" or
// "November 2026".
func (p Period) Name() string {
	if p.To.Sub(p.From) == 7*24*time.Hour {
		return "the week of " + p.From.Format("2 January 2006")
	}
	return p.From.Format("January 2006")
}
