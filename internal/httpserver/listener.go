package httpserver

import (
	"container/list"
	"net"
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/vigil-operator/vigil/internal/connlimit"
)

// DefaultMaxConnections bounds the open connections: enough for the ping
// benchmark's burst of 4,000 clients at once, and at most ~150 MiB of
// memory even if every one of them sends the largest headers allowed.
const DefaultMaxConnections = 4096

// DefaultMaxConnectionsPerSource bounds the open connections of one source
// address: a sixteenth of the default total, far more than one client (a
// ping is one short request) or the CronJobs of one node open at once, and
// few enough that one pod holding connections leaves the others most of
// the server.
const DefaultMaxConnectionsPerSource = 256

// HeaderGrace is how long a new connection may take to send its first
// request's headers while the server is near its cap; past it, the
// connection may be closed for a client that waits. Clients send their
// headers as soon as they connect, within milliseconds in a cluster; only
// a client holding connections it does not use (or trickling its headers)
// takes longer. Far from the cap, ReadHeaderTimeout alone bounds it.
const HeaderGrace = 2 * time.Second

// limitListener bounds the server's connections three ways:
//   - at most cap(slots) are open: past that, Accept waits for one to
//     close, and new clients wait in the kernel's backlog;
//   - at most perSource's cap from one address (trusted proxies exempt):
//     one more is closed as soon as it is accepted, so it holds no slot
//     that other clients wait for;
//   - while more than highWater are open, idle keep-alive connections are
//     closed, the longest idle first, and then new connections that have
//     not sent their first request's headers within HeaderGrace, the
//     oldest first, so that clients holding connections they do not use
//     cannot keep new clients waiting for a slot. (HTTP allows a server
//     to close an idle connection at any time; clients reconnect.) A new
//     connection whose bytes wait unread in its socket gets another grace:
//     the server is behind, not the client (on Linux, which can tell).
//
// A request whose headers are in is never interrupted: a client that
// trickles its body holds its slot until ReadTimeout.
type limitListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
	perSource *connlimit.PerSource
	highWater int
	clock     clock.WithDelayedExecution

	mu   sync.Mutex
	open int
	idle list.List // of *limitedConn, the longest idle first
	// fresh are the connections that have sent no complete request yet
	// (http.StateNew), the oldest first.
	fresh list.List
	// timer, while set, reclaims once the oldest fresh connection has had
	// its HeaderGrace: when every slot is taken, no Accept or change of
	// state may come to do it.
	timer clock.Timer
}

func newLimitListener(l net.Listener, n int, perSource *connlimit.PerSource, clk clock.WithDelayedExecution) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), closed: make(chan struct{}),
		perSource: perSource, highWater: n - n/8, clock: clk}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		select {
		case l.slots <- struct{}{}:
		case <-l.closed:
			return nil, net.ErrClosed
		}
		c, err := l.Listener.Accept()
		if err != nil {
			<-l.slots
			return nil, err
		}
		uncount, ok := l.perSource.Take(c.RemoteAddr())
		if !ok {
			connlimit.Refuse(c)
			<-l.slots
			continue
		}
		lc := &limitedConn{Conn: c, l: l, uncount: uncount}
		l.mu.Lock()
		l.open++
		reclaimed := l.reclaim()
		l.mu.Unlock()
		closeAll(reclaimed)
		return lc, nil
	}
}

// Close also ends an Accept that waits for a slot.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.closed) })
	l.mu.Lock()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.mu.Unlock()
	return l.Listener.Close()
}

// connState is the server's ConnState hook: it keeps the idle connections
// in the order they became idle and the new ones in the order they came,
// and reclaims them when the server is near its cap.
func (l *limitListener) connState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	l.forget(c)
	var reclaimed []*limitedConn
	switch state {
	case http.StateIdle:
		c.idle = l.idle.PushBack(c)
		reclaimed = l.reclaim()
	case http.StateNew:
		// The server reports StateNew once, before it reads anything,
		// and StateActive only once the request's headers are in.
		c.since = l.clock.Now()
		c.fresh = l.fresh.PushBack(c)
		reclaimed = l.reclaim()
	}
	l.mu.Unlock()
	closeAll(reclaimed)
}

// reclaim takes, for closing, the connections past the high water mark
// that hold a slot without a request: the longest idle first, then the
// new ones that have not sent their headers within HeaderGrace, the
// oldest first. While new connections remain that may be due later, it
// sets the timer to come back then. l.mu is held.
func (l *limitListener) reclaim() []*limitedConn {
	var out []*limitedConn
	take := func(c *limitedConn) {
		l.forget(c)
		// Uncounted now, so that the next call, before these are
		// closed, does not take more.
		c.reclaimed = true
		l.open--
		out = append(out, c)
	}
	for l.open > l.highWater && l.idle.Len() > 0 {
		take(l.idle.Front().Value.(*limitedConn))
	}
	now := l.clock.Now()
	for l.open > l.highWater && l.fresh.Len() > 0 {
		c := l.fresh.Front().Value.(*limitedConn)
		if wait := c.since.Add(HeaderGrace).Sub(now); wait > 0 {
			if l.timer == nil {
				// In a goroutine of its own: a fake clock runs the
				// function while it holds its lock, which Now takes.
				l.timer = l.clock.AfterFunc(wait, func() { go l.reclaimLater() })
			}
			break
		}
		if requestWaiting(c.Conn) {
			// The client has sent bytes the server has not read yet: a
			// burst of new connections on busy cores. It gets another
			// grace from now, at the back; by then the server has read
			// them, and a client that sent only part of its headers is
			// one that sends no more.
			c.since = now
			l.fresh.MoveToBack(c.fresh)
			continue
		}
		take(c)
	}
	return out
}

// reclaimLater is the timer's: it reclaims what has become due.
func (l *limitListener) reclaimLater() {
	l.mu.Lock()
	l.timer = nil
	var reclaimed []*limitedConn
	select {
	case <-l.closed:
	default:
		reclaimed = l.reclaim()
	}
	l.mu.Unlock()
	closeAll(reclaimed)
}

// forget takes c off the idle and fresh lists. l.mu is held.
func (l *limitListener) forget(c *limitedConn) {
	if c.idle != nil {
		l.idle.Remove(c.idle)
		c.idle = nil
	}
	if c.fresh != nil {
		l.fresh.Remove(c.fresh)
		c.fresh = nil
	}
}

// closeAll closes connections outside l.mu (Close takes it).
func closeAll(conns []*limitedConn) {
	for _, c := range conns {
		_ = c.Close()
	}
}

// limitedConn gives its slot back when closed.
type limitedConn struct {
	net.Conn
	l       *limitListener
	uncount func()
	// idle is c's place on l.idle while it is idle, fresh its place on
	// l.fresh while it is new (since when), and reclaimed says that
	// reclaim has uncounted it; all guarded by l.mu.
	idle      *list.Element
	fresh     *list.Element
	since     time.Time
	reclaimed bool
	once      sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.forget(c)
		if !c.reclaimed {
			c.l.open--
		}
		c.l.mu.Unlock()
		c.uncount()
		<-c.l.slots
	})
	return err
}
