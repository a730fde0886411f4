package notify

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// permanentError marks an error that retrying cannot fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent marks err as one that retrying cannot fix: a 4xx answer other
// than 408 and 429, a template that does not render, an address that does
// not parse, a channel without settings. Permanent(nil) is nil.
func Permanent(err error) error {
	if err == nil || IsPermanent(err) {
		return err
	}
	return &permanentError{err}
}

// IsPermanent reports whether err, or an error it wraps, was marked with
// Permanent. Every other error may succeed when retried.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// StatusError is an HTTP answer outside 2xx. Senders return it wrapped (and
// wrapped with Permanent for a 4xx other than 408 and 429), so callers find
// it with errors.As, for example to honour RetryAfter.
type StatusError struct {
	// Method and Target are the request's method and its URL as it may be
	// shown: without credentials, and only the host when the URL came from
	// a Secret.
	Method, Target string
	// Code is the HTTP status code.
	Code int
	// Body is a short, single-line excerpt of the response body.
	Body string
	// RetryAfter is the delay the Retry-After header asked for; zero when
	// there was none.
	RetryAfter time.Duration
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("%s %s: HTTP %d", e.Method, e.Target, e.Code)
	if text := http.StatusText(e.Code); text != "" {
		msg += " " + text
	}
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// retryable reports whether a status code may succeed later: 5xx, 408, 429
// and, because redirects are not followed, 3xx.
func retryable(code int) bool {
	return code < 400 || code >= 500 || code == http.StatusRequestTimeout || code == http.StatusTooManyRequests
}
