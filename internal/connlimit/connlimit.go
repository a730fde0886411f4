// Package connlimit bounds the connections one source address holds on a
// listener (the HTTP server's and the SMTP listener's), so that no one
// client, such as a pod holding idle keep-alive connections, takes every
// connection slot and leaves the others no answer.
//
// A source is one IP address (an IPv4 address written in IPv6 counts as
// the IPv4 one). Trusted proxies are exempt: every client behind one shares
// its address.
package connlimit

import (
	"net"
	"net/netip"
	"sync"
)

// PerSource counts open connections by source address and refuses one
// past its cap.
type PerSource struct {
	limit  int
	exempt []netip.Prefix

	mu   sync.Mutex
	open map[netip.Addr]int
}

// NewPerSource allows limit connections from each source, and any number
// from the addresses in exempt.
func NewPerSource(limit int, exempt []netip.Prefix) *PerSource {
	return &PerSource{limit: limit, exempt: exempt, open: map[netip.Addr]int{}}
}

// Take counts a connection from addr (a connection's RemoteAddr). It
// reports false, counting nothing, when addr's source already holds the
// cap; otherwise release uncounts it (call it once, when the connection
// closes). An address that is not IP (a Unix socket's) is not capped.
func (p *PerSource) Take(addr net.Addr) (release func(), ok bool) {
	src, isIP := sourceOf(addr)
	if !isIP || p.exempted(src) {
		return func() {}, true
	}
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

func (p *PerSource) exempted(src netip.Addr) bool {
	for _, prefix := range p.exempt {
		if prefix.Contains(src) {
			return true
		}
	}
	return false
}

// sourceOf is the IP address of a connection's remote address.
func sourceOf(addr net.Addr) (netip.Addr, bool) {
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
	return ap.Addr().Unmap(), true
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
