package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// envProxy is a proxy that every test of this package finds in its
// environment (HTTP_PROXY and the rest, set before anything reads them:
// net/http reads them once per process). It records the requests it is
// asked to carry and answers each one 200: a guard that used it would
// reach through it whatever the URL names.
var envProxy struct {
	*httptest.Server
	mu   sync.Mutex
	urls []string
}

func TestMain(m *testing.M) {
	envProxy.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		envProxy.mu.Lock()
		envProxy.urls = append(envProxy.urls, r.Method+" "+r.URL.String())
		envProxy.mu.Unlock()
		_, _ = io.WriteString(w, "carried by the proxy")
	}))
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"} {
		_ = os.Setenv(k, envProxy.URL)
	}
	_ = os.Unsetenv("NO_PROXY")
	_ = os.Unsetenv("no_proxy")
	code := m.Run()
	envProxy.Close()
	os.Exit(code)
}

func proxied() []string {
	envProxy.mu.Lock()
	defer envProxy.mu.Unlock()
	return append([]string(nil), envProxy.urls...)
}

// listener is a TCP listener on 127.0.0.1 that records the connections it
// accepts, in order.
type listener struct {
	net.Listener
	mu       sync.Mutex
	accepted []net.Conn
	probed   int // connections accepted up to the last probe
	cond     *sync.Cond
}

func listen(t *testing.T) *listener {
	t.Helper()
	l, err := new(net.ListenConfig).Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening on loopback: %v", err)
	}
	ln := &listener{Listener: l}
	ln.cond = sync.NewCond(&ln.mu)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ln.mu.Lock()
			ln.accepted = append(ln.accepted, c)
			ln.cond.Broadcast()
			ln.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		ln.mu.Lock()
		defer ln.mu.Unlock()
		for _, c := range ln.accepted {
			_ = c.Close()
		}
	})
	return ln
}

// nothingAccepted proves that the listener accepted no connection since
// the last probe: it connects itself, and its own connection must be the
// next one accepted (connections are accepted in the order they were made).
func (ln *listener) nothingAccepted(t *testing.T) {
	t.Helper()
	probe, err := (&net.Dialer{}).DialContext(t.Context(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("probing the listener: %v", err)
	}
	defer probe.Close()
	ln.mu.Lock()
	defer ln.mu.Unlock()
	for len(ln.accepted) <= ln.probed {
		ln.cond.Wait()
	}
	if next := ln.accepted[ln.probed].RemoteAddr().String(); next != probe.LocalAddr().String() {
		t.Fatalf("the listener accepted a connection from %s before the probe from %s", next, probe.LocalAddr())
	}
	ln.probed++
}

// TestNameResolvingToLoopbackIsRefused: "localhost" looks harmless, but it
// resolves to loopback addresses; the guard checks the address it would
// dial and never dials it.
func TestNameResolvingToLoopbackIsRefused(t *testing.T) {
	ln := listen(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	g := New(Options{})

	conn, err := g.DialContext(t.Context(), "team-a", "tcp", net.JoinHostPort("localhost", port))
	if err == nil {
		_ = conn.Close()
		t.Fatal("dialled localhost, which resolves to loopback")
	}
	var denied *DeniedError
	if !errors.As(err, &denied) || !denied.Addr.IsLoopback() {
		t.Fatalf("dialling localhost: %v, want a refused loopback address", err)
	}
	if want := "EgressDenied: localhost resolves to a loopback address, "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start %q", err, want)
	}
	noAddress(t, err, denied.Addr)
	ln.nothingAccepted(t)

	// The same through HTTP: the request never leaves.
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://localhost:"+port+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: g.Transport("team-a")}).Do(req)
	if err == nil {
		_ = resp.Body.Close()
	}
	if !IsDenied(err) {
		t.Fatalf("GET http://localhost: %v, want EgressDenied", err)
	}
	noAddress(t, err, netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1"))
	ln.nothingAccepted(t)
}

// noAddress fails the test if err's text shows any of addrs: a tenant
// must not read what a name resolves to through the manager's resolver.
func noAddress(t *testing.T, err error, addrs ...netip.Addr) {
	t.Helper()
	for _, a := range addrs {
		if strings.Contains(err.Error(), a.String()) {
			t.Errorf("error %q shows the address %s", err, a)
		}
	}
}

// TestRefusalSaysNothingOfTheAddress: a refused address gives the same
// answer whether something listens there or not, as it is never dialled.
func TestRefusalSaysNothingOfTheAddress(t *testing.T) {
	open := listen(t)
	closed := listen(t)
	closedAddr := closed.Addr().String()
	_ = closed.Close()
	g := New(Options{})
	text := func(addr string) string {
		_, port, _ := net.SplitHostPort(addr)
		_, err := g.DialContext(t.Context(), "team-a", "tcp", "127.0.0.1:"+port)
		if err == nil {
			t.Fatalf("dialled %s", addr)
		}
		return err.Error()
	}
	if a, b := text(open.Addr().String()), text(closedAddr); a != b {
		t.Errorf("a listening address answers %q, a closed one %q", a, b)
	}
	open.nothingAccepted(t)
}

// TestFailedDialsNameNoResolvedAddress: a name allowed to reach an address
// where nothing listens, or one that does not resolve, fails saying the
// name as it was written, never the address it resolved to or the
// resolver's.
func TestFailedDialsNameNoResolvedAddress(t *testing.T) {
	closed := listen(t)
	_, port, _ := net.SplitHostPort(closed.Addr().String())
	_ = closed.Close()
	g := New(Options{Allow: mustAllow(t, "localhost, 127.0.0.0/8, ::1")})
	_, err := g.DialContext(t.Context(), "team-a", "tcp", net.JoinHostPort("localhost", port))
	if err == nil || IsDenied(err) {
		t.Fatalf("dial = %v, want a refused connection", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "dial tcp localhost:"+port+": ") || strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "::1") {
		t.Errorf("error %q names more than localhost:%s", msg, port)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %v does not unwrap to ECONNREFUSED", err)
	}

	_, err = g.DialContext(t.Context(), "team-a", "tcp", "vigil-no-such-name.invalid:25")
	var dns *net.DNSError
	if !errors.As(err, &dns) || dns.Server != "" || !strings.HasPrefix(err.Error(), "dial tcp vigil-no-such-name.invalid:25: ") {
		t.Errorf("dial of a name that does not resolve = %v, want a DNS error naming no server", err)
	}
}

// TestAllowedByNameOrRange: an allowed range connects, and only in its
// namespace; an allowed host name does not reach loopback (whoever
// controls a name chooses what it resolves to), unless a range allows it
// too. (What a name reaches, private and cluster addresses, is
// TestNameAllow's.)
func TestAllowedByNameOrRange(t *testing.T) {
	ln := listen(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	for _, tc := range []struct {
		name      string
		opts      Options
		namespace string
		address   string
		allowed   bool
	}{
		{"by name: loopback stays refused", Options{Allow: mustAllow(t, "localhost")}, "team-a", "localhost", false},
		{"by name and range", Options{Allow: mustAllow(t, "localhost, 127.0.0.0/8, ::1")}, "team-a", "localhost", true},
		{"by name, another name refused", Options{Allow: mustAllow(t, "localhost")}, "team-a", "127.0.0.1", false},
		{"by range", Options{Allow: mustAllow(t, "127.0.0.0/8")}, "team-a", "127.0.0.1", true},
		{"by range, through a name", Options{Allow: Loopback}, "team-a", "localhost", true},
		{"by namespace", Options{NamespaceAllow: teamA("127.0.0.0/8")}, "team-a", "127.0.0.1", true},
		{"another namespace's", Options{NamespaceAllow: teamA("127.0.0.0/8")}, "team-b", "127.0.0.1", false},
		{"by name in the namespace: loopback stays refused", Options{NamespaceAllow: teamA("localhost")}, "team-a", "localhost", false},
		{"by name and range in the namespace", Options{NamespaceAllow: teamA("localhost, 127.0.0.0/8, ::1")}, "team-a", "localhost", true},
		{"by name and range in another namespace", Options{NamespaceAllow: teamA("localhost, 127.0.0.0/8, ::1")}, "team-b", "localhost", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := New(tc.opts).DialContext(t.Context(), tc.namespace, "tcp", net.JoinHostPort(tc.address, port))
			if err == nil {
				_ = conn.Close()
			}
			if tc.allowed && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.allowed && !IsDenied(err) {
				t.Errorf("dial = %v, want EgressDenied", err)
			}
		})
	}
}

func teamA(allow string) func(string) Allowlist {
	a, err := ParseAllowlist(allow)
	if err != nil {
		panic(err)
	}
	return func(ns string) Allowlist {
		if ns == "team-a" {
			return a
		}
		return Allowlist{}
	}
}

// TestKeptAliveConnectionsStayInTheirNamespace: a connection team-a's
// allowlist let through, kept alive after its request, is not reused for
// team-b (which may not connect there), nor for team-a once its allowlist
// no longer allows it.
func TestKeptAliveConnectionsStayInTheirNamespace(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.Path)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	requests := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
	var allowMu sync.Mutex
	allowA := mustAllow(t, "127.0.0.0/8")
	g := New(Options{NamespaceAllow: func(ns string) Allowlist {
		allowMu.Lock()
		defer allowMu.Unlock()
		if ns == "team-a" {
			return allowA
		}
		return Allowlist{}
	}})
	get := func(ns, path string) error {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: g.Transport(ns)}).Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.Body.Close() // the connection goes back to the pool
	}

	if err := get("team-a", "/a"); err != nil {
		t.Fatalf("team-a, allowed: %v", err)
	}
	if err := get("team-b", "/b"); !IsDenied(err) {
		t.Errorf("team-b = %v, want EgressDenied (and no use of team-a's connection)", err)
	}
	allowMu.Lock()
	allowA = Allowlist{}
	allowMu.Unlock()
	if err := get("team-a", "/a-again"); !IsDenied(err) {
		t.Errorf("team-a after its allow was removed = %v, want EgressDenied", err)
	}
	if got := requests(); fmt.Sprint(got) != "[/a]" {
		t.Errorf("the server received %v, want only team-a's first request", got)
	}
}

// TestNoProxyFromTheEnvironment: with HTTP_PROXY and HTTPS_PROXY set (see
// TestMain) to a proxy the guard would allow, a request to a refused
// address is still refused, and the proxy carries nothing.
func TestNoProxyFromTheEnvironment(t *testing.T) {
	target := "http://192.0.2.10/metadata" // refused: documentation range
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := http.ProxyFromEnvironment(req); err != nil || p == nil {
		t.Fatalf("the environment names no proxy for %s (%v, %v): this test would prove nothing", target, p, err)
	}
	g := New(Options{Allow: mustAllow(t, "127.0.0.0/8")}) // the proxy's address is allowed
	for _, u := range []string{target, "https://192.0.2.10/metadata"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u, nil)
		resp, err := (&http.Client{Transport: g.Transport("team-a"), Timeout: 10 * time.Second}).Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		var ue *url.Error
		if !IsDenied(err) || !errors.As(err, &ue) {
			t.Errorf("GET %s = %v, want EgressDenied", u, err)
		}
	}
	if got := proxied(); len(got) > 0 {
		t.Errorf("the environment's proxy carried %v", got)
	}
}

func TestOnlyTCP(t *testing.T) {
	g := New(Options{Allow: mustAllow(t, "0.0.0.0/0, ::/0")})
	for _, network := range []string{"unix", "udp", "ip4:icmp"} {
		if _, err := g.DialContext(context.Background(), "team-a", network, "/run/something.sock"); err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("dial %s = %v, want refused", network, err)
		}
	}
}

// TestIdlePoolsAreDropped: a namespace's pool (its transport, with its
// kept-alive connections) is dropped once unused for IdleConnTimeout, and
// its idle connections closed, so the guard does not keep a transport for
// every namespace it ever delivered for; a pool in use stays.
func TestIdlePoolsAreDropped(t *testing.T) {
	var mu sync.Mutex
	remote := map[string]string{} // path -> the client's address
	closed := make(chan string, 16)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		mu.Lock()
		remote[r.URL.Path] = r.RemoteAddr
		mu.Unlock()
	}))
	srv.Config.ConnState = func(c net.Conn, state http.ConnState) {
		if state == http.StateClosed {
			closed <- c.RemoteAddr().String()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	clk := testingclock.NewFakeClock(time.Now())
	g := New(Options{Allow: Loopback, Clock: clk})
	get := func(ns string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/"+ns, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: g.Transport(ns)}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", ns, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close() // the connection stays, idle, in ns's pool
	}
	pools := func() string {
		g.mu.Lock()
		defer g.mu.Unlock()
		var out []string
		for ns := range g.pools {
			out = append(out, ns)
		}
		slices.Sort(out)
		return strings.Join(out, " ")
	}
	// closedConn waits for the server to see the connection of ns's
	// request closed. (A bound on the wait, not an assertion.)
	closedConn := func(ns string) {
		t.Helper()
		mu.Lock()
		want := remote["/"+ns]
		mu.Unlock()
		bound := time.After(30 * time.Second)
		for {
			select {
			case c := <-closed:
				if c == want {
					return
				}
				t.Errorf("a connection other than %s's was closed", ns)
			case <-bound:
				t.Fatalf("%s's idle connection is still open", ns)
			}
		}
	}

	get("team-a")
	clk.Step(IdleConnTimeout / 2)
	get("team-b")
	clk.Step(IdleConnTimeout / 2)
	g.Transport("team-c")
	if got := pools(); got != "team-b team-c" {
		t.Fatalf("pools %q, want team-a's, unused for IdleConnTimeout, dropped", got)
	}
	closedConn("team-a")

	// Pools go at most once per IdleConnTimeout: team-b, unused for one
	// and a half, goes at the next sweep.
	clk.Step(IdleConnTimeout / 2)
	g.Transport("team-c")
	if got := pools(); got != "team-b team-c" {
		t.Errorf("pools %q between sweeps", got)
	}
	clk.Step(IdleConnTimeout / 2)
	g.Transport("team-c")
	if got := pools(); got != "team-c" {
		t.Fatalf("pools %q, want team-b's dropped", got)
	}
	closedConn("team-b")

	// A thousand namespaces delivered once leave no pool behind.
	for i := range 1000 {
		g.Transport(fmt.Sprintf("ns-%d", i))
	}
	clk.Step(IdleConnTimeout)
	g.Transport("team-c")
	if got := pools(); got != "team-c" {
		t.Errorf("%d pools after a thousand namespaces went quiet, want team-c's", len(strings.Fields(got)))
	}
	// A dropped namespace delivers again, through a new pool.
	get("team-a")
	select {
	case c := <-closed:
		t.Errorf("connection %s closed; no pool that held one was dropped", c)
	default:
	}
}
