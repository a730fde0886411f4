// Package breaker stops sending notifications to endpoints that keep
// timing out. An endpoint is a host:port as a Channel names it, within one
// namespace: after Timeouts requests in a row to it time out, further
// requests are refused at once for CoolDown; then one request goes through
// as a probe. An answer (of any kind) closes the breaker again; another
// timeout opens it for another CoolDown.
//
// A request that hangs holds a delivery worker until it times out; without
// the breaker, a black-holed endpoint with a backlog would hold its
// namespace's share of the workers for as long as the backlog lasts. An
// endpoint is keyed by namespace too, so that one tenant's Channels,
// pointed at a shared host, cannot open the breaker for another tenant's.
package breaker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Defaults for Options.
const (
	DefaultTimeouts = 3
	DefaultCoolDown = time.Minute
)

// Key is an endpoint (host:port) of one namespace.
type Key struct {
	Namespace, Endpoint string
}

// Breaker counts timeouts by endpoint. It is safe for concurrent use; the
// zero Breaker is not: make one with New.
type Breaker struct {
	clock    clock.PassiveClock
	timeouts int
	coolDown time.Duration

	mu        sync.Mutex
	endpoints map[Key]*endpoint
	swept     time.Time
}

// endpoint is what the breaker knows of an endpoint whose last request
// timed out; endpoints that answered are not kept.
type endpoint struct {
	timeouts int       // in a row
	until    time.Time // open until then; zero while closed
	probing  bool      // the probe after the cool-down is on its way
	touched  time.Time
}

// New returns a breaker that opens after timeouts requests in a row timed
// out, for coolDown (zero or less: the defaults).
func New(c clock.PassiveClock, timeouts int, coolDown time.Duration) *Breaker {
	if timeouts <= 0 {
		timeouts = DefaultTimeouts
	}
	if coolDown <= 0 {
		coolDown = DefaultCoolDown
	}
	return &Breaker{clock: c, timeouts: timeouts, coolDown: coolDown, endpoints: map[Key]*endpoint{}}
}

// OpenError is a request the breaker refused.
type OpenError struct {
	// Timeouts is how many requests in a row timed out.
	Timeouts int
	// Until is when the next request may go, as the probe; zero when the
	// probe is on its way already.
	Until time.Time
}

func (e *OpenError) Error() string {
	next := "a probe is on its way"
	if !e.Until.IsZero() {
		next = "the next try goes after " + e.Until.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("not sent: the last %d requests to this endpoint timed out; %s", e.Timeouts, next)
}

// Allow reports whether a request to k may go now: nil, or an *OpenError.
// A nil answer must be followed by Done with the request's outcome.
func (b *Breaker) Allow(k Key) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	e := b.endpoints[k]
	if e == nil || e.until.IsZero() {
		return nil // closed
	}
	now := b.clock.Now()
	switch {
	case now.Before(e.until):
		return &OpenError{Timeouts: e.timeouts, Until: e.until}
	case e.probing:
		return &OpenError{Timeouts: e.timeouts}
	}
	e.probing, e.touched = true, now
	return nil
}

// Done records the outcome of a request Allow let go: a timeout counts
// toward opening the breaker (and a probe's timeout opens it again), a
// request cut short by its caller (context.Canceled) counts for nothing,
// and anything else, an error answer included, is an answer: it closes the
// breaker.
func (b *Breaker) Done(k Key, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	b.sweep(now)
	e := b.endpoints[k]
	switch {
	case IsTimeout(err):
		if e == nil {
			e = &endpoint{}
			b.endpoints[k] = e
		}
		e.timeouts++
		e.probing, e.touched = false, now
		if e.timeouts >= b.timeouts {
			e.until = now.Add(b.coolDown)
		}
	case errors.Is(err, context.Canceled):
		if e != nil {
			e.probing = false // another request may probe
		}
	default:
		delete(b.endpoints, k)
	}
}

// sweep forgets, once per cool-down, the endpoints nothing was sent to for
// a cool-down (closed ones, or open ones whose cool-down is over): so that
// endpoints that timed out once and were never used again do not pile up.
// One forgotten is treated as new, which costs at most another Timeouts
// requests before it opens again.
func (b *Breaker) sweep(now time.Time) {
	if now.Sub(b.swept) < b.coolDown {
		return
	}
	b.swept = now
	for k, e := range b.endpoints {
		if !e.probing && now.Sub(e.touched) >= b.coolDown && !now.Before(e.until) {
			delete(b.endpoints, k)
		}
	}
}

// IsTimeout reports whether err is a timeout: a deadline that passed
// (context.DeadlineExceeded) or a network timeout (net.Error.Timeout), such
// as a connect timeout or an HTTP client's.
func IsTimeout(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout())
}

// Attempt follows one delivery through the breaker: the sender calls Gate
// before each endpoint it contacts, and the caller calls Done with the
// delivery's outcome.
type Attempt struct {
	b         *Breaker
	namespace string
	reached   string // the endpoint let through last, whose outcome is not yet recorded
}

// Attempt starts following a delivery of a namespace.
func (b *Breaker) Attempt(namespace string) *Attempt {
	return &Attempt{b: b, namespace: namespace}
}

// Gate lets a request to endpoint (host:port) go, or refuses it with an
// *OpenError. Senders contact endpoints one after the other and go on to
// the next only after an answer: calling Gate again records the previous
// endpoint as having answered.
func (a *Attempt) Gate(endpoint string) error {
	if a.reached != "" {
		a.b.Done(Key{a.namespace, a.reached}, nil)
		a.reached = ""
	}
	if err := a.b.Allow(Key{a.namespace, endpoint}); err != nil {
		return err
	}
	a.reached = endpoint
	return nil
}

// Done records the delivery's outcome for the endpoint it contacted last.
func (a *Attempt) Done(err error) {
	if a.reached != "" {
		a.b.Done(Key{a.namespace, a.reached}, err)
		a.reached = ""
	}
}
