// Package servertest exercises the HTTP server of a whole manager (the
// Management API, pings and badges, with the controllers running) against
// a real kube-apiserver and etcd, the way hostile clients use it: fuzzed
// requests, and hundreds of slow uploads at once.
package servertest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/onsi/gomega"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/vigil-operator/vigil/internal/manager"
	"github.com/vigil-operator/vigil/internal/testenv"
	"github.com/vigil-operator/vigil/internal/testenv/managertest"
)

// The suite manager's bounds.
const (
	// bodyBudget is its request body budget: small, so that hundreds of
	// uploads fill it and the memory bound is tight.
	bodyBudget = 16 << 20
	// maxConnections and perSource are its connection caps: small, so
	// that a test reaches them with a thousand connections. 127.0.0.1,
	// the tests' own address for the slow uploads, is a trusted proxy,
	// exempt from perSource; the other addresses of 127/8 are clients.
	maxConnections = 1024
	perSource      = 100
	// highWater is where idle connections start to be reclaimed.
	highWater = maxConnections - maxConnections/8
)

// fixture is a running manager with a project and a check, shared by the
// package's tests (a fuzzing worker starts its own).
type fixture struct {
	h         *managertest.Harness
	addr      string // host:port of the HTTP server
	namespace string // the project's
	rw, ro    string // API keys
	pingKey   string
	uuid      string // a check's UUID
	slug      string // its slug
	startErr  error
	startOnce sync.Once
}

var fix fixture

// suite starts the manager on first use. Gomega's assertions in
// managertest panic here: a failed start fails every test that needs it.
func suite(tb testing.TB) *fixture {
	tb.Helper()
	fix.startOnce.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				fix.startErr = fmt.Errorf("starting the manager: %v", r)
			}
		}()
		gomega.RegisterFailHandler(func(message string, _ ...int) { panic(message) })
		// At info level: the request log lines (V(1), V(2)) stay out,
		// but for logs.capture.
		logf.SetLogger(logr.New(teeSink{zap.New(zap.WriteTo(os.Stderr)).GetSink(), logs.sink()}))
		gomega.SetDefaultEventuallyTimeout(20 * time.Second)
		dir, err := os.MkdirTemp("", "vigil-servertest-")
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		dsn, err := testenv.StoreDSN(context.Background(), dir)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		fix.h = managertest.Start(manager.Options{CheckLimit: 20, Store: dsn, RequestBodyBudget: bodyBudget,
			MaxConnections: maxConnections, MaxConnectionsPerSource: perSource,
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
		fix.addr = strings.TrimPrefix(fix.h.BaseURL, "http://")
		p := fix.h.NewProject("servertest-")
		fix.namespace, fix.rw, fix.ro, fix.pingKey, fix.slug = p.Namespace, p.ReadWrite, p.ReadOnly, p.PingKey, "nightly"
		r, err := send(fix.addr, http.MethodPost, "/api/v3/checks/", "X-Api-Key: "+fix.rw, []byte(`{"name": "nightly", "slug": "nightly"}`))
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		gomega.Expect(r.StatusCode).To(gomega.Equal(http.StatusCreated), "POST /api/v3/checks/ answered %s", r.body)
		fix.uuid = jsonField(r.body, "uuid")
	})
	if fix.startErr != nil {
		tb.Fatal(fix.startErr)
	}
	return &fix
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fix.h != nil {
		func() {
			defer func() {
				if r := recover(); r != nil {
					fmt.Fprintln(os.Stderr, "stopping the manager:", r)
					code = 1
				}
			}()
			fix.h.Stop()
		}()
	}
	os.Exit(code)
}

// response is a response with its body read.
type response struct {
	*http.Response
	body []byte
}

// send writes one request over its own connection, as raw bytes (so that
// any method, path and header the server itself would take reach it), and
// reads the answer. header is "Name: value" lines.
func send(addr, method, path, header string, body []byte) (*response, error) {
	return sendFrom("", addr, method, path, header, body)
}

// dialFrom connects to addr from a local address ("" for any): all of
// 127/8 is loopback, so each of its addresses is a client of its own.
func dialFrom(local, addr string) (net.Conn, error) {
	d := net.Dialer{}
	if local != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(local)}
	}
	return d.DialContext(context.Background(), "tcp", addr)
}

// sendFrom is send from a local address.
func sendFrom(local, addr, method, path, header string, body []byte) (*response, error) {
	conn, err := dialFrom(local, addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(60 * time.Second)); err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, path, addr)
	for line := range strings.FieldsFuncSeq(header, func(r rune) bool { return r == '\r' || r == '\n' }) {
		// The framing is the client's, not the input's: a body is as long
		// as it is.
		name, _, _ := strings.Cut(line, ":")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "content-length", "transfer-encoding", "host", "connection":
			continue
		}
		b.WriteString(line + "\r\n")
	}
	fmt.Fprintf(&b, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
	// The server may answer before it has read the whole request (a body
	// too large), and close: its answer is still there to read.
	_, werr := conn.Write(append([]byte(b.String()), body...))
	br := bufio.NewReader(conn)
	for {
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return nil, errors.Join(werr, err)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 {
			continue // 100 Continue: the answer follows
		}
		defer resp.Body.Close()
		var data strings.Builder
		if _, err := bufio.NewReader(resp.Body).WriteTo(&data); err != nil {
			return nil, err
		}
		return &response{Response: resp, body: []byte(data.String())}, nil
	}
}

// jsonField is a string field of a JSON object, or "".
func jsonField(data []byte, name string) string {
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	s, _ := m[name].(string)
	return s
}
