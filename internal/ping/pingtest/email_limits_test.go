package pingtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/smtp"
	"net/textproto"
	"runtime"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/vigil-operator/vigil/internal/ping"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/testenv"
)

// startListener serves email pings into the suite manager's store with l's
// bounds, until the spec ends, and returns its address.
func startListener(l *ping.EmailListener) string {
	addr, err := testenv.FreeAddr(context.Background())
	Expect(err).NotTo(HaveOccurred())
	l.Addr, l.Domain = addr, "pings.example.com"
	// Addresses by UUID only: the registry knows no ping key.
	l.Checks, l.Projects = mgr.Checks, project.NewRegistry()
	l.BodyLimit, l.Log = bodyLimit, GinkgoLogr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Start(ctx) }()
	DeferCleanup(func() {
		cancel()
		Eventually(done).Should(Receive(BeNil()))
	})
	Eventually(func() error {
		c, err := smtp.Dial(addr)
		if err == nil {
			_ = c.Quit()
		}
		return err
	}).Should(Succeed())
	return addr
}

// dialText opens an SMTP conversation and reads the greeting.
func dialText(addr string) *textproto.Conn {
	conn, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", addr)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	tc := textproto.NewConn(conn)
	DeferCleanup(tc.Close)
	_, _, err = tc.ReadResponse(220)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return tc
}

// greetingFrom opens an SMTP connection from a local address (all of
// 127/8 is loopback) and returns it with its greeting, "<code> <text>".
func greetingFrom(local, addr string) (*textproto.Conn, string) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	conn, err := d.DialContext(context.Background(), "tcp", addr)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	tc := textproto.NewConn(conn)
	DeferCleanup(tc.Close)
	code, msg, err := tc.ReadResponse(0)
	if e := (*textproto.Error)(nil); errors.As(err, &e) {
		return tc, fmt.Sprintf("%d %s", e.Code, e.Msg)
	}
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return tc, fmt.Sprintf("%d %s", code, msg)
}

// command sends a command and returns the reply as "<code> <text>".
func command(tc *textproto.Conn, format string, args ...any) string {
	ExpectWithOffset(1, tc.PrintfLine(format, args...)).To(Succeed())
	code, msg, err := tc.ReadResponse(0)
	if err != nil {
		if e := (*textproto.Error)(nil); errors.As(err, &e) {
			return fmt.Sprintf("%d %s", e.Code, e.Msg)
		}
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
	}
	return fmt.Sprintf("%d %s", code, msg)
}

// sendData sends a message's DATA and expects it taken (250).
func sendData(tc *textproto.Conn, message string) {
	GinkgoHelper()
	Expect(command(tc, "DATA")).To(HavePrefix("354"))
	w := tc.DotWriter()
	_, err := w.Write([]byte(message))
	Expect(err).NotTo(HaveOccurred())
	Expect(w.Close()).To(Succeed())
	_, _, err = tc.ReadResponse(250)
	Expect(err).NotTo(HaveOccurred())
}

var _ = Describe("Email ping bounds", func() {
	It("answers RCPT alike whether or not the address names a check, and records one ping per check it names", func() {
		p := newProject()
		uuid := p.create(`{"name": "mailed", "slug": "nightly-db"}`)
		tc := dialText(smtpAddr)
		Expect(command(tc, "EHLO client.example.com")).To(HavePrefix("250"))
		Expect(command(tc, "MAIL FROM:<backup@db1.example.com>")).To(HavePrefix("250"))
		addresses := []string{
			uuid + "@pings.example.com",                              // a check
			p.pingKey + "+nightly-db@PINGS.example.com",              // the same check by slug
			"00000000-0000-4000-8000-000000000000@pings.example.com", // no such UUID
			p.pingKey + "+no-such-slug@pings.example.com",            // no such slug
			"nokey+nightly-db@pings.example.com",                     // no such ping key
			"postmaster@pings.example.com",                           // no check's shape
		}
		var replies []string
		for _, a := range addresses {
			replies = append(replies, strings.ReplaceAll(command(tc, "RCPT TO:<%s>", a), a, "<address>"))
		}
		Expect(replies[0]).To(HavePrefix("250 "))
		Expect(replies).To(HaveEach(Equal(replies[0])))
		Expect(command(tc, "RCPT TO:<%s@elsewhere.example.com>", uuid)).To(HavePrefix("550 5.1.2"))

		sendData(tc, "Subject: nightly\r\n\r\nall dumped\r\n")
		Expect(p.pings(uuid)).To(HaveLen(1), "two addresses of one check: one ping")
	})

	It("records one ping for a message that names one address 50 times", func() {
		p := newProject()
		uuid := p.create(`{"name": "mailed-often"}`)
		tc := dialText(smtpAddr)
		Expect(command(tc, "EHLO client.example.com")).To(HavePrefix("250"))
		Expect(command(tc, "MAIL FROM:<backup@db1.example.com>")).To(HavePrefix("250"))
		for range 50 {
			Expect(command(tc, "RCPT TO:<%s@pings.example.com>", uuid)).To(HavePrefix("250"))
		}
		sendData(tc, "Subject: nightly\r\n\r\nall dumped\r\n")
		Expect(p.pings(uuid)).To(HaveLen(1))
		Consistently(func() []map[string]any { return p.pings(uuid) }).WithTimeout(time.Second).Should(HaveLen(1))
	})

	It("takes at most 50 recipients for a message", func() {
		tc := dialText(smtpAddr)
		Expect(command(tc, "EHLO client.example.com")).To(HavePrefix("250"))
		Expect(command(tc, "MAIL FROM:<backup@db1.example.com>")).To(HavePrefix("250"))
		for i := range 50 {
			Expect(command(tc, "RCPT TO:<00000000-0000-4000-8000-%012d@pings.example.com>", i)).To(HavePrefix("250"))
		}
		Expect(command(tc, "RCPT TO:<postmaster@pings.example.com>")).To(HavePrefix("452 4.5.3"))
	})

	It("refuses a connection over the cap with 421 while the others are served, and takes one again once one closes", func() {
		addr := startListener(&ping.EmailListener{MaxConnections: 3})
		var open []*smtp.Client
		for range 3 {
			// Eventually: startListener's probe may still hold its slot.
			var c *smtp.Client
			Eventually(func() (err error) { c, err = smtp.Dial(addr); return err }).Should(Succeed())
			DeferCleanup(func() { _ = c.Close() })
			open = append(open, c)
		}
		_, err := smtp.Dial(addr)
		Expect(err).To(MatchError(SatisfyAll(HavePrefix("421 "), ContainSubstring("4.3.2 Too many connections"))))
		for _, c := range open {
			Expect(c.Noop()).To(Succeed())
		}

		Expect(open[1].Quit()).To(Succeed())
		Eventually(func() error {
			c, err := smtp.Dial(addr)
			if err == nil {
				_ = c.Close()
			}
			return err
		}).Should(Succeed())
	})

	It("refuses one address's connection past its cap with 421, while other addresses and trusted proxies are served", func() {
		addr := startListener(&ping.EmailListener{MaxConnections: 20, MaxConnectionsPerSource: 3,
			TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.4/32")}})
		var held []*textproto.Conn
		for range 3 {
			tc, greeting := greetingFrom("127.0.0.2", addr)
			Expect(greeting).To(HavePrefix("220 "))
			held = append(held, tc)
		}
		_, greeting := greetingFrom("127.0.0.2", addr)
		Expect(greeting).To(Equal("421 4.7.0 Too many connections from your address, try again later"))
		_, greeting = greetingFrom("127.0.0.3", addr)
		Expect(greeting).To(HavePrefix("220 "))
		for range 6 {
			_, greeting := greetingFrom("127.0.0.4", addr)
			Expect(greeting).To(HavePrefix("220 "), "a trusted proxy carries many clients' mail")
		}
		for _, tc := range held {
			Expect(command(tc, "NOOP")).To(HavePrefix("250"))
		}

		// One closed, the address may open one again.
		Expect(command(held[0], "QUIT")).To(HavePrefix("221"))
		Eventually(func() string {
			_, greeting := greetingFrom("127.0.0.2", addr)
			return greeting
		}).Should(HavePrefix("220 "))
	})

	It("refuses a message over the size cap with 552 while reading it, without keeping it", func() {
		const limit = 64 << 10
		addr := startListener(&ping.EmailListener{MaxMessageBytes: limit})
		p := newProject()
		uuid := p.create(`{"name": "mailed"}`)
		c, err := smtp.Dial(addr)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(c.Close)
		Expect(c.Mail("backup@db1.example.com")).To(Succeed())
		Expect(c.Rcpt(uuid + "@pings.example.com")).To(Succeed())
		w, err := c.Data()
		Expect(err).NotTo(HaveOccurred())

		// 32 MiB streamed: were it held, the process would allocate at
		// least that much while it is sent.
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		line := []byte(strings.Repeat("x", 1022) + "\r\n")
		_, err = w.Write([]byte("Subject: huge\r\n\r\n"))
		Expect(err).NotTo(HaveOccurred())
		for range 32 << 10 {
			_, err := w.Write(line)
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(w.Close()).To(MatchError(SatisfyAll(HavePrefix("552 "), ContainSubstring("5.3.4"))))
		runtime.ReadMemStats(&after)
		Expect(after.TotalAlloc - before.TotalAlloc).To(BeNumerically("<", 8<<20))
		Expect(p.pings(uuid)).To(BeEmpty())

		// The session goes on, and a message under the cap is a ping.
		Expect(c.Mail("backup@db1.example.com")).To(Succeed())
		Expect(c.Rcpt(uuid + "@pings.example.com")).To(Succeed())
		w, err = c.Data()
		Expect(err).NotTo(HaveOccurred())
		_, err = w.Write([]byte("Subject: small\r\n\r\n" + strings.Repeat(strings.Repeat("y", 998)+"\r\n", 32)))
		Expect(err).NotTo(HaveOccurred())
		Expect(w.Close()).To(Succeed())
		Expect(p.pings(uuid)).To(HaveLen(1))
	})

	DescribeTable("closes a session that trickles at its deadline, though each command comes in time",
		func(begin func(tc *textproto.Conn), trickle func(tc *textproto.Conn) error) {
			const session = time.Second
			addr := startListener(&ping.EmailListener{SessionTimeout: session})
			start := time.Now()
			tc := dialText(addr)
			begin(tc)
			// Each poll sends a little, well within the command timeout
			// (a minute), until the server has closed the connection.
			Eventually(func() error { return trickle(tc) }).WithTimeout(20 * time.Second).
				WithPolling(100 * time.Millisecond).Should(HaveOccurred())
			Expect(time.Since(start)).To(BeNumerically(">=", session))
		},
		Entry("with NOOPs", func(*textproto.Conn) {}, func(tc *textproto.Conn) error {
			if err := tc.PrintfLine("NOOP"); err != nil {
				return err
			}
			_, _, err := tc.ReadResponse(250)
			return err
		}),
		Entry("with a message's lines", func(tc *textproto.Conn) {
			Expect(command(tc, "HELO client.example.com")).To(HavePrefix("250"))
			Expect(command(tc, "MAIL FROM:<backup@db1.example.com>")).To(HavePrefix("250"))
			Expect(command(tc, "RCPT TO:<00000000-0000-4000-8000-000000000000@pings.example.com>")).To(HavePrefix("250"))
			Expect(command(tc, "DATA")).To(HavePrefix("354"))
		}, func(tc *textproto.Conn) error {
			return tc.PrintfLine("x")
		}),
	)
})
