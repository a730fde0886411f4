package httpserver

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/onsi/gomega"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/vigil-operator/vigil/internal/connlimit"
)

// reclaimServer serves 200 on loopback behind a limitListener of n slots
// on a fake clock. Its ReadHeaderTimeout is long, so that only reclaim
// frees a slot held by a connection that sends no headers. block, when
// set, holds each request until it is closed.
func reclaimServer(t *testing.T, n int, block chan struct{}) (*limitListener, *testingclock.FakeClock) {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sources, err := connlimit.NewPerSource(n, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Now())
	l := newLimitListener(ln, n, sources, clk)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			if block != nil {
				<-block
			}
		}),
		ConnState:         l.connState,
		ReadHeaderTimeout: time.Hour,
	}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l, clk
}

// rawConn is a client connection that reports when the server closes it.
type rawConn struct {
	net.Conn
	closed chan struct{}
	br     *bufio.Reader
}

// dial connects and sends what; a bound on every wait, not an assertion,
// keeps a failing test from hanging.
func dial(t *testing.T, l *limitListener, what string) *rawConn {
	t.Helper()
	c, err := new(net.Dialer).DialContext(t.Context(), "tcp4", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, what); err != nil {
		t.Fatal(err)
	}
	return &rawConn{Conn: c, closed: make(chan struct{}), br: bufio.NewReader(c)}
}

// silent opens a connection that sends half a request line and no more,
// as a client holding connections does, and returns once the server
// counts it among the new ones.
func silent(t *testing.T, l *limitListener) *rawConn {
	t.Helper()
	c := dial(t, l, "GET / HT")
	go func() {
		// Returns when the server closes it, or at the bound on the
		// wait, which is not the server's doing.
		if _, err := c.br.ReadByte(); !errors.Is(err, os.ErrDeadlineExceeded) {
			close(c.closed)
		}
	}()
	waitFor(t, func() bool { return slices.Contains(fresh(l), c.LocalAddr().String()) })
	return c
}

// answered sends a whole request on c and reads the answer.
func answered(t *testing.T, c *rawConn) {
	t.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: vigil\r\n\r\n"); err != nil {
		t.Fatalf("sending a request: %v", err)
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("answered %s", resp.Status)
	}
}

// fresh is the client addresses of the server's new connections, the
// oldest first.
func fresh(l *limitListener) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for e := l.fresh.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*limitedConn).RemoteAddr().String())
	}
	return out
}

// waitFor waits until cond holds: the server gets there on its own
// goroutines.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	gomega.NewWithT(t).Eventually(cond).WithTimeout(30*time.Second).WithPolling(time.Millisecond).
		Should(gomega.BeTrue(), "the server did not get there")
}

func closedByServer(t *testing.T, c *rawConn) {
	t.Helper()
	select {
	case <-c.closed:
	case <-time.After(30 * time.Second):
		t.Fatalf("the server has not closed %s", c.LocalAddr())
	}
}

// TestNewConnectionsWithoutHeadersAreReclaimed: near the cap, connections
// that have sent no request within HeaderGrace are closed, the oldest
// first, for clients that send one; before it, and far from the cap, they
// stay.
func TestNewConnectionsWithoutHeadersAreReclaimed(t *testing.T) {
	l, clk := reclaimServer(t, 8, nil) // high water: 7
	var held []*rawConn
	for range 7 {
		held = append(held, silent(t, l))
	}
	clk.Step(HeaderGrace)
	if got := len(fresh(l)); got != 7 {
		t.Fatalf("%d new connections left under the high water mark, want 7", got)
	}
	// An eighth client passes the high water mark: the oldest silent
	// connection, past its grace, makes room, and the client is served.
	client := dial(t, l, "")
	answered(t, client)
	closedByServer(t, held[0])
	if got, want := fresh(l), addrs(held[1:]); !slices.Equal(got, want) {
		t.Errorf("new connections %v, want %v: only the oldest closed", got, want)
	}
}

// TestEveryoneSilentWhenTheServerIsFull: with every slot held by
// connections within their grace, a client waits; when the oldest's grace
// ends, a timer reclaims it (no Accept or change of state comes to), and
// the client is served.
func TestEveryoneSilentWhenTheServerIsFull(t *testing.T) {
	l, clk := reclaimServer(t, 8, nil)
	var held []*rawConn
	for range 8 {
		held = append(held, silent(t, l))
		clk.Step(time.Millisecond) // each a little younger than the last
	}
	l.mu.Lock()
	open := l.open
	l.mu.Unlock()
	if open != 8 {
		t.Fatalf("%d connections open, want all 8 slots taken", open)
	}
	client := dial(t, l, "GET / HTTP/1.1\r\nHost: vigil\r\n\r\n")
	clk.Step(HeaderGrace)
	resp, err := http.ReadResponse(client.br, nil)
	if err != nil {
		t.Fatalf("the waiting client: %v", err)
	}
	_ = resp.Body.Close()
	closedByServer(t, held[0])
	if got := fresh(l); !slices.Equal(got[len(got)-4:], addrs(held[4:])) {
		t.Errorf("new connections %v, want the newest %v among them", got, addrs(held[4:]))
	}
}

// TestRequestsInProgressAreNotReclaimed: a connection whose request is in
// (its handler running) is never closed to make room, however long it
// takes.
func TestRequestsInProgressAreNotReclaimed(t *testing.T) {
	block := make(chan struct{})
	l, clk := reclaimServer(t, 8, block)
	var busy []*rawConn
	for range 7 {
		c := dial(t, l, "GET / HTTP/1.1\r\nHost: vigil\r\n\r\n")
		busy = append(busy, c)
	}
	waitFor(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.open == 7 && l.fresh.Len() == 0
	})
	clk.Step(time.Hour)
	// An eighth client passes the high water mark with nothing to
	// reclaim; the seven requests in progress finish.
	client := dial(t, l, "")
	close(block)
	answered(t, client)
	for _, c := range busy {
		resp, err := http.ReadResponse(c.br, nil)
		if err != nil {
			t.Fatalf("a request in progress lost its answer: %v", err)
		}
		_ = resp.Body.Close()
	}
}

func addrs(conns []*rawConn) []string {
	var out []string
	for _, c := range conns {
		out = append(out, c.LocalAddr().String())
	}
	return out
}

// TestNewConnectionsWithARequestWaitingStay: in a burst of new connections
// on busy cores the server may not read a request for longer than
// HeaderGrace. Near the cap, a new connection whose request waits unread
// in its socket is given another grace, where one that sent nothing is
// closed; once its bytes are read, it is closed after that grace if it
// sends no more.
func TestNewConnectionsWithARequestWaitingStay(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("only Linux tells a request waiting in a socket")
	}
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	sources, err := connlimit.NewPerSource(8, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Now())
	l := newLimitListener(ln, 8, sources, clk) // high water: 7
	// No server reads these: each is accepted and counted new, as the
	// server's Serve loop does before a goroutine reads it.
	accept := func(what string) (server net.Conn, client *rawConn) {
		client = dial(t, l, what)
		server, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		l.connState(server, http.StateNew)
		return server, client
	}
	waitingServer, waiting := accept("GET / HTTP/1.1\r\nHost: vigil\r\n\r\n")
	waitFor(t, func() bool { return requestWaiting(waitingServer.(*limitedConn).Conn) })
	_, silentClient := accept("")
	var rest []*rawConn
	for range 5 {
		_, c := accept("")
		rest = append(rest, c)
	}
	clk.Step(HeaderGrace + time.Second)
	_, last := accept("") // the eighth: past the high water, reclaim runs

	// The silent connection, the oldest after the waiting one, is closed.
	_ = silentClient.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := silentClient.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("the silent connection was not closed: %v", err)
	}
	// The waiting one is not closed: it has another grace, at the back
	// (with the eighth, which the reclaim in its Accept came before).
	_ = waiting.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := waiting.br.ReadByte(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the connection with a request waiting was closed: %v", err)
	}
	if f := fresh(l); !slices.Contains(f[len(f)-2:], waiting.LocalAddr().String()) {
		t.Fatalf("the connection with a request waiting is not at the back of the new ones: %v", f)
	}
	// The younger silent ones, within the high water now, stay.
	for _, c := range append(rest, last) {
		if !slices.Contains(fresh(l), c.LocalAddr().String()) {
			t.Fatalf("%s was reclaimed past the high water", c.LocalAddr())
		}
	}
	// Had the server read its bytes (half a request) and heard no more,
	// it would be closed after its second grace: read them here, as the
	// server's goroutine would, and let that grace pass with the cap
	// still near.
	buf := make([]byte, 64)
	if _, err := waitingServer.Read(buf); err != nil {
		t.Fatal(err)
	}
	clk.Step(HeaderGrace + time.Second)
	// Each new connection past the high water reclaims the oldest due
	// one: the five silent ones ahead of it, then it.
	for range 6 {
		_, _ = accept("")
	}
	_ = waiting.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := waiting.br.ReadByte(); !errors.Is(err, io.EOF) {
		t.Fatalf("a connection whose bytes were read and that sent no more was not closed: %v", err)
	}
}
