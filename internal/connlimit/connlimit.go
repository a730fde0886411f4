// Package connlimit bounds the connections one source holds on a listener
// (the HTTP server's and the SMTP listener's), so that no one client, such
// as a pod holding idle keep-alive connections, takes every connection
// slot and leaves the others no answer.
//
// A source is one IPv4 address (an IPv4 address written in IPv6 counts as
// the IPv4 one), or one IPv6 prefix, a /64 unless set otherwise: a client
// given a /64, as IPv6 hosts and networks routinely are, may send from any
// of its 2^64 addresses, and counted by address it would have no cap at
// all. Trusted proxies are exempt: every client behind one shares its
// address.
package connlimit

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
)

// DefaultIPv6Prefix is the prefix length of one IPv6 source: a /64, the
// least a host or a network is given.
const DefaultIPv6Prefix = 64

// PerSource counts open connections by source and refuses one past its
// cap.
type PerSource struct {
	limit      int
	ipv6Prefix int
	exempt     []netip.Prefix

	mu   sync.Mutex
	open map[netip.Prefix]int // by source
}

// NewPerSource allows limit connections from each source, and any number
// from the addresses in exempt. An IPv6 source is the /ipv6Prefix its
// address is in (DefaultIPv6Prefix when 0; at most 128, one address).
func NewPerSource(limit, ipv6Prefix int, exempt []netip.Prefix) (*PerSource, error) {
	if ipv6Prefix == 0 {
		ipv6Prefix = DefaultIPv6Prefix
	}
	if ipv6Prefix < 0 || ipv6Prefix > 128 {
		return nil, fmt.Errorf("an IPv6 source prefix of /%d: want 1 to 128", ipv6Prefix)
	}
	return &PerSource{limit: limit, ipv6Prefix: ipv6Prefix, exempt: exempt, open: map[netip.Prefix]int{}}, nil
}

// Take counts a connection from addr (a connection's RemoteAddr). It
// reports false, counting nothing, when addr's source already holds the
// cap; otherwise release uncounts it (call it once, when the connection
// closes). An address that is not IP (a Unix socket's) is not capped.
func (p *PerSource) Take(addr net.Addr) (release func(), ok bool) {
	ip, isIP := addressOf(addr)
	if !isIP || p.exempted(ip) {
		return func() {}, true
	}
	src := p.sourceOf(ip)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.open[src] >= p.limit {
		return nil, false
	}
	p.open[src]++
	return sync.OnceFunc(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.open[src]--; p.open[src] <= 0 {
			delete(p.open, src)
		}
	}), true
}

func (p *PerSource) exempted(ip netip.Addr) bool {
	for _, prefix := range p.exempt {
		if prefix.Contains(ip) {
			return true
		}
	}
	return false
}

// sourceOf is the source ip counts against: itself for IPv4, its prefix
// for IPv6.
func (p *PerSource) sourceOf(ip netip.Addr) netip.Prefix {
	bits := 32
	if ip.Is6() {
		bits = p.ipv6Prefix
	}
	src, _ := ip.Prefix(bits) // a valid address without a zone, and bits in range
	return src
}

// addressOf is the IP address of a connection's remote address.
func addressOf(addr net.Addr) (netip.Addr, bool) {
	if tcp, ok := addr.(*net.TCPAddr); ok {
		ip, ok := netip.AddrFromSlice(tcp.IP)
		return ip.Unmap(), ok
	}
	if addr == nil {
		return netip.Addr{}, false
	}
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return netip.Addr{}, false
	}
	return ap.Addr().Unmap().WithZone(""), true
}

// Refuse closes a connection at once, with a reset rather than an orderly
// close: the client learns it was refused now, and the server keeps no
// TIME_WAIT socket for each of a flood of refused connections.
func Refuse(c net.Conn) {
	if tcp, ok := c.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = c.Close()
}
