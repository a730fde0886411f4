// Package retryafter reads an HTTP Retry-After header, as the ping client
// (vigil ping, vigil run) and the notifier (a provider's 429 or 503) both
// must honour it.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Max bounds what a server may ask for: a day.
const Max = 24 * time.Hour

// Parse reads a Retry-After value, delay-seconds or an HTTP date, as the
// wait from now: 0 when there is none, it is not one of the two forms, or
// it lies in the past; at most Max.
func Parse(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(min(s, int64(Max/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), Max)
	}
	return 0
}
