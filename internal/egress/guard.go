package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"k8s.io/utils/clock"
)

// ConnectTimeout bounds establishing one connection, name resolution
// included: an endpoint that does not answer costs a delivery worker a few
// seconds, not the whole request bound (notify's 10 s).
const ConnectTimeout = 5 * time.Second

// IdleConnTimeout is how long a kept-alive connection waits for another
// request before it is closed, and how long a namespace's pool of them
// (its HTTP transport) is kept after the namespace's last delivery.
const IdleConnTimeout = 90 * time.Second

// Options configure a Guard.
type Options struct {
	// Allow is allowed in every namespace (the manager's --egress-allow).
	Allow Allowlist
	// Deny are refused besides DefaultDenied: the cluster's Service and
	// Pod ranges (--egress-deny). Allow still allows within them.
	Deny []netip.Prefix
	// NamespaceAllow is what one namespace is allowed besides Allow (the
	// limits ConfigMap's "<namespace>.egress-allow"); nil allows nothing
	// more. It is asked on every connection, so a change applies to the
	// next one.
	NamespaceAllow func(namespace string) Allowlist
	// Clock tells when a namespace's pool was last used; nil is the real
	// clock.
	Clock clock.PassiveClock
	// AllowRelays lets a delivery hand addresses of the tenant's choosing
	// to a server that connects to them on Vigil's behalf, where no guard
	// looks: an Apprise server given Apprise URLs (--egress-allow-relays).
	// Off, only what the relay itself holds is used (a configuration saved
	// on the Apprise server).
	AllowRelays bool
}

// Guard hands out dialers and HTTP transports that connect only where a
// namespace's policy allows. One Guard serves the whole manager.
type Guard struct {
	opts Options

	mu    sync.Mutex
	pools map[string]*pool // by namespace
	swept time.Time        // when pools unused for IdleConnTimeout were last dropped
}

// pool is a namespace's HTTP transport, with the namespace allowlist its
// dialer checks: its kept-alive connections were all opened under that
// policy, for that namespace.
type pool struct {
	allow     Allowlist
	transport *http.Transport
	used      time.Time // when Transport last handed it out
}

// New returns a guard.
func New(opts Options) *Guard {
	opts.Allow = opts.Allow.normal()
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Guard{opts: opts, pools: map[string]*pool{}, swept: opts.Clock.Now()}
}

// ErrRelayRefused is the error of a delivery that would hand addresses
// to a relay while the guard allows none.
var ErrRelayRefused = errors.New("the egress guard allows no relays (the manager's --egress-allow-relays)")

// AllowsRelays reports whether deliveries may hand addresses of the
// tenant's choosing to a relay (Options.AllowRelays).
func (g *Guard) AllowsRelays() bool { return g.opts.AllowRelays }

// namespaceAllow is the namespace's own allowlist.
func (g *Guard) namespaceAllow(namespace string) Allowlist {
	if g.opts.NamespaceAllow == nil {
		return Allowlist{}
	}
	return g.opts.NamespaceAllow(namespace).normal()
}

func (g *Guard) policy(namespaceAllow Allowlist) Policy {
	return NewPolicy(g.opts.Deny, g.opts.Allow.Join(namespaceAllow))
}

// Policy is the policy of the namespace's connections now.
func (g *Guard) Policy(namespace string) Policy {
	return g.policy(g.namespaceAllow(namespace))
}

// DialContext connects to address ("host:port") over TCP for a delivery of
// the namespace, if its policy allows the address the name resolves to.
// A refused address is never dialled; the error is then a *DeniedError.
func (g *Guard) DialContext(ctx context.Context, namespace, network, address string) (net.Conn, error) {
	return dialer{g.Policy(namespace)}.DialContext(ctx, network, address)
}

// Transport is the HTTP transport for the namespace's requests: every
// connection goes through the guard, and none through a proxy. Each
// namespace has its own pool of kept-alive connections, so a connection
// one namespace's allowlist let through is never reused for another; when
// the namespace's allowlist changes, its old pool is closed and a new one
// starts. A pool unused for IdleConnTimeout is dropped, its idle
// connections closed, so the manager keeps no transport for every
// namespace it ever delivered for.
func (g *Guard) Transport(namespace string) http.RoundTripper {
	allow := g.namespaceAllow(namespace)
	now := g.opts.Clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sweep(now)
	p := g.pools[namespace]
	if p != nil && p.allow.Equal(allow) {
		p.used = now
		return p.transport
	}
	if p != nil {
		// In-flight requests finish; their connections are never handed
		// out again, as nothing asks the old transport for any.
		p.transport.CloseIdleConnections()
	}
	p = &pool{allow: allow, transport: newTransport(dialer{g.policy(allow)}), used: now}
	g.pools[namespace] = p
	return p.transport
}

// sweep drops the pools unused for IdleConnTimeout, at most once per
// IdleConnTimeout (so a pool goes within twice that), and closes their
// idle connections. A request still in flight on one (a caller that took
// the transport long ago) finishes, and its transport closes the
// connection once it has been idle for IdleConnTimeout. g.mu is held.
func (g *Guard) sweep(now time.Time) {
	if now.Sub(g.swept) < IdleConnTimeout {
		return
	}
	g.swept = now
	for namespace, p := range g.pools {
		if now.Sub(p.used) >= IdleConnTimeout {
			p.transport.CloseIdleConnections()
			delete(g.pools, namespace)
		}
	}
}

func newTransport(d dialer) *http.Transport {
	return &http.Transport{
		// No proxy, from the environment or elsewhere: the guard checks
		// where a connection goes, and a proxy would carry the request
		// on, past it, to wherever the URL names.
		Proxy:                 nil,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       IdleConnTimeout,
		TLSHandshakeTimeout:   ConnectTimeout,
		ExpectContinueTimeout: time.Second,
	}
}

// dialer connects where its policy allows.
type dialer struct{ policy Policy }

func (d dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("egress: network %q is not allowed", network)
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	nd := &net.Dialer{Timeout: ConnectTimeout}
	// Control runs for each address the name resolved to, after the
	// socket is made and before it connects: what it checks is what is
	// dialled. A name the administrator allows is checked too: it may
	// reach the private blocks, never loopback or link-local ones, as
	// whoever controls the name (a tenant, for a name in its namespace)
	// chooses what it resolves to.
	nd.Control = func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("egress: unexpected address %q: %w", address, err)
		}
		return d.policy.CheckDial(host, ap.Addr())
	}
	conn, err := nd.DialContext(ctx, network, address)
	if denied := (*DeniedError)(nil); errors.As(err, &denied) {
		// Without the net.OpError around it, which repeats the address.
		return nil, denied
	}
	if err != nil {
		return nil, scrub(network, address, err)
	}
	return conn, nil
}

// dialError is a failed dial as the Channel named its endpoint: a
// net.OpError names the address the name resolved to ("dial tcp
// 10.1.2.3:25: connect: connection refused"), and a DNS error the
// resolver's; a tenant who reads its Channel's status would learn through
// them what the manager's resolver says of names it chooses.
type dialError struct {
	network, address string
	err              error
}

func (e *dialError) Error() string {
	return "dial " + e.network + " " + e.address + ": " + e.err.Error()
}
func (e *dialError) Unwrap() error { return e.err }

// Timeout reports whether the dial timed out, as net.Error's do (the
// delivery breaker counts timeouts).
func (e *dialError) Timeout() bool {
	var ne net.Error
	return errors.As(e.err, &ne) && ne.Timeout()
}

// Temporary is net.Error's, deprecated there; false.
func (e *dialError) Temporary() bool { return false }

// scrub is err without the addresses a name resolved to, nor the
// resolver's: the cause of a net.OpError, a DNS error without its server,
// under the address as it was asked for.
func scrub(network, address string, err error) error {
	var op *net.OpError
	if !errors.As(err, &op) {
		return err
	}
	cause := op.Err
	if dns := (*net.DNSError)(nil); errors.As(cause, &dns) {
		d := *dns
		d.Server = ""
		cause = &d
	}
	return &dialError{network: network, address: address, err: cause}
}
