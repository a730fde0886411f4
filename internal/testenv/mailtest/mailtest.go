// Package mailtest is an SMTP server on loopback for the whole-manager
// suites: it keeps the messages it accepts, counts its sessions, and can
// refuse the next messages, as a server that is busy would.
package mailtest

import (
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"strings"
	"sync"

	"github.com/emersion/go-smtp"
	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
)

// Server is an SMTP server on 127.0.0.1:Port, stopped when the spec ends.
type Server struct {
	Port     int32
	mu       sync.Mutex
	sessions int
	refuse   int
	refused  int
	messages []string
}

// Start starts a server for the current spec.
func Start() *Server {
	m := &Server{}
	l, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	s := smtp.NewServer(m)
	s.Domain = "localhost"
	go func() { _ = s.Serve(l) }()
	ginkgo.DeferCleanup(s.Close)
	m.Port = int32(l.Addr().(*net.TCPAddr).Port)
	return m
}

// Refuse makes the server answer the next n messages 451 (try again).
func (m *Server) Refuse(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.refuse = n
}

// Sessions is how many connections the server has taken.
func (m *Server) Sessions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions
}

// Received are the messages the server accepted, whole, in order.
func (m *Server) Received() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.messages...)
}

// Refused is how many messages the server refused.
func (m *Server) Refused() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused
}

// NewSession implements smtp.Backend.
func (m *Server) NewSession(*smtp.Conn) (smtp.Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions++
	return &session{m: m}, nil
}

type session struct{ m *Server }

func (s *session) Mail(string, *smtp.MailOptions) error { return nil }
func (s *session) Rcpt(string, *smtp.RcptOptions) error { return nil }
func (s *session) Reset()                               {}
func (s *session) Logout() error                        { return nil }
func (s *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.m.mu.Lock()
	defer s.m.mu.Unlock()
	if s.m.refuse > 0 {
		s.m.refuse--
		s.m.refused++
		return &smtp.SMTPError{Code: 451, Message: "try again later"}
	}
	s.m.messages = append(s.m.messages, string(b))
	return err
}

// Message is a received message: its subject, decoded, and its text and
// HTML parts.
type Message struct{ Subject, Text, HTML string }

// Parse reads a message the manager sent (multipart/alternative: a text
// and an HTML part). The multipart reader decodes a quoted-printable part.
func Parse(raw string) Message {
	ginkgo.GinkgoHelper()
	msg, err := mail.ReadMessage(strings.NewReader(raw))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	var m Message
	m.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject"))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	_, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	gomega.Expect(err).NotTo(gomega.HaveOccurred())
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return m
		}
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		body, err := io.ReadAll(part)
		gomega.Expect(err).NotTo(gomega.HaveOccurred())
		if strings.HasPrefix(part.Header.Get("Content-Type"), "text/html") {
			m.HTML = string(body)
		} else {
			m.Text = string(body)
		}
	}
}
