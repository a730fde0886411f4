package runner

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vigil-operator/vigil/internal/retryafter"
)

// BodyLimitHeader is the response header in which the server announces how
// many body bytes it keeps.
const BodyLimitHeader = "Ping-Body-Limit"

// RetryPolicy bounds the attempts at one ping.
type RetryPolicy struct {
	// Attempts is the number of tries, including the first (at least 1).
	Attempts int
	// AttemptTimeout bounds each try: connecting, sending and reading the
	// answer. Zero means no per-try bound.
	AttemptTimeout time.Duration
	// InitialBackoff is the wait before the second try; each later wait
	// doubles, up to MaxBackoff. Waits are jittered (between half and all of
	// the nominal value). A Retry-After answer lengthens the wait.
	InitialBackoff time.Duration
	// MaxBackoff caps the nominal wait between tries.
	MaxBackoff time.Duration
	// MaxElapsed bounds the whole ping, waits included. Zero means no
	// overall bound beyond the attempts.
	MaxElapsed time.Duration
}

// DefaultRetryPolicy is 5 tries, 10 s each, 1 s initial backoff up to 30 s
// between tries, and at most 60 s in all.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		Attempts:       5,
		AttemptTimeout: 10 * time.Second,
		InitialBackoff: time.Second,
		MaxBackoff:     30 * time.Second,
		MaxElapsed:     60 * time.Second,
	}
}

// Validate reports a policy that cannot work.
func (p RetryPolicy) Validate() error {
	switch {
	case p.Attempts < 1:
		return fmt.Errorf("attempts must be at least 1, not %d", p.Attempts)
	case p.AttemptTimeout < 0 || p.InitialBackoff < 0 || p.MaxBackoff < 0 || p.MaxElapsed < 0:
		return errors.New("retry durations must not be negative")
	}
	return nil
}

// backoff returns the jittered wait after the n-th failed try (n >= 1).
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.InitialBackoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	if p.MaxBackoff > 0 {
		d = min(d, p.MaxBackoff)
	}
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1) // jitter needs no cryptographic randomness
}

// maxRetryAfter caps a server's Retry-After when the policy has no overall
// bound.
const maxRetryAfter = 5 * time.Minute

// Request is one ping.
type Request struct {
	// URL is the full ping URL, suffix and rid included (see [PingURL]).
	URL string
	// Method is the HTTP method; empty means POST when Body is not nil,
	// else GET.
	Method string
	// Body is sent as text/plain; nil sends no body.
	Body []byte
}

// Response is the server's acknowledgement of a ping.
type Response struct {
	// StatusCode is the (2xx) HTTP status.
	StatusCode int
	// Body is the start of the answer ("OK", "Created"), trimmed.
	Body string
	// BodyLimit is the Ping-Body-Limit header, or 0 when absent or invalid.
	BodyLimit int
	// Attempts is the number of tries it took.
	Attempts int
}

// StatusError is a non-2xx answer.
type StatusError struct {
	StatusCode int
	// Body is the start of the answer ("not found", "invalid uuid format").
	Body string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("server answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Body != "" {
		msg += ": " + e.Body
	}
	return msg
}

// Retryable reports whether the status is worth another try: 408, 429 and
// 5xx.
func (e *StatusError) Retryable() bool {
	return e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

// Client sends pings. The zero value is usable: it uses
// [DefaultRetryPolicy] and its own http.Client.
type Client struct {
	// HTTP sends the requests; nil means a client that refuses redirects
	// which would drop a POST body. Per-try timeouts come from Retry, not
	// from HTTP.Timeout.
	HTTP *http.Client
	// Retry bounds the tries; the zero value means [DefaultRetryPolicy].
	Retry RetryPolicy
	// UserAgent is sent when not empty.
	UserAgent string
	// Log receives one line per failed try that will be retried; nil
	// discards them.
	Log io.Writer
}

var defaultHTTP = &http.Client{CheckRedirect: checkRedirect}

// errRedirect marks a redirect that is not followed.
var errRedirect = errors.New("redirect not followed")

// checkRedirect follows redirects that keep the method (and so the body),
// and refuses those that would turn a POST into a body-less GET (301, 302 and
// 303), which would silently drop the ping body.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("%w: stopped after 10 redirects", errRedirect)
	}
	if orig := via[0].Method; req.Method != orig {
		return fmt.Errorf("%w: the server redirects to %s://%s%s, which would turn the %s into a %s; use that URL",
			errRedirect, req.URL.Scheme, req.URL.Host, req.URL.Path, orig, req.Method)
	}
	return nil
}

// Ping sends req, retrying as c.Retry allows. It returns the answer when the
// server acknowledged the ping with a 2xx status, else the last error: a
// *StatusError for an HTTP answer, or a network error. Cancelling ctx stops
// further tries.
func (c *Client) Ping(ctx context.Context, req Request) (*Response, error) {
	policy := c.Retry
	if policy == (RetryPolicy{}) {
		policy = DefaultRetryPolicy()
	}
	if err := policy.Validate(); err != nil {
		return nil, err
	}
	u, err := parseHTTPURL(req.URL)
	if err != nil {
		return nil, err
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
		if req.Body != nil {
			method = http.MethodPost
		}
	}
	if policy.MaxElapsed > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, policy.MaxElapsed)
		defer cancel()
	}

	var lastErr error
	for attempt := 1; ; attempt++ {
		resp, retryAfter, err := c.try(ctx, policy, method, u, req.Body)
		if err == nil {
			resp.Attempts = attempt
			return resp, nil
		}
		lastErr = err
		if !retryable(err) {
			return nil, err
		}
		if ctx.Err() != nil {
			return nil, giveUp(ctx, attempt, lastErr)
		}
		if attempt >= policy.Attempts {
			if attempt == 1 {
				return nil, lastErr
			}
			return nil, fmt.Errorf("gave up after %s: %w", attempts(attempt), lastErr)
		}
		wait := policy.backoff(attempt)
		if retryAfter > wait {
			wait = retryAfter
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < wait {
			return nil, fmt.Errorf("gave up after %s (the next one would be due in %s, past the time limit): %w",
				attempts(attempt), wait.Round(time.Millisecond), lastErr)
		}
		if c.Log != nil {
			fmt.Fprintf(c.Log, "vigil: ping attempt %d/%d failed: %v; retrying in %s\n",
				attempt, policy.Attempts, lastErr, wait.Round(time.Millisecond))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, giveUp(ctx, attempt, lastErr)
		case <-t.C:
		}
	}
}

func giveUp(ctx context.Context, n int, lastErr error) error {
	why := "cancelled"
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		why = "time limit reached"
	}
	return fmt.Errorf("gave up after %s (%s): %w", attempts(n), why, lastErr)
}

// attempts says "1 attempt", "2 attempts".
func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// try sends one request. It returns the Retry-After delay of a retryable
// answer.
func (c *Client) try(ctx context.Context, policy RetryPolicy, method string, u *url.URL, body []byte) (*Response, time.Duration, error) {
	if policy.AttemptTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, policy.AttemptTimeout)
		defer cancel()
	}
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body) // fresh per try, so a retry resends the whole body
	}
	hreq, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, 0, permanent{err}
	}
	if body != nil {
		hreq.Header.Set("Content-Type", "text/plain; charset=utf-8")
	}
	if c.UserAgent != "" {
		hreq.Header.Set("User-Agent", c.UserAgent)
	}
	hc := c.HTTP
	if hc == nil {
		hc = defaultHTTP
	}
	hresp, err := hc.Do(hreq)
	if err != nil {
		return nil, 0, transportError(u, err)
	}
	defer hresp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(hresp.Body, 1024))
	_, _ = io.Copy(io.Discard, io.LimitReader(hresp.Body, 64<<10)) // let the connection be reused
	text := strings.TrimSpace(strings.ToValidUTF8(string(head), "\uFFFD"))

	if hresp.StatusCode < 200 || hresp.StatusCode > 299 {
		serr := &StatusError{StatusCode: hresp.StatusCode, Body: text}
		if hresp.StatusCode >= 300 && hresp.StatusCode < 400 {
			serr.Body = "redirect to " + hresp.Header.Get("Location") + " not followed"
		}
		var wait time.Duration
		if serr.Retryable() {
			wait = retryafter.Parse(hresp.Header.Get("Retry-After"), time.Now())
			if policy.MaxElapsed == 0 {
				wait = min(wait, maxRetryAfter)
			}
		}
		return nil, wait, serr
	}
	resp := &Response{StatusCode: hresp.StatusCode, Body: text}
	if v, err := strconv.Atoi(strings.TrimSpace(hresp.Header.Get(BodyLimitHeader))); err == nil && v > 0 {
		resp.BodyLimit = v
	}
	return resp, 0, nil
}

// permanent marks an error no retry can fix.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

func retryable(err error) bool {
	var p permanent
	if errors.As(err, &p) {
		return false
	}
	var serr *StatusError
	if errors.As(err, &serr) {
		return serr.Retryable()
	}
	return true // network errors and timeouts
}

// transportError rewrites a client error without the full URL (it holds the
// check's UUID or ping key) and marks the ones a retry cannot fix: refused
// redirects and TLS certificate problems.
func transportError(u *url.URL, err error) error {
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = errors.New("no answer in time")
	}
	werr := fmt.Errorf("%s://%s: %w", u.Scheme, u.Host, err)
	var (
		certErr     *tls.CertificateVerificationError
		unknownAuth x509.UnknownAuthorityError
		hostErr     x509.HostnameError
		invalidErr  x509.CertificateInvalidError
		recordErr   tls.RecordHeaderError
	)
	if errors.Is(err, errRedirect) || errors.As(err, &certErr) || errors.As(err, &unknownAuth) ||
		errors.As(err, &hostErr) || errors.As(err, &invalidErr) || errors.As(err, &recordErr) {
		return permanent{werr}
	}
	return werr
}
