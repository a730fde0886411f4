package delivery

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/delivery/breaker"
	"github.com/vigil-operator/vigil/internal/notify"
)

func TestBackoff(t *testing.T) {
	now := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	d := &Dispatcher{Options: Options{InitialBackoff: 10 * time.Second, MaxBackoff: time.Hour}}
	d.Options.defaults()
	refused := func(until time.Duration) error {
		return fmt.Errorf("webhook: POST http://black.hole/: %w", &breaker.OpenError{Timeouts: 3, Until: now.Add(until)})
	}
	for _, tc := range []struct {
		name     string
		attempts int
		err      error
		want     time.Duration
	}{
		{"first retry", 1, errors.New("HTTP 503"), 10 * time.Second},
		{"doubling", 4, errors.New("HTTP 503"), 80 * time.Second},
		{"capped", 30, errors.New("HTTP 503"), time.Hour},
		{"Retry-After beyond the backoff", 1, &notify.StatusError{Code: 429, RetryAfter: time.Minute}, time.Minute},
		{"Retry-After within it", 4, &notify.StatusError{Code: 429, RetryAfter: time.Second}, 80 * time.Second},
		{"refused until the probe, later than the backoff", 1, refused(time.Minute), time.Minute},
		{"refused until the probe, sooner than the backoff", 4, refused(time.Minute), 80 * time.Second},
		{"refused while the probe is out", 1, fmt.Errorf("x: %w", &breaker.OpenError{Timeouts: 3}), 10 * time.Second},
		{"refused until past the cap", 1, refused(2 * time.Hour), time.Hour},
	} {
		if got := d.backoff(tc.attempts, tc.err, now); got != tc.want {
			t.Errorf("%s: backoff = %v, want %v", tc.name, got, tc.want)
		}
	}
}
