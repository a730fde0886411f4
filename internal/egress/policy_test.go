package egress

import (
	"net/netip"
	"strings"
	"testing"
)

func mustAllow(t *testing.T, s string) Allowlist {
	t.Helper()
	a, err := ParseAllowlist(s)
	if err != nil {
		t.Fatalf("ParseAllowlist(%q): %v", s, err)
	}
	return a
}

// TestDefaultPolicy: every refused range at its edges, the addresses just
// outside them, IPv4 inside IPv6 (mapped, compatible, NAT64) and zones.
func TestDefaultPolicy(t *testing.T) {
	p := NewPolicy(nil, Allowlist{})
	for _, tc := range []struct {
		addr    string
		refused string // "" when allowed
	}{
		// unspecified, "this network"
		{"0.0.0.0", "unspecified"},
		{"0.255.255.255", "unspecified"},
		{"1.0.0.0", ""},
		// RFC 1918
		{"9.255.255.255", ""},
		{"10.0.0.0", "private"},
		{"10.255.255.255", "private"},
		{"11.0.0.0", ""},
		{"172.15.255.255", ""},
		{"172.16.0.0", "private"},
		{"172.31.255.255", "private"},
		{"172.32.0.0", ""},
		{"192.167.255.255", ""},
		{"192.168.0.0", "private"},
		{"192.168.255.255", "private"},
		{"192.169.0.0", ""},
		// shared address space
		{"100.63.255.255", ""},
		{"100.64.0.0", "shared"},
		{"100.127.255.255", "shared"},
		{"100.128.0.0", ""},
		// loopback
		{"126.255.255.255", ""},
		{"127.0.0.1", "loopback"},
		{"127.255.255.255", "loopback"},
		{"128.0.0.0", ""},
		// link-local, with the cloud metadata address
		{"169.253.255.255", ""},
		{"169.254.0.0", "link-local"},
		{"169.254.169.254", "link-local"},
		{"169.254.255.255", "link-local"},
		{"169.255.0.0", ""},
		// IETF, documentation and benchmarking blocks
		{"192.0.0.8", "IETF"},
		{"192.0.1.0", ""},
		{"192.0.2.1", "documentation"},
		{"198.17.255.255", ""},
		{"198.18.0.0", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.20.0.0", ""},
		{"198.51.100.7", "documentation"},
		{"203.0.113.7", "documentation"},
		// multicast, reserved, broadcast
		{"223.255.255.255", ""},
		{"224.0.0.0", "multicast"},
		{"239.255.255.255", "multicast"},
		{"240.0.0.0", "reserved"},
		{"255.255.255.255", "reserved"},
		// global unicast
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		// IPv6
		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::2", "IPv4-compatible"},
		{"::127.0.0.1", "IPv4-compatible"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "link-local"},
		{"::ffff:10.1.2.3", "private"},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::7f00:1", "NAT64 (to loopback)"},
		{"64:ff9b::a9fe:a9fe", "NAT64 (to link-local)"},
		{"64:ff9b::808:808", ""},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"100::1", "discard-only"},
		{"100:0:0:1::1", ""},
		{"2001::1", "Teredo"},
		{"2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "Teredo"},
		{"2001:1::1", "IETF"},
		{"2001:2::1", "benchmarking"},
		{"2001:2:0:ffff:ffff:ffff:ffff:ffff", "benchmarking"},
		{"2001:2:1::1", "IETF"},
		{"2001:10::1", "ORCHID"},
		{"2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", "ORCHID"},
		{"2001:20::1", "IETF"},
		{"2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "IETF"},
		{"2001:200::1", ""},
		{"2001:db8::1", "documentation"},
		{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"2001:db9::", ""},
		{"2002::1", "6to4"},
		{"2002:7f00:1::1", "6to4"},
		{"2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "6to4"},
		{"2003::1", ""},
		{"3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"3fff::1", "documentation"},
		{"3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "documentation"},
		{"3fff:1000::", ""},
		{"5eff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"5f00::1", "SRv6"},
		{"5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "SRv6"},
		{"5f01::", ""},
		{"2001:4860:4860::8888", ""},
		{"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"fc00::", "private"},
		{"fd00:ec2::254", "private"}, // the AWS metadata service over IPv6
		{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"ff00::", "multicast"},
	} {
		addr := netip.MustParseAddr(tc.addr)
		err := p.Check(addr)
		switch {
		case tc.refused == "" && err != nil:
			t.Errorf("%s: refused (%v), want allowed", tc.addr, err)
		case tc.refused != "" && err == nil:
			t.Errorf("%s: allowed, want refused as %s", tc.addr, tc.refused)
		case tc.refused != "" && !strings.Contains(err.Error(), tc.refused):
			t.Errorf("%s: %v, want the range %q named", tc.addr, err, tc.refused)
		case err != nil && (!IsDenied(err) || !strings.HasPrefix(err.Error(), "EgressDenied: ")):
			t.Errorf("%s: %v is not an EgressDenied error", tc.addr, err)
		}
	}
}

// TestAllowAndClusterRanges: what the administrator allows passes, and no
// more; cluster ranges are refused unless allowed.
func TestAllowAndClusterRanges(t *testing.T) {
	cluster := []netip.Prefix{netip.MustParsePrefix("34.118.224.0/20"), netip.MustParsePrefix("2600:1900:4000::/44")}
	for _, tc := range []struct {
		name, allow, addr string
		allowed           bool
	}{
		{"loopback allowed", "127.0.0.0/8", "127.0.0.1", true},
		{"loopback allowed, last address", "127.0.0.0/8", "127.255.255.255", true},
		{"IPv4 loopback allowed, not IPv6's", "127.0.0.0/8", "::1", false},
		{"IPv4 loopback allowed, mapped too", "127.0.0.0/8", "::ffff:127.0.0.1", true},
		{"IPv6 loopback allowed", "::1", "::1", true},
		{"a /24 in private", "10.1.2.0/24", "10.1.2.7", true},
		{"just past the /24", "10.1.2.0/24", "10.1.3.0", false},
		{"just before the /24", "10.1.2.0/24", "10.1.1.255", false},
		{"one address", "10.9.8.7", "10.9.8.7", true},
		{"one address, not its neighbour", "10.9.8.7", "10.9.8.8", false},
		{"a CIDR not on its boundary is masked", "10.1.2.3/24", "10.1.2.200", true},
		{"an IPv4-mapped CIDR is the IPv4 one", "::ffff:10.1.2.0/120", "10.1.2.9", true},
		{"allowing 127/8 does not allow 0.0.0.0", "127.0.0.0/8", "0.0.0.0", false},
		{"metadata not allowed by a private allow", "10.0.0.0/8", "169.254.169.254", false},
		{"cluster range refused", "", "34.118.224.1", false},
		{"cluster range refused, last address", "", "34.118.239.255", false},
		{"past the cluster range", "", "34.118.240.0", true},
		{"IPv6 cluster range refused", "", "2600:1900:4000::1", false},
		{"cluster range allowed in part", "34.118.230.0/24", "34.118.230.5", true},
		{"cluster range allowed in part, not the rest", "34.118.230.0/24", "34.118.231.5", false},
		{"everything", "0.0.0.0/0, ::/0", "169.254.169.254", true},
		{"a host name allows no address", "localhost", "127.0.0.1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := NewPolicy(cluster, mustAllow(t, tc.allow))
			if err := p.Check(netip.MustParseAddr(tc.addr)); (err == nil) != tc.allowed {
				t.Errorf("Check(%s) with allow %q = %v, want allowed %v", tc.addr, tc.allow, err, tc.allowed)
			}
		})
	}
	if err := NewPolicy(cluster, Allowlist{}).Check(netip.MustParseAddr("34.118.224.1")); err == nil || !strings.Contains(err.Error(), "a cluster address") {
		t.Errorf("a cluster address is refused as %v, want the range named cluster", err)
	}
}

// TestNameAllow: a name the administrator allows reaches the private,
// shared and cluster addresses it resolves to, and no loopback,
// link-local, unspecified, multicast or broadcast one, nor any IPv4
// address hidden in an IPv6 one that is: whoever controls the name (a
// tenant, for an ExternalName Service or an EndpointSlice in its
// namespace) chooses where it points. A range allows those.
func TestNameAllow(t *testing.T) {
	cluster := []netip.Prefix{netip.MustParsePrefix("34.118.224.0/20")}
	for _, tc := range []struct {
		allow, host, addr string
		allowed           bool
	}{
		{"smtp.team-a.svc", "smtp.team-a.svc", "10.96.0.10", true},
		{"smtp.team-a.svc", "smtp.team-a.svc", "172.20.0.1", true},
		{"smtp.team-a.svc", "smtp.team-a.svc", "192.168.1.1", true},
		{"smtp.team-a.svc", "smtp.team-a.svc", "100.64.0.1", true},
		{"smtp.team-a.svc", "smtp.team-a.svc", "34.118.224.7", true}, // the cluster's
		{"smtp.team-a.svc", "smtp.team-a.svc", "fd00:10:96::a", true},
		{"smtp.team-a.svc", "smtp.team-a.svc", "::ffff:10.1.2.3", true},
		{"smtp.team-a.svc", "smtp.team-a.svc", "64:ff9b::a00:1", true}, // NAT64 to 10.0.0.1
		{"smtp.team-a.svc", "SMTP.Team-A.svc.", "10.1.2.3", true},
		{"smtp.team-a.svc", "smtp.team-a.svc", "8.8.8.8", true},
		// What a name never reaches.
		{"smtp.team-a.svc", "smtp.team-a.svc", "127.0.0.1", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "::1", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "169.254.169.254", false}, // metadata.google.internal
		{"smtp.team-a.svc", "smtp.team-a.svc", "::ffff:169.254.169.254", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "64:ff9b::a9fe:a9fe", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "fe80::1", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "0.0.0.0", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "::", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "224.0.0.1", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "ff02::1", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "255.255.255.255", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "::127.0.0.1", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "2002:7f00:1::1", false},
		{"smtp.team-a.svc", "smtp.team-a.svc", "2001::1", false},
		// Unless a range allows it.
		{"smtp.team-a.svc, 127.0.0.0/8", "smtp.team-a.svc", "127.0.0.1", true},
		{"smtp.team-a.svc, 169.254.169.254", "smtp.team-a.svc", "169.254.169.254", true},
		// Another name is not allowed at all, nor an address written as
		// the host.
		{"smtp.team-a.svc", "smtp.team-b.svc", "10.1.2.3", false},
		{"smtp.team-a.svc", "10.1.2.3", "10.1.2.3", false},
		{"smtp.team-a.svc", "", "10.1.2.3", false},
	} {
		p := NewPolicy(cluster, mustAllow(t, tc.allow))
		err := p.CheckDial(tc.host, netip.MustParseAddr(tc.addr))
		if (err == nil) != tc.allowed {
			t.Errorf("allow %q: CheckDial(%q, %s) = %v, want allowed %v", tc.allow, tc.host, tc.addr, err, tc.allowed)
		}
		if err != nil && !IsDenied(err) {
			t.Errorf("allow %q: CheckDial(%q, %s) = %v, not EgressDenied", tc.allow, tc.host, tc.addr, err)
		}
	}
}

// TestRefusalNamesNoAddress: a refusal names the host as the Channel
// wrote it and the kind of block, never the address a name resolved to,
// for every refused block: a tenant cannot read names through the
// manager's resolver.
func TestRefusalNamesNoAddress(t *testing.T) {
	p := NewPolicy([]netip.Prefix{netip.MustParsePrefix("34.118.224.0/20")}, Allowlist{})
	for _, d := range p.Denied {
		addr := last(d.Prefix) // the first may be in a more specific block
		err := p.CheckDial("hook.example.internal", addr)
		if err == nil {
			t.Errorf("%s (%s) allowed", addr, d.Name)
			continue
		}
		text := err.Error()
		if want := "EgressDenied: hook.example.internal resolves to "; !strings.HasPrefix(text, want) {
			t.Errorf("%q does not start %q", text, want)
		}
		if strings.Contains(text, addr.String()) || strings.Contains(text, addr.StringExpanded()) {
			t.Errorf("%q shows the address %s", text, addr)
		}
		if !strings.Contains(text, d.Name) && !strings.Contains(text, "NAT64") {
			t.Errorf("%q does not name the block (%s)", text, d.Name)
		}
	}
	for _, tc := range []struct {
		host, addr, want string
	}{
		{"metadata.google.internal", "169.254.169.254",
			"EgressDenied: metadata.google.internal resolves to a link-local address, which the egress policy refuses unless the administrator allows it"},
		{"10.0.0.7", "10.0.0.7", // the Channel's own words
			"EgressDenied: 10.0.0.7 is a private address, which the egress policy refuses unless the administrator allows it"},
		{"::1", "::1",
			"EgressDenied: ::1 is a loopback address, which the egress policy refuses unless the administrator allows it"},
		{"hook.example.internal", "::",
			"EgressDenied: hook.example.internal resolves to an unspecified address, which the egress policy refuses unless the administrator allows it"},
	} {
		if err := p.CheckDial(tc.host, netip.MustParseAddr(tc.addr)); err == nil || err.Error() != tc.want {
			t.Errorf("CheckDial(%q, %s) = %v, want %q", tc.host, tc.addr, err, tc.want)
		}
	}
}

// last is the last address of p.
func last(p netip.Prefix) netip.Addr {
	b := p.Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func TestAllowsHost(t *testing.T) {
	p := NewPolicy(nil, mustAllow(t, "smtp.mail.svc, Hooks.Example.COM."))
	for host, want := range map[string]bool{
		"smtp.mail.svc":               true,
		"SMTP.Mail.svc.":              true,
		"hooks.example.com":           true,
		"mail.svc":                    false,
		"evil-smtp.mail.svc":          false,
		"smtp.mail.svc.evil.com":      false,
		"x.smtp.mail.svc":             false,
		"smtp.mail.svc.cluster.local": false,
		"":                            false,
		"127.0.0.1":                   false,
	} {
		if got := p.AllowsHost(host); got != want {
			t.Errorf("AllowsHost(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestParseAllowlist(t *testing.T) {
	for _, tc := range []struct {
		in, want, err string
	}{
		{"", "", ""},
		{" , ,", "", ""},
		{"10.1.2.0/24, smtp.mail.svc", "10.1.2.0/24, smtp.mail.svc", ""},
		{"10.1.2.0/24,smtp.mail.svc\n::1 127.0.0.1", "10.1.2.0/24, 127.0.0.1/32, ::1/128, smtp.mail.svc", ""},
		{"10.1.2.3/24", "10.1.2.0/24", ""},
		{"B.example.com, a.example.com., b.example.com", "a.example.com, b.example.com", ""},
		{"10.1.2.0/24, 10.1.2.0/24", "10.1.2.0/24", ""},
		{"10.1.2.0/33", "", `"10.1.2.0/33"`},
		{"300.1.2.3", "", `"300.1.2.3"`}, // a typo, not a name
		{"http://example.com", "", `"http://example.com"`},
		{"fe80::1%eth0", "", `"fe80::1%eth0"`},
		{"-bad.example.com, good.example.com, bad_", "", `"-bad.example.com"`},
		{"a..b", "", `"a..b"`},
		{strings.Repeat("a", 64) + ".com", "", "want CIDRs"},
	} {
		got, err := ParseAllowlist(tc.in)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseAllowlist(%q) = %v, %v; want an error naming %s", tc.in, got, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("ParseAllowlist(%q): %v", tc.in, err)
		case tc.err == "" && got.String() != tc.want:
			t.Errorf("ParseAllowlist(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if _, err := ParseRanges("10.96.0.0/12, fd00::/108 10.244.0.1"); err != nil {
		t.Errorf("ParseRanges: %v", err)
	}
	if _, err := ParseRanges("10.96.0.0/12, kubernetes.default"); err == nil || !strings.Contains(err.Error(), `"kubernetes.default"`) {
		t.Errorf("ParseRanges with a name = %v, want an error naming it", err)
	}
}

// FuzzParseAllowlist: any input is refused, or read into a list that reads
// back the same from its String, and allows no address its prefixes do not
// contain.
func FuzzParseAllowlist(f *testing.F) {
	for _, s := range []string{"10.1.2.0/24, smtp.mail.svc", "::1 127.0.0.1", "::ffff:10.0.0.0/104", "a.b.", "0.0.0.0/0", "x,,y"} {
		f.Add(s)
	}
	probe := []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("::1"), netip.MustParseAddr("10.1.2.3")}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAllowlist(s)
		if err != nil {
			return
		}
		again, err := ParseAllowlist(a.String())
		if err != nil || !again.Equal(a) {
			t.Fatalf("%q read as %q, which reads back as %q, %v", s, a, again, err)
		}
		p := NewPolicy(nil, a)
		for _, addr := range probe {
			inside := false
			for _, pre := range a.Prefixes {
				inside = inside || pre.Contains(addr)
			}
			if p.Check(addr) == nil && !inside {
				t.Fatalf("%q allows %s, which none of its prefixes contains", s, addr)
			}
			// A name allow reaches none of these but 10.1.2.3.
			for _, h := range a.Hosts {
				if p.CheckDial(h, addr) == nil && !inside && !addr.IsPrivate() {
					t.Fatalf("%q allows %s through the name %s", s, addr, h)
				}
			}
		}
	})
}
