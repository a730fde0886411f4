package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/vigil-operator/vigil/internal/retryafter"
	"github.com/vigil-operator/vigil/internal/words"
)

// target is a URL a sender calls, and how errors may show it.
type target struct {
	u *url.URL
	// secret URLs came from a Secret: errors show only their host.
	secret bool
}

// parseTarget checks that raw is an absolute http(s) URL. Its errors are
// permanent and, for a URL from a Secret, do not repeat the URL.
func parseTarget(raw string, secret bool) (target, error) {
	where := fmt.Sprintf("%q", raw)
	if secret {
		where = "from the Secret"
	}
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return target{}, Permanent(fmt.Errorf("the URL %s is not an absolute http:// or https:// URL", where))
	}
	if u.Path == "" {
		// url.JoinPath keeps an empty path relative ("https://hostv2/x"):
		// every sender joins its endpoint's path to a base URL.
		u.Path, u.RawPath = "/", ""
	}
	return target{u: u, secret: secret}, nil
}

// String shows the URL without credentials: scheme, host and path, or only
// scheme and host for a URL from a Secret.
func (t target) String() string {
	s := t.u.Scheme + "://" + t.u.Host
	if p := t.u.EscapedPath(); !t.secret && p != "/" {
		s += p
	}
	return s
}

// endpointOf is the host:port a URL names, with the scheme's default
// port.
func endpointOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// request is one HTTP request of a sender.
type request struct {
	method string
	target target
	header http.Header
	// body is sent as is; when json is set instead, it is marshalled and
	// sent with a JSON Content-Type, and when form is set, it is sent
	// form-encoded.
	body []byte
	json any
	form url.Values
	// into, when set, receives a 2xx answer's JSON body (at most
	// maxAnswer bytes), for the senders that read what they created.
	into any
	// judge, when set, decides what an answer outside 2xx means, for a
	// service whose status code does not tell (the signal-cli REST API
	// answers 400 to a rate limit and to a network failure as to a bad
	// request). It is given the StatusError d.do would return and the
	// answer's excerpt (at most 4*maxErrorBody bytes, Secret values
	// scrubbed), and returns the error to give instead.
	judge func(se *StatusError, excerpt string) error
}

// maxAnswer bounds an answer a sender reads (a created issue, a list of
// open issues).
const maxAnswer = 1 << 20

// maxErrorBody bounds the response body excerpt in errors.
const maxErrorBody = 200

// do sends r through the guard, without following redirects, and turns anything
// but a 2xx answer into an error: a StatusError, permanent for a 4xx other
// than 408 and 429. Errors show the URL as r.target.String does.
func (d *Delivery) do(ctx context.Context, r request) error {
	body := r.body
	header := r.header.Clone()
	if header == nil {
		header = http.Header{}
	}
	if r.json != nil {
		b, err := json.Marshal(r.json)
		if err != nil {
			return Permanent(fmt.Errorf("encoding the request: %w", err))
		}
		body = b
		header.Set("Content-Type", "application/json")
	}
	if r.form != nil {
		body = []byte(r.form.Encode())
		header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, r.target.u.String(), rd)
	if err != nil {
		return Permanent(fmt.Errorf("%s %s: building the request failed", r.method, r.target))
	}
	// The request goes to the URL's host, under its name: net/http sends
	// no Host header from here, and the webhook kind refuses to set one.
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", UserAgent())

	if err := d.gate(endpointOf(r.target.u)); err != nil {
		return fmt.Errorf("%s %s: %w", r.method, r.target, err)
	}
	resp, err := d.httpClient().Do(req)
	if err != nil {
		// url.Error repeats the full URL; keep only what it wraps.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%s %s: %w", r.method, r.target, err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		if r.into != nil {
			if err := json.NewDecoder(io.LimitReader(resp.Body, maxAnswer)).Decode(r.into); err != nil {
				return fmt.Errorf("%s %s: reading the answer: %w", r.method, r.target, err)
			}
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil
	}
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, 4*maxErrorBody))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	// Scrub Secret values before cutting the excerpt short, so no part of
	// one survives.
	text := string(excerpt)
	if d.recorder != nil {
		text = redact(text, d.recorder.values())
	}
	se := &StatusError{
		Method:     r.method,
		Target:     r.target.String(),
		Code:       resp.StatusCode,
		Body:       oneLine(text, maxErrorBody),
		RetryAfter: retryafter.Parse(resp.Header.Get("Retry-After"), now()),
	}
	if se.RetryAfter == 0 && resp.StatusCode == http.StatusTooManyRequests {
		se.RetryAfter = retryAfterInBody(excerpt)
	}
	if resp.StatusCode >= 300 && resp.StatusCode <= 399 {
		se.Body = "redirects are not followed"
	}
	if r.judge != nil {
		return r.judge(se, text)
	}
	return byStatus(se)
}

// byStatus is se as d.do returns it: retryable for the codes that may
// succeed later, permanent otherwise.
func byStatus(se *StatusError) error {
	if retryable(se.Code) {
		return se
	}
	return Permanent(se)
}

// oneLine makes a response body printable on one line, at most max bytes.
func oneLine(b string, max int) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(b, "\uFFFD")), " ")
	if t, cut := words.Cut(s, max); cut {
		return t + "…"
	}
	return s
}

// retryAfterInBody reads the delays that some services give in a 429's
// JSON body rather than in Retry-After: Telegram's
// {"parameters": {"retry_after": 30}} (seconds), Matrix's
// {"retry_after_ms": 2000}, Slack-style {"retry_after": 30}. Zero when
// the body says nothing the outbox could use.
func retryAfterInBody(body []byte) time.Duration {
	var v struct {
		RetryAfter   float64 `json:"retry_after"`
		RetryAfterMs float64 `json:"retry_after_ms"`
		Parameters   struct {
			RetryAfter float64 `json:"retry_after"`
		} `json:"parameters"`
	}
	if json.Unmarshal(body, &v) != nil {
		return 0
	}
	secs := v.RetryAfterMs / 1000
	switch {
	case v.Parameters.RetryAfter > 0:
		secs = v.Parameters.RetryAfter
	case v.RetryAfter > 0:
		secs = v.RetryAfter
	}
	// A day is more than any service asks; more is a mistake (and would
	// overflow a Duration).
	const maxSecs = 24 * 60 * 60
	switch {
	case !(secs > 0): // negative, zero or NaN
		return 0
	case secs > maxSecs:
		return maxSecs * time.Second
	}
	return time.Duration(secs * float64(time.Second))
}
