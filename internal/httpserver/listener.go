package httpserver

import (
	"container/list"
	"net"
	"net/http"
	"sync"

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

// limitListener bounds the server's connections three ways:
//   - at most cap(slots) are open: past that, Accept waits for one to
//     close, and new clients wait in the kernel's backlog;
//   - at most perSource's cap from one address (trusted proxies exempt):
//     one more is closed as soon as it is accepted, so it holds no slot
//     that other clients wait for;
//   - while more than highWater are open, idle keep-alive connections are
//     closed, the longest idle first, so that clients holding connections
//     they do not use cannot keep new clients waiting. (HTTP allows a
//     server to close an idle connection at any time; clients reconnect.)
type limitListener struct {
	net.Listener
	slots     chan struct{}
	closed    chan struct{}
	closeOnce sync.Once
	perSource *connlimit.PerSource
	highWater int

	mu   sync.Mutex
	open int
	idle list.List // of *limitedConn, the longest idle first
}

func newLimitListener(l net.Listener, n int, perSource *connlimit.PerSource) *limitListener {
	return &limitListener{Listener: l, slots: make(chan struct{}, n), closed: make(chan struct{}),
		perSource: perSource, highWater: n - n/8}
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
	return l.Listener.Close()
}

// connState is the server's ConnState hook: it keeps the idle connections
// in the order they became idle, and reclaims them when the server is near
// its cap.
func (l *limitListener) connState(nc net.Conn, state http.ConnState) {
	c, ok := nc.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	var reclaimed []*limitedConn
	if state == http.StateIdle {
		if c.idle == nil {
			c.idle = l.idle.PushBack(c)
		}
		reclaimed = l.reclaim()
	} else {
		l.forget(c)
	}
	l.mu.Unlock()
	closeAll(reclaimed)
}

// reclaim takes, for closing, the longest idle connections past the high
// water mark. l.mu is held.
func (l *limitListener) reclaim() []*limitedConn {
	var out []*limitedConn
	for n := l.open - l.highWater; n > 0 && l.idle.Len() > 0; n-- {
		c := l.idle.Front().Value.(*limitedConn)
		l.forget(c)
		// Uncounted now, so that the next call, before these are
		// closed, does not take more.
		c.reclaimed = true
		l.open--
		out = append(out, c)
	}
	return out
}

// forget takes c off the idle list. l.mu is held.
func (l *limitListener) forget(c *limitedConn) {
	if c.idle != nil {
		l.idle.Remove(c.idle)
		c.idle = nil
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
	// idle is c's place on l.idle while it is idle, and reclaimed says
	// that reclaim has uncounted it; both guarded by l.mu.
	idle      *list.Element
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
