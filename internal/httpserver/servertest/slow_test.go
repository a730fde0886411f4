package servertest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/ping"
)

// Slow uploads: what each kind of anonymous client sends before it stops
// sending and holds its connection open.
const (
	// API creates without a key whose chunked body would be 1 MiB: the
	// server reads no more than its unauthenticated limit of them.
	nChunkedAPI = 150
	// API creates without a key that declare a body of 2.5 MB and send
	// 2 MiB of it: the server answers 413 without reading it.
	nDeclaredAPI = 150
	// Pings with 100 kB bodies that send all but the last 1,000 bytes: the
	// server reads them within the body budget, and refuses those that do
	// not fit with 503 and Retry-After.
	nPings = 200

	uploads = nChunkedAPI + nDeclaredAPI + nPings
	// perConnection is what a held connection may cost the server beyond
	// its body: its read and write buffers (4 KiB each), the request and
	// its headers, and the connection's state.
	perConnection = 64 << 10
	// memoryBound is how much the manager's live heap may grow under the
	// uploads: the body budget twice (a chunked body's buffer may double
	// past what it holds) and each connection's own cost.
	memoryBound = 2*bodyBudget + uploads*perConnection
)

// load is the figures of one run of slow uploads.
type load struct {
	baseline, during uint64 // live heap bytes, after a collection
	// pingLatencies are the normal pings' before and during the uploads.
	idleLatencies, pingLatencies []time.Duration
	pingStatuses                 map[int]int
}

// slowUploads opens the slow uploads against the suite's manager, waits
// until the server holds what it will of them, sends normal pings and
// API reads meanwhile, and measures the live heap before and during.
func slowUploads(tb testing.TB, s *fixture, normalPings int) load {
	g := gomega.NewWithT(tb)
	l := load{pingStatuses: map[int]int{}}
	// Normal pings alone, which also warms up what they use.
	for range normalPings {
		start := time.Now()
		_, _ = send(s.addr, http.MethodGet, "/ping/"+s.uuid, "", nil)
		l.idleLatencies = append(l.idleLatencies, time.Since(start))
	}
	l.baseline = liveHeap()

	stop := make(chan struct{})
	var written, closed sync.WaitGroup
	upload := func(head string, parts ...[]byte) {
		written.Add(1)
		closed.Add(1)
		go func() {
			defer closed.Done()
			conn, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", s.addr)
			if err != nil {
				written.Done()
				tb.Errorf("dialing: %v", err)
				return
			}
			defer conn.Close()
			// The server may answer and close before all is sent: that
			// is an upload refused, and the write's error says so.
			_, _ = conn.Write([]byte(head))
			for _, p := range parts {
				if _, err := conn.Write(p); err != nil {
					break
				}
			}
			written.Done()
			<-stop
		}()
	}
	mib := make([]byte, 2<<20)
	for i := range mib {
		mib[i] = 'x'
	}
	for range nPings {
		upload(fmt.Sprintf("POST /ping/%s HTTP/1.1\r\nHost: vigil\r\nContent-Length: %d\r\n\r\n", s.uuid, ping.DefaultBodyLimit),
			mib[:ping.DefaultBodyLimit-1000])
	}
	for range nChunkedAPI {
		upload("POST /api/v3/checks/ HTTP/1.1\r\nHost: vigil\r\nTransfer-Encoding: chunked\r\n\r\n",
			[]byte(fmt.Sprintf("%x\r\n", 1<<20)), mib[:1<<20])
	}
	for range nDeclaredAPI {
		upload("POST /api/v3/checks/ HTTP/1.1\r\nHost: vigil\r\nContent-Length: 2621440\r\n\r\n", mib)
	}
	defer func() {
		close(stop)
		closed.Wait()
	}()
	written.Wait()
	// The writes are done once the bytes are in the kernel's buffers; the
	// server holds them when it has read them: the pings it took fill at
	// least half the budget.
	g.Eventually(func() uint64 { return max(liveHeap(), l.baseline) - l.baseline }, 60*time.Second).
		Should(gomega.BeNumerically(">=", bodyBudget/2))

	// Meanwhile, pings (without a body, or a short one) and API reads are
	// answered.
	for i := range normalPings {
		start := time.Now()
		var r *response
		var err error
		if i%2 == 0 {
			r, err = send(s.addr, http.MethodGet, "/ping/"+s.uuid, "", nil)
		} else {
			r, err = send(s.addr, http.MethodPost, "/ping/"+s.uuid+"/log", "", []byte("a short log line"))
		}
		l.pingLatencies = append(l.pingLatencies, time.Since(start))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		l.pingStatuses[r.StatusCode]++
	}
	r, err := send(s.addr, http.MethodGet, "/api/v3/checks/", "X-Api-Key: "+s.ro, nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(r.StatusCode).To(gomega.Equal(http.StatusOK))
	l.during = liveHeap()
	return l
}

// liveHeap is the bytes of the heap's live objects, after a collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestSlowUploads: hundreds of slow anonymous uploads at once grow the
// manager's live heap by no more than its body budget and connections
// bound, and pings are answered meanwhile.
func TestSlowUploads(t *testing.T) {
	s := suite(t)
	l := slowUploads(t, s, 50)
	t.Logf("live heap: %d MiB before, %d MiB during %d slow uploads (bound: +%d MiB); pings: %v",
		l.baseline>>20, l.during>>20, uploads, memoryBound>>20, l.pingStatuses)
	if l.pingStatuses[http.StatusOK] != 50 {
		t.Errorf("pings during the uploads: %v, want 50 answered 200", l.pingStatuses)
	}
	if grown := int64(l.during) - int64(l.baseline); grown > memoryBound {
		t.Errorf("live heap grew by %d MiB under the uploads, bound %d MiB", grown>>20, memoryBound>>20)
	}
}

// BenchmarkSlowUploads measures one run of the slow uploads (run it with
// -benchtime 1x): the live heap before and during, and the latency of
// normal pings before and during.
func BenchmarkSlowUploads(b *testing.B) {
	s := suite(b)
	var l load
	for b.Loop() {
		l = slowUploads(b, s, 200)
	}
	b.ReportMetric(float64(l.baseline)/(1<<20), "heap-before-MiB")
	b.ReportMetric(float64(l.during)/(1<<20), "heap-during-MiB")
	b.ReportMetric(percentile(l.idleLatencies, 50), "ping-p50-before-ms")
	b.ReportMetric(percentile(l.pingLatencies, 50), "ping-p50-during-ms")
	b.ReportMetric(percentile(l.pingLatencies, 99), "ping-p99-during-ms")
	b.ReportMetric(float64(l.pingStatuses[http.StatusOK]), "pings-200")
}

// percentile is the p-th percentile of d in milliseconds.
func percentile(d []time.Duration, p int) float64 {
	d = slices.Clone(d)
	slices.Sort(d)
	if len(d) == 0 {
		return 0
	}
	return float64(d[(len(d)-1)*p/100].Microseconds()) / 1000
}

// Slow readers: clients that ask for a long check list and read only the
// start of the answer, on a small receive window, as clients on slow
// links (or clients that mean harm) do.
const (
	slowReaders = 200
	// listChecks checks with listDesc-character descriptions make a list
	// of about 1.4 MB. The descriptions are HTML, which the answer carries
	// as it is.
	listChecks = 135
	listDesc   = 10_000
	html       = "<b>backups</b> &amp; "
	// readerWindow is each reader's receive buffer: the kernel holds little
	// of an answer the client does not read, and the server the rest.
	readerWindow = 4 << 10
)

// TestSlowReaders: hundreds of clients that never read a check list of 1.4
// MB grow the manager's live heap by far less than the list each: the list
// is written check by check, as the client takes it, not built whole
// first. Pings are answered meanwhile.
func TestSlowReaders(t *testing.T) {
	s := suite(t)
	g := gomega.NewWithT(t)
	p := s.h.NewProject("slowreaders-")
	desc := strings.Repeat(html, listDesc/len(html))
	for i := range listChecks {
		c := &v1.Check{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: fmt.Sprintf("c%03d", i)},
			Spec: v1.CheckSpec{Name: fmt.Sprintf("check %d", i), Desc: desc}}
		g.Expect(s.h.Client.Create(context.Background(), c)).To(gomega.Succeed())
	}
	var list []byte
	g.Eventually(func() int {
		r, err := send(s.addr, http.MethodGet, "/api/v3/checks/", "X-Api-Key: "+p.ReadOnly, nil)
		if err != nil || r.StatusCode != http.StatusOK {
			return 0
		}
		list = r.body
		return strings.Count(string(r.body), `"name":"check `)
	}).Should(gomega.Equal(listChecks))
	g.Expect(string(list)).To(gomega.ContainSubstring(`"desc":"`+html), "<, > and & as they are")

	l := slowReads(t, s, p.ReadOnly)
	grown := int64(l.during) - int64(l.baseline)
	bound := int64(slowReaders * len(list) / 8)
	t.Logf("list: %d bytes; live heap: %d MiB before, %d MiB with %d readers that do not read (bound: +%d MiB)",
		len(list), l.baseline>>20, l.during>>20, slowReaders, bound>>20)
	if grown > bound {
		t.Errorf("live heap grew by %d MiB under %d slow readers of a %d-byte list, bound %d MiB",
			grown>>20, slowReaders, len(list), bound>>20)
	}
}

// slowReads starts the slow readers, waits until each has the status line
// of its answer (the server is writing it), pings meanwhile, and measures
// the live heap before and during.
func slowReads(tb testing.TB, s *fixture, key string) load {
	g := gomega.NewWithT(tb)
	l := load{baseline: liveHeap()}
	stop := make(chan struct{})
	started := make(chan error, slowReaders)
	var done sync.WaitGroup
	defer func() {
		close(stop)
		done.Wait()
	}()
	for i := range slowReaders {
		done.Go(func() {
			conn, err := dialSmallWindow(fmt.Sprintf("127.0.3.%d", i%4+1), s.addr)
			if err != nil {
				started <- err
				return
			}
			defer conn.Close()
			_, err = fmt.Fprintf(conn, "GET /api/v3/checks/ HTTP/1.1\r\nHost: vigil\r\nX-Api-Key: %s\r\n\r\n", key)
			if err == nil {
				_, err = bufio.NewReader(conn).ReadString('\n')
			}
			started <- err
			<-stop
		})
	}
	for range slowReaders {
		if err := <-started; err != nil {
			tb.Fatalf("a slow reader got no status line: %v", err)
		}
	}
	r, err := sendFrom("127.0.0.3", s.addr, http.MethodGet, "/ping/"+s.uuid, "", nil)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(r.StatusCode).To(gomega.Equal(http.StatusOK))
	l.during = liveHeap()
	return l
}

// dialSmallWindow connects from local with a receive buffer of
// readerWindow bytes, set before the connection opens so that the window
// it offers is that small.
func dialSmallWindow(local, addr string) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, readerWindow)
		}); err != nil {
			return err
		}
		return serr
	}}
	return d.DialContext(context.Background(), "tcp", addr)
}
