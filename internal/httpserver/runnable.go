// Package httpserver runs Vigil's HTTP server (whatever package site
// routes: the Management API, pings, badges, the Prometheus endpoints, the
// dashboard and the status pages) inside the controller-runtime manager.
//
// It is a manager.Runnable that runs in every replica, not only the leader:
// pings and API calls must be answered wherever they land. It starts serving
// only after the manager's cache has synced, so the first request never sees
// an empty cache, and it shuts down gracefully when the manager stops.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/vigil-operator/vigil/internal/connlimit"
)

// MaxHeaderBytes bounds a request's headers; more is answered 431.
const MaxHeaderBytes = 16 << 10

// Runnable serves a handler on an address as part of a manager.
type Runnable struct {
	// Addr is the listen address, such as ":8000" or "127.0.0.1:8000".
	Addr string
	// Handler serves the requests.
	Handler http.Handler
	// Cache is waited for before serving; nil serves at once.
	Cache cache.Cache
	// WaitFor, when set, is waited for too, after Cache: what the handlers
	// build from the cache's events (the door for checks' index) must have
	// seen what the cache held when it synced.
	WaitFor func(ctx context.Context) bool
	// ShutdownTimeout bounds how long in-flight requests may finish.
	ShutdownTimeout time.Duration
	// MaxConnections bounds the open connections (DefaultMaxConnections
	// when 0); past it, new clients wait until one closes. Past seven
	// eighths of it, idle keep-alive connections are closed, the longest
	// idle first, then new connections that have sent no request within
	// HeaderGrace, the oldest first.
	MaxConnections int
	// MaxConnectionsPerSource bounds the open connections from one
	// source, an IPv4 address or an IPv6 prefix
	// (DefaultMaxConnectionsPerSource when 0, never more than
	// MaxConnections); one more is closed at once.
	MaxConnectionsPerSource int
	// TrustedProxies are exempt from MaxConnectionsPerSource: the clients
	// behind them share their addresses.
	TrustedProxies []netip.Prefix
	// IPv6SourcePrefix is the prefix length of one IPv6 source for
	// MaxConnectionsPerSource (connlimit.DefaultIPv6Prefix, a /64, when 0).
	IPv6SourcePrefix int

	ready atomic.Bool
	addr  atomic.Value // net.Addr once listening
}

// NeedLeaderElection reports false: every replica serves HTTP.
func (r *Runnable) NeedLeaderElection() bool { return false }

// ReadyCheck is a healthz.Checker that passes once the server is serving.
func (r *Runnable) ReadyCheck() healthz.Checker {
	return func(*http.Request) error {
		if !r.ready.Load() {
			return errors.New("http server not serving yet")
		}
		return nil
	}
}

// ListenAddr returns the address the server listens on, once it does.
func (r *Runnable) ListenAddr() net.Addr {
	a, _ := r.addr.Load().(net.Addr)
	return a
}

// Start listens and serves until ctx is done.
func (r *Runnable) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("http")
	if r.Cache != nil && !r.Cache.WaitForCacheSync(ctx) {
		return errors.New("http server: cache did not sync")
	}
	if r.WaitFor != nil && !r.WaitFor(ctx) {
		return errors.New("http server: the cache's handlers did not sync")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", r.Addr)
	if err != nil {
		return fmt.Errorf("http server: %w", err)
	}
	r.addr.Store(ln.Addr())
	maxConns := r.MaxConnections
	if maxConns <= 0 {
		maxConns = DefaultMaxConnections
	}
	perSource := r.MaxConnectionsPerSource
	if perSource <= 0 {
		perSource = DefaultMaxConnectionsPerSource
	}
	sources, err := connlimit.NewPerSource(min(perSource, maxConns), r.IPv6SourcePrefix, r.TrustedProxies)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("http server: %w", err)
	}
	limits := newLimitListener(ln, maxConns, sources, clock.RealClock{})
	ln = limits
	srv := &http.Server{
		Handler:   r.Handler,
		ConnState: limits.connState,
		// A client that trickles its request holds a connection for
		// these long at most; the connection cap, the header limit and
		// the handlers' BodyBudget bound the memory it holds meanwhile.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		// Clients of the API and pings send a few hundred bytes of
		// headers; 16 KiB leaves room for proxies' and cookies.
		MaxHeaderBytes: MaxHeaderBytes,
		// Requests outlive ctx: on shutdown, in-flight requests (a ping
		// being stored above all) finish instead of being cancelled.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	r.ready.Store(true)
	logger.Info("serving", "addr", ln.Addr().String())

	select {
	case err := <-errc:
		r.ready.Store(false)
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	r.ready.Store(false)
	timeout := r.ShutdownTimeout
	if timeout == 0 {
		timeout = 15 * time.Second
	}
	// ctx is done: give in-flight requests (acknowledging pings above all)
	// their own deadline to finish.
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("http server shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}
