package breaker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

var (
	errTimeout  = fmt.Errorf("POST http://black.hole/: %w", os.ErrDeadlineExceeded)
	errAnswered = errors.New("POST http://slow.example/: HTTP 503 Service Unavailable")
	errCanceled = fmt.Errorf("POST http://slow.example/: %w", context.Canceled)
)

// A step: wait, then try a request (go: whether the breaker lets it
// through) and, when it went, finish it with err.
type step struct {
	wait time.Duration
	key  Key
	goes bool
	err  error
}

var (
	a     = Key{"team-a", "black.hole:443"}
	other = Key{"team-a", "fine.example:443"}
	b     = Key{"team-b", "black.hole:443"}
)

func TestBreaker(t *testing.T) {
	const coolDown = time.Minute
	for _, tc := range []struct {
		name  string
		steps []step
	}{{
		name: "closed: timeouts below the threshold let requests through",
		steps: []step{
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: nil},
		},
	}, {
		name: "an answer resets the count, an error answer too",
		steps: []step{
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errAnswered},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true},
		},
	}, {
		name: "open: after three timeouts in a row, refused for the cool-down",
		steps: []step{
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: false},
			{wait: coolDown - time.Second, key: a, goes: false},
		},
	}, {
		name: "open for one endpoint of one namespace only",
		steps: []step{
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{key: other, goes: true},
			{key: b, goes: true},
			{key: a, goes: false},
		},
	}, {
		name: "half-open: after the cool-down one probe, the rest wait for it",
		steps: []step{
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{wait: coolDown, key: a, goes: true, err: nil}, // the probe, answered
			{key: a, goes: true},
			{key: a, goes: true},
		},
	}, {
		name: "a probe that times out opens it for another cool-down",
		steps: []step{
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{wait: coolDown, key: a, goes: true, err: errTimeout},
			{key: a, goes: false},
			{wait: coolDown - time.Second, key: a, goes: false},
			{wait: time.Second, key: a, goes: true},
		},
	}, {
		name: "a probe cut short by its caller lets another probe",
		steps: []step{
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: true, err: errTimeout},
			{wait: coolDown, key: a, goes: true, err: errCanceled},
			{key: a, goes: true, err: errTimeout},
			{key: a, goes: false},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
			br := New(clk, 3, coolDown)
			for i, s := range tc.steps {
				clk.SetTime(clk.Now().Add(s.wait))
				err := br.Allow(s.key)
				if went := err == nil; went != s.goes {
					t.Fatalf("step %d: %v went=%v, want %v (%v)", i, s.key, went, s.goes, err)
				}
				if err == nil {
					br.Done(s.key, s.err)
				}
			}
		})
	}
}

func TestProbeRefusesOthersUntilItEnds(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
	br := New(clk, 2, time.Minute)
	for range 2 {
		if err := br.Allow(a); err != nil {
			t.Fatal(err)
		}
		br.Done(a, errTimeout)
	}
	var open *OpenError
	if err := br.Allow(a); !errors.As(err, &open) || !open.Until.Equal(clk.Now().Add(time.Minute)) || open.Timeouts != 2 {
		t.Fatalf("open: %v", err)
	}
	if !strings.Contains(open.Error(), "the last 2 requests to this endpoint timed out; the next try goes after 2026-11-25T03:01:00Z") {
		t.Errorf("message: %s", open.Error())
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	if err := br.Allow(a); err != nil {
		t.Fatalf("the probe: %v", err)
	}
	if err := br.Allow(a); !errors.As(err, &open) || !open.Until.IsZero() || !strings.Contains(err.Error(), "a probe is on its way") {
		t.Fatalf("while the probe is out: %v", err)
	}
	br.Done(a, nil)
	if err := br.Allow(a); err != nil {
		t.Fatalf("after the probe answered: %v", err)
	}
}

func TestSweepForgetsIdleEndpoints(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
	br := New(clk, 3, time.Minute)
	for i := range 100 {
		k := Key{"team-a", fmt.Sprint("host-", i, ":80")}
		_ = br.Allow(k)
		br.Done(k, errTimeout)
	}
	clk.SetTime(clk.Now().Add(2 * time.Minute))
	_ = br.Allow(a)
	br.Done(a, errTimeout)
	if len(br.endpoints) != 1 {
		t.Errorf("%d endpoints kept, want only the last one to time out", len(br.endpoints))
	}
}

func TestAttempt(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC))
	br := New(clk, 1, time.Minute)
	// Two endpoints in one delivery: the first answered (the sender went
	// on), the second timed out.
	at := br.Attempt("team-a")
	if at.Gate("first:443") != nil || at.Gate("second:443") != nil {
		t.Fatal("refused while closed")
	}
	at.Done(errTimeout)
	if err := br.Allow(Key{"team-a", "first:443"}); err != nil {
		t.Errorf("the endpoint that answered: %v", err)
	}
	br.Done(Key{"team-a", "first:443"}, nil)
	at = br.Attempt("team-a")
	err := at.Gate("second:443")
	var open *OpenError
	if !errors.As(err, &open) {
		t.Fatalf("the endpoint that timed out: %v", err)
	}
	at.Done(err) // a refused attempt records nothing
	clk.SetTime(clk.Now().Add(time.Minute))
	if err := br.Attempt("team-b").Gate("second:443"); err != nil {
		t.Errorf("another namespace: %v", err)
	}
	if err := br.Attempt("team-a").Gate("second:443"); err != nil {
		t.Errorf("the probe after the cool-down: %v", err)
	}
}

// TestIsTimeout: the errors a hanging endpoint gives, through the real
// HTTP client and dialer, are timeouts; refusals and answers are not.
func TestIsTimeout(t *testing.T) {
	hang, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0") // accepts (the kernel does) and never answers
	if err != nil {
		t.Fatal(err)
	}
	defer hang.Close()
	closed, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	answers := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
	defer answers.Close()

	get := func(ctx context.Context, c *http.Client, url string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		return err
	}
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	short := &http.Client{Timeout: 50 * time.Millisecond}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the HTTP client's timeout", get(t.Context(), short, "http://"+hang.Addr().String()+"/"), true},
		{"a dial timeout", func() error {
			_, err := (&net.Dialer{Timeout: time.Nanosecond}).DialContext(t.Context(), "tcp", hang.Addr().String())
			return err
		}(), true},
		{"a deadline, wrapped", fmt.Errorf("webhook: %w", context.DeadlineExceeded), true},
		{"connection refused", get(t.Context(), short, "http://"+closedAddr+"/"), false},
		{"canceled by the caller", get(canceled, http.DefaultClient, answers.URL), false},
		{"an answer", errAnswered, false},
		{"none", nil, false},
	} {
		if got := IsTimeout(tc.err); got != tc.want {
			t.Errorf("%s (%v): IsTimeout = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
