package runner

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestPingRetries(t *testing.T) {
	tests := []struct {
		name         string
		statuses     []int
		wantRequests int
		wantStatus   int // 0: success
	}{
		{name: "200 at once", statuses: nil, wantRequests: 1},
		{name: "503 then 200 is retried", statuses: []int{503, 200}, wantRequests: 2},
		{name: "500, 502, then 200", statuses: []int{500, 502, 200}, wantRequests: 3},
		{name: "408 is retried", statuses: []int{408, 200}, wantRequests: 2},
		{name: "429 is retried", statuses: []int{429, 200}, wantRequests: 2},
		{name: "400 is not retried", statuses: []int{400, 200}, wantRequests: 1, wantStatus: 400},
		{name: "404 is not retried", statuses: []int{404, 200}, wantRequests: 1, wantStatus: 404},
		{name: "409 is not retried", statuses: []int{409, 200}, wantRequests: 1, wantStatus: 409},
		{name: "503 until out of attempts", statuses: []int{503, 503, 503, 200}, wantRequests: 3, wantStatus: 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newPingServer(t, 5000, tt.statuses...)
			c := &Client{Retry: fastRetry, UserAgent: "vigil-test"}
			resp, err := c.Ping(context.Background(), Request{URL: srv.checkURL()})
			if got := len(srv.requests()); got != tt.wantRequests {
				t.Errorf("server got %d requests, want %d", got, tt.wantRequests)
			}
			if tt.wantStatus == 0 {
				if err != nil {
					t.Fatalf("Ping: %v", err)
				}
				if resp.StatusCode != 200 || resp.Body != "OK" || resp.BodyLimit != 5000 || resp.Attempts != tt.wantRequests {
					t.Errorf("response = %+v", resp)
				}
				return
			}
			var serr *StatusError
			if !errors.As(err, &serr) || serr.StatusCode != tt.wantStatus {
				t.Fatalf("Ping error = %v, want status %d", err, tt.wantStatus)
			}
		})
	}
}

func TestPingErrorMessage(t *testing.T) {
	srv := newPingServer(t, 0, 404)
	_, err := (&Client{Retry: fastRetry}).Ping(context.Background(), Request{URL: srv.checkURL()})
	if err == nil || err.Error() != "server answered 404 Not Found: not found" {
		t.Fatalf("error = %v", err)
	}
}

func TestPingMethodAndBody(t *testing.T) {
	tests := []struct {
		name            string
		req             Request
		wantMethod      string
		wantBody        string
		wantContentType string
	}{
		{name: "no body is a GET", req: Request{}, wantMethod: "GET"},
		{name: "a body is a POST", req: Request{Body: []byte("hello")}, wantMethod: "POST", wantBody: "hello", wantContentType: "text/plain; charset=utf-8"},
		{name: "an empty body is a POST", req: Request{Body: []byte{}}, wantMethod: "POST", wantContentType: "text/plain; charset=utf-8"},
		{name: "explicit method", req: Request{Method: "HEAD"}, wantMethod: "HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := newPingServer(t, 0, 503) // also checks the body is resent on retry
			req := tt.req
			req.URL = srv.checkURL()
			if _, err := (&Client{Retry: fastRetry, UserAgent: "vigil-test"}).Ping(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			reqs := srv.requests()
			if len(reqs) != 2 {
				t.Fatalf("got %d requests, want 2", len(reqs))
			}
			for _, r := range reqs {
				if r.Method != tt.wantMethod || r.Body != tt.wantBody || r.ContentType != tt.wantContentType || r.UserAgent != "vigil-test" {
					t.Errorf("request = %+v", r)
				}
			}
		})
	}
}

func TestPingNetworkErrorRetriedAndBounded(t *testing.T) {
	u := closedURL(t) + "/ping/" + testCheck
	var logs strings.Builder
	_, err := (&Client{Retry: fastRetry, Log: &logs}).Ping(context.Background(), Request{URL: u})
	if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") {
		t.Fatalf("error = %v", err)
	}
	if strings.Contains(err.Error(), testCheck) || strings.Contains(logs.String(), testCheck) {
		t.Errorf("the check's UUID leaked into messages: %v\n%s", err, logs.String())
	}
	if n := strings.Count(logs.String(), "retrying in"); n != 2 {
		t.Errorf("logged %d retries, want 2:\n%s", n, logs.String())
	}
}

func TestPingAttemptTimeout(t *testing.T) {
	srv := newPingServer(t, 0)
	srv.delays = []time.Duration{5 * time.Second} // the first try hangs
	p := fastRetry
	p.AttemptTimeout = 200 * time.Millisecond
	// Without the attempt timeout the first try would succeed, late.
	resp, err := (&Client{Retry: p}).Ping(context.Background(), Request{URL: srv.checkURL()})
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("Ping = %+v, %v; want success at the second attempt", resp, err)
	}
}

func TestPingOverallBound(t *testing.T) {
	srv := newPingServer(t, 0, 503, 503, 503, 503, 503, 503, 503, 503, 503, 503)
	p := RetryPolicy{Attempts: 10, AttemptTimeout: time.Second, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, MaxElapsed: 300 * time.Millisecond}
	_, err := (&Client{Retry: p}).Ping(context.Background(), Request{URL: srv.checkURL()})
	if err == nil || !strings.Contains(err.Error(), "time limit") {
		t.Fatalf("error = %v; want it to name the time limit", err)
	}
	// The last error is the last 503, or, when the time limit cut the last
	// attempt short (a loaded machine answers slowly), that attempt's
	// timeout; never another status.
	var serr *StatusError
	if errors.As(err, &serr) && serr.StatusCode != 503 {
		t.Errorf("error = %v", err)
	}
	// Jitter waits between half the backoff and all of it, so 300ms hold at
	// most 1+300/50 tries, fewer than the 10 the policy would otherwise make.
	if n := len(srv.requests()); n < 1 || n > 7 {
		t.Errorf("%d requests, want 1 to 7", n)
	}
}

func TestPingRetryAfter(t *testing.T) {
	t.Parallel()
	srv := newPingServer(t, 0, 429)
	srv.retryAfter = "1"
	start := time.Now()
	resp, err := (&Client{Retry: fastRetry}).Ping(context.Background(), Request{URL: srv.checkURL()})
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("Ping = %+v, %v", resp, err)
	}
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("retried after %s, before Retry-After: 1", d)
	}
}

func TestPingRetryAfterBeyondBound(t *testing.T) {
	t.Parallel()
	srv := newPingServer(t, 0, 503)
	srv.retryAfter = "120"
	_, err := (&Client{Retry: fastRetry}).Ping(context.Background(), Request{URL: srv.checkURL()})
	if err == nil || !strings.Contains(err.Error(), "past the time limit") {
		t.Fatalf("error = %v", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests; want a give-up without waiting for a second", n)
	}
}

func TestPingCancelled(t *testing.T) {
	srv := newPingServer(t, 0, 503, 503, 503)
	p := fastRetry
	p.InitialBackoff, p.MaxBackoff = 10*time.Second, 10*time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := (&Client{Retry: p}).Ping(ctx, Request{URL: srv.checkURL()})
	// The give-up comes from the context, not from running out of attempts
	// after 10s waits.
	if err == nil || !strings.Contains(err.Error(), "gave up after 1 attempt ") {
		t.Fatalf("Ping = %v; want a give-up during the first wait", err)
	}
	if n := len(srv.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

func TestPingRedirects(t *testing.T) {
	var final []pingRecord
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		final = append(final, pingRecord{Method: r.Method, Body: string(b)})
		_, _ = io.WriteString(w, "OK")
	}))
	defer target.Close()
	tests := []struct {
		name    string
		status  int
		body    []byte
		wantErr bool
	}{
		{name: "GET follows 301", status: 301},
		{name: "POST follows 307 with its body", status: 307, body: []byte("tail")},
		{name: "POST follows 308 with its body", status: 308, body: []byte("tail")},
		{name: "POST refuses 302", status: 302, body: []byte("tail"), wantErr: true},
		{name: "POST refuses 301", status: 301, body: []byte("tail"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			final = nil
			var hits int
			redir := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits++
				http.Redirect(w, r, target.URL+"/ping/"+testCheck, tt.status)
			}))
			defer redir.Close()
			_, err := (&Client{Retry: fastRetry}).Ping(context.Background(), Request{URL: redir.URL + "/ping/" + testCheck, Body: tt.body})
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "use that URL") || hits != 1 || len(final) != 0 {
					t.Fatalf("error = %v, %d hits, %d forwarded; want one refused redirect", err, hits, len(final))
				}
				return
			}
			if err != nil || len(final) != 1 || final[0].Body != string(tt.body) {
				t.Fatalf("error = %v, forwarded = %+v", err, final)
			}
		})
	}
}

func TestPingTLSErrorNotRetried(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is expected
	srv.StartTLS()
	defer srv.Close()
	var logs strings.Builder
	_, err := (&Client{Retry: fastRetry, Log: &logs}).Ping(context.Background(), Request{URL: srv.URL + "/ping/" + testCheck})
	if err == nil || strings.Contains(err.Error(), "gave up") || logs.Len() != 0 {
		t.Fatalf("error = %v, log %q; want one failed attempt", err, logs.String())
	}
}

func TestPingInvalid(t *testing.T) {
	for _, tt := range []struct {
		name string
		c    Client
		url  string
	}{
		{name: "bad URL", url: "not a url"},
		{name: "zero attempts", c: Client{Retry: RetryPolicy{Attempts: 0, MaxElapsed: time.Second}}, url: "http://x/ping/y"},
		{name: "negative timeout", c: Client{Retry: RetryPolicy{Attempts: 1, AttemptTimeout: -1}}, url: "http://x/ping/y"},
	} {
		if _, err := tt.c.Ping(context.Background(), Request{URL: tt.url}); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

func TestBackoff(t *testing.T) {
	p := RetryPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second}
	for _, tt := range []struct {
		n       int
		nominal time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {3, 400 * time.Millisecond}, {4, 800 * time.Millisecond}, {5, time.Second}, {50, time.Second}} {
		for range 50 {
			if d := p.backoff(tt.n); d < tt.nominal/2 || d > tt.nominal {
				t.Fatalf("backoff(%d) = %s, want within [%s, %s]", tt.n, d, tt.nominal/2, tt.nominal)
			}
		}
	}
	if d := (RetryPolicy{}).backoff(3); d != 0 {
		t.Errorf("zero policy backoff = %s", d)
	}
}
