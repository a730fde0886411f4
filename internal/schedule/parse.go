package schedule

import (
	"errors"
	"fmt"
	"time"

	"github.com/vigil-operator/vigil/internal/schedule/cron"
	"github.com/vigil-operator/vigil/internal/schedule/oncalendar"
)

// expression is what both dialects parse to.
type expression interface {
	Next(t time.Time, loc *time.Location) (time.Time, bool)
}

// validationStart is the instant after which the reference requires an
// expression to have an occurrence (2000-01-01 00:00 UTC).
var validationStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// errNoOccurrence is the detail for an expression that parses but never fires.
var errNoOccurrence = errors.New("no occurrence after 2000-01-01 00:00 UTC")

// parseExpression parses expr in the dialect KindOf chooses and checks that it
// has an occurrence after 2000-01-01, as the reference validates a schedule.
// The expression is not to be used when the error is not nil.
func parseExpression(expr string) (expression, Kind, error) {
	kind := KindOf(expr)
	switch kind {
	case KindCron:
		// cron.Parse already rejects an expression with no occurrence
		// after 2000-01-01, with the same search.
		c, err := cron.Parse(expr)
		if err != nil {
			return nil, kind, &ExpressionError{Kind: kind, Expr: expr, Err: err}
		}
		return c, kind, nil
	default:
		o, err := oncalendar.Parse(expr)
		if err != nil {
			return nil, kind, &ExpressionError{Kind: kind, Expr: expr, Err: err}
		}
		return o, kind, checkOccurrence(o, kind, expr)
	}
}

// checkOccurrence rejects an OnCalendar expression without an occurrence
// after 2000-01-01 00:00 UTC, as the reference does where it dispatches.
func checkOccurrence(e expression, kind Kind, expr string) error {
	if _, ok := e.Next(validationStart, time.UTC); !ok {
		return &ExpressionError{Kind: kind, Expr: expr, Err: errNoOccurrence}
	}
	return nil
}

// Validate checks a schedule expression without a time zone: it must parse
// in its dialect (KindOf) and have an occurrence after 2000-01-01. The error
// is an *ExpressionError ("invalid cron expression: …" or "invalid OnCalendar
// expression: …") that matches ErrInvalidExpression.
func Validate(expr string) error {
	_, _, err := parseExpression(expr)
	return err
}

// Parse validates a schedule expression (as Validate) and then its time zone
// (as CanonicalTimezone), in that order as the reference reports the
// schedule's error before the zone's, and returns the schedule bound to the
// zone. Its Next returns instants in UTC.
func Parse(expr, tz string) (Schedule, error) {
	e, kind, err := parseExpression(expr)
	if err != nil {
		return nil, err
	}
	loc, err := LoadLocation(tz)
	if err != nil {
		return nil, err
	}
	return &zoned{expr: e, loc: loc, kind: kind, src: expr}, nil
}

// zoned is an expression bound to a time zone.
type zoned struct {
	expr expression
	loc  *time.Location
	kind Kind
	src  string
}

// Next implements Schedule.
func (z *zoned) Next(t time.Time) (time.Time, bool) {
	n, ok := z.expr.Next(t.Truncate(time.Second), z.loc)
	if !ok {
		return time.Time{}, false
	}
	return n.UTC(), true
}

// String returns the expression, its dialect and its zone, for logs.
func (z *zoned) String() string {
	return fmt.Sprintf("%s %q in %s", z.kind, z.src, z.loc)
}
