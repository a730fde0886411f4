package servertest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

// heldConn is a connection a test holds open after one request.
type heldConn struct {
	net.Conn
	// answered: the server answered the request; otherwise it refused
	// (closed) the connection.
	answered bool
	// closed is closed once the server has closed the connection (or
	// the test has).
	closed chan struct{}
}

// held is the connections each test holds.
var held = struct {
	sync.Mutex
	by map[testing.TB][]*heldConn
}{by: map[testing.TB][]*heldConn{}}

// hold records a test's connection, to be released when the test ends.
func hold(tb testing.TB, h *heldConn) {
	held.Lock()
	defer held.Unlock()
	if _, ok := held.by[tb]; !ok {
		tb.Cleanup(func() { release(tb) })
	}
	held.by[tb] = append(held.by[tb], h)
}

// release ends a test's connections as a client does, and waits until the
// server has closed each, so that the next test finds its slots free.
func release(tb testing.TB) {
	held.Lock()
	conns := held.by[tb]
	delete(held.by, tb)
	held.Unlock()
	for _, h := range conns {
		_ = h.Conn.(*net.TCPConn).CloseWrite()
	}
	bound, expired := time.After(60*time.Second), false
	for _, h := range conns {
		if !expired {
			select {
			case <-h.closed:
			case <-bound:
				expired = true
				tb.Errorf("the server has not closed every connection its client ended")
			}
		}
		_ = h.Close()
	}
}

// openConn connects from local, sends one request and reads its answer,
// and keeps the connection open, as a keep-alive client does; then it
// watches for the server closing it. It is released when the test ends. It
// may be called from any goroutine.
func openConn(tb testing.TB, local, addr string) *heldConn {
	h := &heldConn{closed: make(chan struct{})}
	c, err := dialFrom(local, addr)
	if err != nil {
		// A connection the server refuses at once may be reset before
		// the dial returns.
		if !errors.Is(err, syscall.ECONNRESET) {
			tb.Errorf("dialing from %s: %v", local, err)
		}
		close(h.closed)
		return h
	}
	h.Conn = c
	hold(tb, h)
	// A bound on the wait, not an assertion: where the server leaves a
	// connection unanswered, the test fails rather than hangs.
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	if _, err := io.WriteString(c, "GET /api/v3/status/ HTTP/1.1\r\nHost: vigil\r\n\r\n"); err == nil {
		if resp, err := http.ReadResponse(br, nil); err == nil {
			_, err = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			h.answered = err == nil && resp.StatusCode == http.StatusOK
		}
	}
	_ = c.SetDeadline(time.Time{})
	go func() {
		_, _ = br.ReadByte() // returns once the connection is closed
		close(h.closed)
	}()
	return h
}

// openConns opens n connections from local at once.
func openConns(tb testing.TB, local, addr string, n int) []*heldConn {
	conns := make([]*heldConn, n)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() { conns[i] = openConn(tb, local, addr) })
	}
	wg.Wait()
	return conns
}

func answered(conns []*heldConn) int {
	n := 0
	for _, c := range conns {
		if c.answered {
			n++
		}
	}
	return n
}

func closedByServer(conns []*heldConn) []int {
	var out []int
	for i, c := range conns {
		select {
		case <-c.closed:
			out = append(out, i)
		default:
		}
	}
	return out
}

// expectPingsAnswered pings the suite's check from each local address.
func expectPingsAnswered(g *gomega.WithT, s *fixture, locals ...string) {
	for _, local := range locals {
		r, err := sendFrom(local, s.addr, http.MethodGet, "/ping/"+s.uuid, "", nil)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "a ping from %s", local)
		g.Expect(r.StatusCode).To(gomega.Equal(http.StatusOK), "a ping from %s", local)
	}
}

// TestConnectionsPerSource: one client that opens more connections than
// the whole server takes holds its cap of them, and is refused the rest at
// once, while other clients' pings are answered and a trusted proxy holds
// more than the cap.
func TestConnectionsPerSource(t *testing.T) {
	s := suite(t)
	g := gomega.NewWithT(t)
	hog := openConns(t, "127.0.0.2", s.addr, maxConnections+50)
	g.Expect(answered(hog)).To(gomega.Equal(perSource), "connections of one address served")

	// A client of its own, and a trusted proxy, are served meanwhile.
	expectPingsAnswered(g, s, "127.0.0.3", "127.0.0.1")
	proxy := openConns(t, "127.0.0.1", s.addr, perSource+20)
	g.Expect(answered(proxy)).To(gomega.Equal(perSource+20), "connections of a trusted proxy served")

	// Once one of its connections closes, the client may open another.
	for _, c := range hog {
		if c.answered {
			_ = c.Close()
			break
		}
	}
	g.Eventually(func() bool { return openConn(t, "127.0.0.2", s.addr).answered }).Should(gomega.BeTrue())
}

// TestIdleReclaim: clients holding idle keep-alive connections past seven
// eighths of the server's cap see the longest idle of them closed, and new
// clients are served, though together they open more connections than the
// server takes.
func TestIdleReclaim(t *testing.T) {
	s := suite(t)
	g := gomega.NewWithT(t)
	// Eight clients, each under its cap, open 800 connections one after
	// another (so that they go idle in that order) and leave them idle.
	var old []*heldConn
	for client := range 8 {
		for range perSource {
			old = append(old, openConn(t, fmt.Sprintf("127.0.1.%d", client+1), s.addr))
		}
	}
	g.Expect(answered(old)).To(gomega.Equal(len(old)))
	g.Expect(closedByServer(old)).To(gomega.BeEmpty(), "under the high water mark, idle connections stay")

	// Three more clients open 300 more at once: past the cap of 1,024,
	// served as the oldest idle connections are closed.
	var recent []*heldConn
	for client := range 3 {
		recent = append(recent, openConns(t, fmt.Sprintf("127.0.2.%d", client+1), s.addr, perSource)...)
	}
	g.Expect(answered(recent)).To(gomega.Equal(len(recent)))
	open := len(old) + len(recent)
	g.Eventually(func() int { return len(closedByServer(old)) }).Should(gomega.BeNumerically(">=", open-highWater))
	g.Expect(closedByServer(recent)).To(gomega.BeEmpty(), "the newer idle connections stay")
	// The oldest went first: those that went idle first are all closed,
	// and the newest half of the old ones all stay.
	closed := closedByServer(old)
	g.Expect(closed).To(gomega.ContainElements(indexes(0, 150)), "the longest idle are closed")
	g.Expect(closed).NotTo(gomega.ContainElement(gomega.BeNumerically(">=", len(old)/2)))

	expectPingsAnswered(g, s, "127.0.0.3", "127.0.0.1")
}

func indexes(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
