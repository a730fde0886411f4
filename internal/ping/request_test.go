package ping

import (
	"net"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/vigil-operator/vigil/internal/monitor"
)

const u = "5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a"

func TestParsePath(t *testing.T) {
	i := func(n int) *int { return &n }
	for _, tc := range []struct {
		path    string
		ok      bool
		msg     string
		uuid    string
		key     string
		slug    string
		kind    monitor.PingKind
		exit    *int
		badExit bool
	}{
		{path: u, ok: true, uuid: u, kind: monitor.PingSuccess},
		{path: u + "/", ok: true, uuid: u, kind: monitor.PingSuccess},
		{path: u + "/start", ok: true, uuid: u, kind: monitor.PingStart},
		{path: u + "/fail", ok: true, uuid: u, kind: monitor.PingFail},
		{path: u + "/log", ok: true, uuid: u, kind: monitor.PingLog},
		{path: u + "/0", ok: true, uuid: u, kind: monitor.PingSuccess, exit: i(0)},
		{path: u + "/1", ok: true, uuid: u, kind: monitor.PingFail, exit: i(1)},
		{path: u + "/255", ok: true, uuid: u, kind: monitor.PingFail, exit: i(255)},
		{path: u + "/007", ok: true, uuid: u, kind: monitor.PingFail, exit: i(7)},
		{path: u + "/256", ok: true, uuid: u, kind: monitor.PingSuccess, badExit: true},
		{path: u + "/99999999999999999999", ok: true, uuid: u, kind: monitor.PingSuccess, badExit: true},
		// The reference's routing quirks.
		{path: u + "/foo", ok: true, key: u, slug: "foo", kind: monitor.PingSuccess},
		{path: u + "/-1", ok: true, key: u, slug: "-1", kind: monitor.PingSuccess},
		{path: u + "/start/"},
		{path: "5D5F3E70-1C6D-4B6C-9C3A-1F0D2E3C4B5A"},
		{path: "abc"},
		{path: ""},
		// Slug forms.
		{path: "pingkey/backup", ok: true, key: "pingkey", slug: "backup", kind: monitor.PingSuccess},
		{path: "pingkey/backup/start", ok: true, key: "pingkey", slug: "backup", kind: monitor.PingStart},
		{path: "pingkey/backup/fail", ok: true, key: "pingkey", slug: "backup", kind: monitor.PingFail},
		{path: "pingkey/backup/log", ok: true, key: "pingkey", slug: "backup", kind: monitor.PingLog},
		{path: "pingkey/backup/3", ok: true, key: "pingkey", slug: "backup", kind: monitor.PingFail, exit: i(3)},
		{path: "pingkey/backup/300", ok: true, key: "pingkey", slug: "backup", kind: monitor.PingSuccess, badExit: true},
		{path: "pingkey/backup/"},
		{path: "pingkey/backup/other"},
		{path: "pingkey/a/b/c"},
		{path: "pingkey/back.up"},
		{path: "pingkey/Backup", ok: true, msg: "invalid url format", key: "pingkey", slug: "Backup", kind: monitor.PingSuccess},
	} {
		got, msg, ok := ParsePath(tc.path)
		if ok != tc.ok || msg != tc.msg {
			t.Errorf("%q: ok=%v msg=%q, want ok=%v msg=%q", tc.path, ok, msg, tc.ok, tc.msg)
			continue
		}
		if !ok {
			continue
		}
		if got.UUID != tc.uuid || got.PingKey != tc.key || got.Slug != tc.slug || got.Kind != tc.kind || got.BadExitStatus != tc.badExit {
			t.Errorf("%q: got %+v", tc.path, got)
		}
		if (got.ExitStatus == nil) != (tc.exit == nil) || (got.ExitStatus != nil && *got.ExitStatus != *tc.exit) {
			t.Errorf("%q: exit status %v, want %v", tc.path, got.ExitStatus, tc.exit)
		}
	}
}

func TestParseRID(t *testing.T) {
	for _, tc := range []struct {
		values  []string
		present bool
		want    string
		ok      bool
	}{
		{nil, false, "", true},
		{[]string{""}, true, "", false},
		{[]string{"not-a-uuid"}, true, "", false},
		{[]string{"5D5F3E70-1C6D-4B6C-9C3A-1F0D2E3C4B5A"}, true, u, true},
		{[]string{"bad", u}, true, u, true},
		{[]string{u + "0"}, true, "", false},
	} {
		got, ok := ParseRID(tc.values, tc.present)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ParseRID(%v) = %q, %v; want %q, %v", tc.values, got, ok, tc.want, tc.ok)
		}
	}
}

func TestTruncateRunes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"GET", 32, "GET"},
		{"", 5, ""},
		{"abcdef", 3, "abc"},
		{"abc", 3, "abc"},
		{"abc", 0, ""},
		{strings.Repeat("😀", 201), 200, strings.Repeat("😀", 200)}, // characters, not bytes
		{strings.Repeat("é", 200), 200, strings.Repeat("é", 200)},
		{"a\xffb", 3, "a\ufffdb"}, // PostgreSQL stores only UTF-8
		{"a\xff\xfeb", 2, "a\ufffd"},
	} {
		if got := truncateRunes(tc.in, tc.n); got != tc.want {
			t.Errorf("truncateRunes(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}

func FuzzTruncateRunes(f *testing.F) {
	f.Add("GET", 32)
	f.Add("a\xffb😀", 2)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 {
			return
		}
		got := truncateRunes(s, n)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > n {
			t.Fatalf("truncateRunes(%q, %d) = %q", s, n, got)
		}
		if utf8.ValidString(s) && !strings.HasPrefix(s, got) {
			t.Fatalf("truncateRunes(%q, %d) = %q is not a prefix", s, n, got)
		}
	})
}

func TestClientAddr(t *testing.T) {
	trusted, err := ParseTrustedProxies("10.0.0.0/8, 127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, remote, xff, want string
	}{
		{"no header", "192.0.2.1:5555", "", "192.0.2.1"},
		{"untrusted peer: header ignored", "192.0.2.1:5555", "1.1.1.1", "192.0.2.1"},
		{"one entry", "10.1.2.3:5555", "1.1.1.1", "1.1.1.1"},
		{"the proxy appended to what the client wrote", "10.1.2.3:5555", "6.6.6.6, 1.1.1.1", "1.1.1.1"},
		{"trusted hops are skipped", "10.1.2.3:5555", "6.6.6.6, 1.1.1.1, 10.9.9.9, 127.0.0.1", "1.1.1.1"},
		{"a trusted hop written as IPv4 in IPv6", "10.1.2.3:5555", "1.1.1.1, ::ffff:10.0.0.7", "1.1.1.1"},
		{"a trusted hop with a port", "10.1.2.3:5555", "1.1.1.1, 10.0.0.7:443", "1.1.1.1"},
		{"every entry trusted: the leftmost", "10.1.2.3:5555", "10.0.0.1, 10.0.0.2", "10.0.0.1"},
		{"empty entries are skipped", "10.1.2.3:5555", "1.1.1.1, , ", "1.1.1.1"},
		{"only commas: the peer", "10.1.2.3:5555", " , ,", "10.1.2.3"},
		{"lines joined", "10.1.2.3:5555", "6.6.6.6,1.1.1.1,10.0.0.9", "1.1.1.1"},
		{"IPv4 port stripped", "10.1.2.3:5555", "1.1.1.1:1234", "1.1.1.1"},
		{"IPv6 entry", "127.0.0.1:5555", "2001::1", "2001::1"},
		{"IPv4 in IPv6 kept as written", "127.0.0.1:5555", "::ffff:1.1.1.1", "::ffff:1.1.1.1"},
		{"trusted peer as IPv4 in IPv6", "[::ffff:10.0.0.1]:80", "3.3.3.3", "3.3.3.3"},
		{"untrusted IPv6 peer", "[2001:db8::1]:80", "3.3.3.3", "2001:db8::1"},
		{"what is no address stops the walk, cut", "10.1.2.3:5555", "1.1.1.1, " + strings.Repeat("x", 100), strings.Repeat("x", 64)},
		{"a forged long first entry is not read", "10.1.2.3:5555", strings.Repeat("x", 100) + ", 1.1.1.1", "1.1.1.1"},
		{"zone cut", "10.1.2.3:5555", "fe80::1%" + strings.Repeat("z", 100), "fe80::1%" + strings.Repeat("z", 56)},
		{"not UTF-8", "10.1.2.3:5555", "caf\xe9", "caf\ufffd"},
	} {
		if got := ClientAddr(tc.remote, tc.xff, trusted); got != tc.want {
			t.Errorf("%s: ClientAddr(%q, %q) = %q, want %q", tc.name, tc.remote, tc.xff, got, tc.want)
		}
	}
	if _, err := ParseTrustedProxies("10.0.0.0/33"); err == nil {
		t.Error("a bad CIDR must be rejected")
	}
	if p, _ := ParseTrustedProxies(""); len(p) != 0 {
		t.Error("an empty list trusts nobody")
	}
}

// FuzzClientAddr: what a client writes in X-Forwarded-For before what its
// trusted proxies appended never changes the address a ping is recorded
// from, once the proxies named one that is not theirs; and the address is
// valid UTF-8 of at most 64 characters.
func FuzzClientAddr(f *testing.F) {
	trusted, err := ParseTrustedProxies("10.0.0.0/8, 127.0.0.1, 2001:db8::/32")
	if err != nil {
		f.Fatal(err)
	}
	f.Add("10.1.2.3:5555", "1.1.1.1", "6.6.6.6")
	f.Add("10.1.2.3:5555", "1.1.1.1, 10.0.0.2", "10.0.0.1")
	f.Add("127.0.0.1:80", "[2001:db8::1]:80, 1.1.1.1:1", "x")
	f.Add("192.0.2.1:80", "1.1.1.1", "")
	f.Add("10.0.0.1:1", " , ", "2.2.2.2")
	f.Fuzz(func(t *testing.T, remote, xff, forged string) {
		got := ClientAddr(remote, xff, trusted)
		if !utf8.ValidString(got) || utf8.RuneCountInString(got) > maxRemoteAddr {
			if host, _, err := net.SplitHostPort(remote); (err == nil && got == host) || got == remote {
				return // the socket's own address, as the OS wrote it
			}
			t.Fatalf("ClientAddr(%q, %q) = %q: not a bounded UTF-8 string", remote, xff, got)
		}
		if isTrusted(entryHost(got), trusted) {
			return // no client named yet: what comes before may name it
		}
		if again := ClientAddr(remote, forged+","+xff, trusted); again != got {
			t.Fatalf("ClientAddr(%q, %q) = %q, but %q with %q written before it", remote, xff, got, again, forged)
		}
	})
}
