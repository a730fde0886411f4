package connlimit

import (
	"net"
	"net/netip"
	"testing"
)

type unixAddr string

func (a unixAddr) Network() string { return "unix" }
func (a unixAddr) String() string  { return string(a) }

func TestPerSource(t *testing.T) {
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	p := NewPerSource(2, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	steps := []struct {
		name string
		addr net.Addr
		ok   bool
	}{
		{"first from a", tcp("192.0.2.1:1000"), true},
		{"second from a, another port", tcp("192.0.2.1:1001"), true},
		{"third from a: over the cap", tcp("192.0.2.1:1002"), false},
		{"a written as IPv4 in IPv6 is a", tcp("[::ffff:192.0.2.1]:1003"), false},
		{"b has its own cap", tcp("192.0.2.2:1000"), true},
		{"IPv6", tcp("[2001:db8::1]:1"), true},
		{"IPv6", tcp("[2001:db8::1]:2"), true},
		{"IPv6 over the cap", tcp("[2001:db8::1]:3"), false},
		{"a neighbour in the same /64 is another source", tcp("[2001:db8::2]:1"), true},
		{"a trusted proxy", tcp("10.1.1.1:1"), true},
		{"a trusted proxy", tcp("10.1.1.1:2"), true},
		{"a trusted proxy, past the cap", tcp("10.1.1.1:3"), true},
		{"not IP", unixAddr("@vigil"), true},
		{"not IP", unixAddr("@vigil"), true},
		{"not IP", unixAddr("@vigil"), true},
	}
	var releases []func()
	for _, s := range steps {
		release, ok := p.Take(s.addr)
		if ok != s.ok {
			t.Fatalf("%s (%v): took %v, want %v", s.name, s.addr, ok, s.ok)
		}
		if ok {
			releases = append(releases, release)
		}
	}
	// Giving one back lets one more in; giving it back twice does not let
	// two.
	releases[0]()
	releases[0]()
	if _, ok := p.Take(tcp("192.0.2.1:2000")); !ok {
		t.Fatal("a's connection closed, but a may not open another")
	}
	if _, ok := p.Take(tcp("192.0.2.1:2001")); ok {
		t.Fatal("a released one connection twice and opened two")
	}
	for _, release := range releases {
		release()
	}
	if len(p.open) != 1 { // a's last one is still open
		t.Fatalf("counts left: %v", p.open)
	}
}
