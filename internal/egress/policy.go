// Package egress decides where the manager may connect on a tenant's
// behalf, and is the only way a Channel's delivery reaches the network.
//
// A Channel is tenant input, and the manager runs with the network reach of
// a cluster component: without a guard, a tenant could have it send
// requests to the manager's own loopback, a cloud metadata address, a node
// port or another tenant's Service, past NetworkPolicy. So every
// connection a delivery makes is checked at dial time, on the address the
// dialer is about to connect to (after name resolution, so a name that
// resolves to a refused address, or one rebound to it between a check and
// the connect, is refused too). The guard never dials a refused address:
// its answer is the same whether anything listens there or not.
//
// By default the guard refuses every address that is not global unicast
// (DefaultDenied) and the cluster's own ranges when the administrator names
// them; the administrator allows exceptions by address range or host name,
// for every namespace (the manager's flag) or for one namespace (the
// vigil-limits ConfigMap). An allowed name reaches private addresses, not
// loopback, link-local (the metadata address), unspecified or multicast
// ones, which only a range allows: whoever controls the name chooses what
// it resolves to. Nothing a tenant writes can widen the policy itself.
//
// A refusal names the host as the Channel wrote it and the kind of block
// refused, never the address the name resolved to.
package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Range is a block of addresses the guard refuses, with what it is.
type Range struct {
	Prefix netip.Prefix
	// Name says what the block is in an error: "loopback", "private", ...
	Name string
	// ByName: a host name the administrator allows may reach addresses in
	// the block (a private Service, say, that smtp.mail.svc resolves to).
	// The blocks without it are reached only through a CIDR that allows
	// them, whatever name is allowed: there an address means this host
	// (loopback, unspecified), this link (link-local, with the cloud
	// metadata address), no one host (multicast, broadcast), or an IPv4
	// address hidden in an IPv6 one. A name in a tenant's namespace (an
	// ExternalName Service, a Service whose endpoints its owner writes)
	// points wherever the tenant points it, so a name allow must not reach
	// the manager's own loopback or the node's metadata service.
	ByName bool
}

// r is a block a host name allow may reach; strict is one it may not.
func r(cidr, name string) Range      { return Range{netip.MustParsePrefix(cidr), name, true} }
func strict(cidr, name string) Range { return Range{netip.MustParsePrefix(cidr), name, false} }

// DefaultDenied are the blocks the guard refuses unless allowed: every
// IPv4 and IPv6 block of IANA's special-purpose registries that is not
// globally reachable, among them loopback, link-local (with the cloud
// metadata address 169.254.169.254), private, shared (100.64.0.0/10),
// unspecified, multicast and broadcast. Documentation and benchmarking
// blocks are refused too: nothing public lives there, and some networks
// use them internally. The IETF protocol-assignment blocks (192.0.0.0/24,
// 2001::/23) are refused whole, with the few anycast services inside them
// that are globally reachable: no webhook lives there either. The first
// block that contains an address names it in an error, so the more
// specific come first.
var DefaultDenied = []Range{
	strict("0.0.0.0/8", "unspecified (\"this network\")"),
	r("10.0.0.0/8", "private"),
	r("100.64.0.0/10", "shared (carrier-grade NAT)"),
	strict("127.0.0.0/8", "loopback"),
	strict("169.254.0.0/16", "link-local"),
	r("172.16.0.0/12", "private"),
	r("192.0.0.0/24", "IETF protocol assignment"),
	r("192.0.2.0/24", "documentation"),
	r("192.168.0.0/16", "private"),
	r("198.18.0.0/15", "benchmarking"),
	r("198.51.100.0/24", "documentation"),
	r("203.0.113.0/24", "documentation"),
	strict("224.0.0.0/4", "multicast"),
	strict("240.0.0.0/4", "reserved"), // with the broadcast address 255.255.255.255
	strict("::/128", "unspecified"),
	strict("::1/128", "loopback"),
	strict("::/96", "IPv4-compatible (deprecated)"),
	strict("64:ff9b:1::/48", "local-use NAT64"),
	r("100::/64", "discard-only"),
	strict("2001::/32", "Teredo"), // carries an IPv4 address
	r("2001:2::/48", "benchmarking"),
	r("2001:10::/28", "ORCHID (deprecated)"),
	r("2001::/23", "IETF protocol assignment"),
	r("2001:db8::/32", "documentation"),
	strict("2002::/16", "6to4"), // carries an IPv4 address
	r("3fff::/20", "documentation"),
	r("5f00::/16", "segment routing (SRv6 SID)"),
	r("fc00::/7", "private (unique local)"),
	strict("fe80::/10", "link-local"),
	r("fec0::/10", "site-local (deprecated)"),
	strict("ff00::/8", "multicast"),
}

// nat64 is the well-known NAT64 prefix: its addresses stand for the IPv4
// address in their last 32 bits, which a NAT64 gateway connects to.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Allowlist is what the administrator allows past the refused ranges:
// address ranges, and host names. A name allows the addresses it resolves
// to in the blocks a name may reach (Range.ByName: private, shared, the
// cluster's ranges, ...), never loopback, link-local, unspecified,
// multicast or broadcast ones: only a range allows those.
type Allowlist struct {
	Prefixes []netip.Prefix
	// Hosts are lower-case names without a final dot, matched exactly.
	Hosts []string
}

// Loopback allows the loopback addresses, 127.0.0.0/8 and ::1: what `make
// dev` allows, so a webhook listener on the developer's machine hears its
// notifications, and what tests with loopback receivers allow.
var Loopback = Allowlist{Prefixes: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

// ParseAllowlist reads a list of CIDRs, addresses and host names separated
// by commas or white space, such as "10.1.2.0/24, smtp.mail.svc, ::1". An
// address allows itself alone. It refuses what is none of the three, naming
// every such entry.
func ParseAllowlist(s string) (Allowlist, error) {
	var a Allowlist
	var bad []string
	for _, f := range fields(s) {
		if p, err := parsePrefixOrAddr(f); err == nil {
			a.Prefixes = append(a.Prefixes, p)
		} else if h, ok := hostName(f); ok {
			a.Hosts = append(a.Hosts, h)
		} else {
			bad = append(bad, fmt.Sprintf("%q", f))
		}
	}
	if len(bad) > 0 {
		return Allowlist{}, fmt.Errorf("%s: want CIDRs, IP addresses or host names", strings.Join(bad, ", "))
	}
	return a.normal(), nil
}

// ParseRanges reads CIDRs or addresses separated by commas or white space
// (the cluster's ranges, which the guard refuses too).
func ParseRanges(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range fields(s) {
		p, err := parsePrefixOrAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%q: want a CIDR or an IP address", f)
		}
		out = append(out, p)
	}
	return out, nil
}

func fields(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

func parsePrefixOrAddr(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), max(p.Bits()-96, 0))
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		return netip.Prefix{}, errors.New("an address with a zone")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// hostName reports whether s is a DNS name (RFC 1123 labels, the last one
// not all digits), and returns it in lower case without a final dot.
func hostName(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if s == "" || len(s) > 253 {
		return "", false
	}
	labels := strings.Split(s, ".")
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return "", false // an address with a typo, not a name
	}
	for _, label := range labels {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			default:
				return "", false
			}
		}
	}
	return s, true
}

// normal sorts and de-duplicates a copy, so equal lists compare equal.
func (a Allowlist) normal() Allowlist {
	a.Prefixes, a.Hosts = slices.Clone(a.Prefixes), slices.Clone(a.Hosts)
	slices.SortFunc(a.Prefixes, func(x, y netip.Prefix) int {
		if c := x.Addr().Compare(y.Addr()); c != 0 {
			return c
		}
		return x.Bits() - y.Bits()
	})
	a.Prefixes = slices.Compact(a.Prefixes)
	slices.Sort(a.Hosts)
	a.Hosts = slices.Compact(a.Hosts)
	return a
}

// Join is both lists' entries.
func (a Allowlist) Join(b Allowlist) Allowlist {
	return Allowlist{
		Prefixes: slices.Concat(a.Prefixes, b.Prefixes),
		Hosts:    slices.Concat(a.Hosts, b.Hosts),
	}.normal()
}

// Equal reports whether both lists allow the same entries.
func (a Allowlist) Equal(b Allowlist) bool {
	a, b = a.normal(), b.normal()
	return slices.Equal(a.Prefixes, b.Prefixes) && slices.Equal(a.Hosts, b.Hosts)
}

// String lists the entries as ParseAllowlist reads them.
func (a Allowlist) String() string {
	var parts []string
	for _, p := range a.Prefixes {
		parts = append(parts, p.String())
	}
	return strings.Join(append(parts, a.Hosts...), ", ")
}

// Policy decides which addresses may be connected to: everything but the
// denied ranges, except what the allowlist allows.
type Policy struct {
	Denied []Range
	Allow  Allowlist
}

// NewPolicy is DefaultDenied and the cluster's ranges, refused unless
// allow allows them. An allowed name reaches the cluster's ranges: a
// Service's name resolves into them.
func NewPolicy(cluster []netip.Prefix, allow Allowlist) Policy {
	denied := slices.Clone(DefaultDenied)
	for _, p := range cluster {
		denied = append(denied, Range{Prefix: p, Name: "cluster", ByName: true})
	}
	return Policy{Denied: denied, Allow: allow.normal()}
}

// AllowsHost reports whether host (a name, as the URL or the Channel gave
// it) is allowed by name: it may reach the refused blocks a name may reach
// (see Range.ByName).
func (p Policy) AllowsHost(host string) bool {
	h, ok := hostName(host)
	return ok && slices.Contains(p.Allow.Hosts, h)
}

// Check returns nil when addr may be connected to, and a *DeniedError
// otherwise, as for an address no name allow covers.
func (p Policy) Check(addr netip.Addr) error {
	if d := p.check(addr, false); d != nil {
		return d
	}
	return nil
}

// CheckDial returns nil when addr, which host resolved to (host is the
// name or address as the Channel wrote it), may be connected to, and a
// *DeniedError naming host otherwise. When the administrator allows host
// by name, addr may also be in a refused block a name may reach.
func (p Policy) CheckDial(host string, addr netip.Addr) error {
	if d := p.check(addr, p.AllowsHost(host)); d != nil {
		d.Host = host
		return d
	}
	return nil
}

// check is Check, with the blocks a name may reach allowed when byName.
// IPv4-mapped IPv6 addresses are checked as the IPv4 address they carry,
// and well-known NAT64 addresses as the IPv4 address the gateway connects
// to.
func (p Policy) check(addr netip.Addr, byName bool) *DeniedError {
	addr = addr.Unmap().WithZone("")
	if !addr.IsValid() {
		return &DeniedError{Addr: addr, Range: "invalid"}
	}
	if p.allows(addr) {
		return nil
	}
	if nat64.Contains(addr) {
		b := addr.As16()
		v4 := netip.AddrFrom4([4]byte(b[12:]))
		if denied := p.check(v4, byName); denied != nil {
			return &DeniedError{Addr: addr, Range: "NAT64 (to " + denied.Range + ")"}
		}
		return nil
	}
	for _, d := range p.Denied {
		if byName && d.ByName {
			continue // the name is allowed here; a strict block may still hold addr
		}
		if d.Prefix.Contains(addr) {
			return &DeniedError{Addr: addr, Range: d.Name}
		}
	}
	return nil
}

func (p Policy) allows(addr netip.Addr) bool {
	for _, a := range p.Allow.Prefixes {
		if a.Contains(addr) {
			return true
		}
	}
	return false
}

// DeniedError is a connection the guard refused before dialling. Its text
// starts with the EgressDenied reason and names the host as the Channel
// wrote it and the kind of block refused, never the address a name
// resolved to: a tenant must not read names through the manager's
// resolver, nor learn anything from the address, as nothing was sent
// there.
type DeniedError struct {
	// Host is the name or address the Channel gave ("" when only an
	// address was checked).
	Host string
	// Addr is the refused address, for the manager's own use; the error's
	// text never shows it.
	Addr netip.Addr
	// Range is what the refused block is: "loopback", "private", ...
	Range string
}

func (e *DeniedError) Error() string {
	var what string
	switch {
	case e.Host == "":
		what = "the address is"
	case isAddress(e.Host):
		what = e.Host + " is" // the Channel's own words: nothing resolved
	default:
		what = e.Host + " resolves to"
	}
	return fmt.Sprintf("%s: %s %s address, which the egress policy refuses unless the administrator allows it",
		v1.ReasonEgressDenied, what, article(e.Range))
}

// isAddress reports whether host is an IP address, not a name.
func isAddress(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

// article is name with "a" or "an" before it.
func article(name string) string {
	if name != "" && strings.ContainsRune("aeiouAEIOU", rune(name[0])) {
		return "an " + name
	}
	return "a " + name
}

// IsDenied reports whether err is, or wraps, a connection the guard refused.
func IsDenied(err error) bool {
	var d *DeniedError
	return errors.As(err, &d)
}
