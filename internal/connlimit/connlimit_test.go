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
	p, err := NewPerSource(2, 0, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("2001:db8:ffff::1/128")})
	if err != nil {
		t.Fatal(err)
	}
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
		{"IPv6, another address of the same /64", tcp("[2001:db8::2]:2"), true},
		{"IPv6 over the cap", tcp("[2001:db8::1]:3"), false},
		{"another address of the same /64 is the same source", tcp("[2001:db8::ffff:ffff:ffff:ffff]:1"), false},
		{"the next /64 is another source", tcp("[2001:db8:0:1::1]:1"), true},
		{"IPv6 with a zone", tcp("[fe80::1%eth0]:1"), true},
		{"IPv6 with a zone, the same /64", tcp("[fe80::2%eth1]:1"), true},
		{"IPv6 with a zone over the cap", tcp("[fe80::3%eth0]:1"), false},
		{"a trusted proxy in a /64 of clients", tcp("[2001:db8:ffff::1]:1"), true},
		{"a trusted proxy in a /64 of clients", tcp("[2001:db8:ffff::1]:2"), true},
		{"a trusted proxy in a /64 of clients, past the cap", tcp("[2001:db8:ffff::1]:3"), true},
		{"its neighbour is not trusted", tcp("[2001:db8:ffff::2]:1"), true},
		{"its neighbour is not trusted", tcp("[2001:db8:ffff::3]:1"), true},
		{"its neighbour is not trusted, over the cap", tcp("[2001:db8:ffff::4]:1"), false},
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

// TestIPv6Prefix: the IPv6 source prefix is set (a /128 counts each
// address alone, a /48 a whole site), and one out of range is refused.
func TestIPv6Prefix(t *testing.T) {
	tcp := func(s string) net.Addr { return net.TCPAddrFromAddrPort(netip.MustParseAddrPort(s)) }
	for _, tc := range []struct {
		bits           int
		first, another string
		same           bool
	}{
		{128, "[2001:db8::1]:1", "[2001:db8::2]:1", false},
		{128, "[2001:db8::1]:1", "[2001:db8::1]:2", true},
		{64, "[2001:db8::1]:1", "[2001:db8::ffff:0:0:1]:1", true},
		{48, "[2001:db8::1]:1", "[2001:db8:0:ffff::1]:1", true},
		{48, "[2001:db8::1]:1", "[2001:db8:1::1]:1", false},
		{48, "192.0.2.1:1", "192.0.2.2:1", false}, // IPv4: one address
	} {
		p, err := NewPerSource(1, tc.bits, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := p.Take(tcp(tc.first)); !ok {
			t.Fatalf("/%d: the first connection refused", tc.bits)
		}
		if _, ok := p.Take(tcp(tc.another)); ok == tc.same {
			t.Errorf("/%d: %s after %s taken %v, want the same source %v", tc.bits, tc.another, tc.first, ok, tc.same)
		}
	}
	for _, bits := range []int{-1, 129} {
		if _, err := NewPerSource(1, bits, nil); err == nil {
			t.Errorf("an IPv6 source prefix of %d taken", bits)
		}
	}
}
