// Package schedule dispatches a check's schedule to the dialect that parses it
// and validates and loads its time zone, as the reference service does.
//
// A schedule is a five-field cron expression (package cron) when, trimmed, it
// is a single line of exactly five whitespace-separated fields, and an
// OnCalendar expression (package oncalendar) otherwise (KindOf). Parse
// validates the expression and the time zone and returns a Schedule bound to
// the zone; the monitor asks it for the instant the next ping is due.
//
// A time zone is valid when it is one of the 483 names the reference accepts
// (case-sensitive), after one of 113 legacy aliases has been rewritten to its
// canonical name (CanonicalTimezone). The time zone database is embedded
// (time/tzdata), so zones load in a distroless image without /usr/share/zoneinfo.
package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigil-operator/vigil/internal/schedule/pytext"
)

// Schedule yields the instants at which pings are expected.
type Schedule interface {
	// Next returns the first expected instant strictly after t (t truncated to
	// whole seconds), or ok=false if there is none.
	Next(t time.Time) (next time.Time, ok bool)
}

// Kind is the dialect of a schedule expression.
type Kind string

const (
	// KindCron is a five-field cron expression (package cron).
	KindCron Kind = "cron"
	// KindOnCalendar is a systemd OnCalendar expression, possibly several
	// lines (package oncalendar).
	KindOnCalendar Kind = "oncalendar"
)

// KindOf returns the dialect of expr, as the reference decides it (reference
// 4.4 step 3): cron when expr, trimmed of whitespace, contains no newline and
// has exactly five whitespace-separated fields; OnCalendar otherwise (so a
// six-field cron expression is an invalid OnCalendar expression). Whitespace
// is what Python's str.split() splits on.
func KindOf(expr string) Kind {
	if strings.Contains(strings.TrimFunc(expr, pytext.IsSpace), "\n") {
		return KindOnCalendar
	}
	if len(strings.FieldsFunc(expr, pytext.IsSpace)) != 5 {
		return KindOnCalendar
	}
	return KindCron
}

// ErrInvalidExpression matches (with errors.Is) every error about a schedule
// expression that does not parse. The API reports it as "schedule is not a
// valid cron or OnCalendar expression".
var ErrInvalidExpression = errors.New("invalid schedule expression")

// ErrInvalidTimezone matches (with errors.Is) every error about an unknown
// time-zone name. The API reports it as "tz is not a valid timezone".
var ErrInvalidTimezone = errors.New("invalid timezone")

// ExpressionError is a schedule expression that its dialect rejects. Its
// message is "invalid cron expression: <detail>" or "invalid OnCalendar
// expression: <detail>"; it unwraps to the dialect's error and matches
// ErrInvalidExpression.
type ExpressionError struct {
	// Kind is the dialect that rejected the expression.
	Kind Kind
	// Expr is the expression as given.
	Expr string
	// Err is the dialect's error.
	Err error
}

// Error implements error.
func (e *ExpressionError) Error() string {
	if e.Kind == KindCron {
		return "invalid cron expression: " + e.Err.Error()
	}
	return "invalid OnCalendar expression: " + e.Err.Error()
}

// Unwrap returns the dialect's error.
func (e *ExpressionError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidExpression.
func (e *ExpressionError) Is(target error) bool { return target == ErrInvalidExpression }

// TimezoneError is a time-zone name that is neither one of the accepted names
// nor a legacy alias of one. Its message is `invalid timezone: "<name>"`; it
// matches ErrInvalidTimezone.
type TimezoneError struct {
	// Name is the name as given.
	Name string
	// Err is the cause when the name is listed but its zone failed to load
	// (nil when the name is not listed).
	Err error
}

// Error implements error.
func (e *TimezoneError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("invalid timezone: %q: %v", e.Name, e.Err)
	}
	return fmt.Sprintf("invalid timezone: %q", e.Name)
}

// Unwrap returns the load error, if any.
func (e *TimezoneError) Unwrap() error { return e.Err }

// Is reports whether target is ErrInvalidTimezone.
func (e *TimezoneError) Is(target error) bool { return target == ErrInvalidTimezone }
