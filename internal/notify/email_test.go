package notify

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
	"k8s.io/utils/clock"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/delivery/breaker"
)

// testCert is a self-signed certificate for 127.0.0.1 and localhost, which
// the email kind trusts through smtpRootCAs.
var testCert = sync.OnceValue(func() tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "vigil test SMTP"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	smtpRootCAs = pool
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
})

// mailbox is what the test SMTP server received.
type mailbox struct {
	mu       sync.Mutex
	from     string
	rcpts    []string
	data     []byte
	user     string
	tlsMail  bool // MAIL FROM arrived over TLS
	messages int
}

// smtpBackend is a go-smtp backend that accepts AUTH PLAIN for one user
// (or the mechanisms in mechs: LOGIN, and XOAUTH2 with a token that
// tokenOK accepts), rejects recipients at reject.invalid, and fails MAIL
// FROM with failMail.
type smtpBackend struct {
	box        *mailbox
	user, pass string
	mechs      []string
	tokenOK    func(token string) bool
	failMail   error
	sessions   atomic.Int32 // connections the server took
}

func (b *smtpBackend) NewSession(c *smtp.Conn) (smtp.Session, error) {
	b.sessions.Add(1)
	return &smtpSession{b: b, c: c}, nil
}

type smtpSession struct {
	b    *smtpBackend
	c    *smtp.Conn
	user string
}

func (s *smtpSession) AuthMechanisms() []string {
	if s.b.mechs != nil {
		return s.b.mechs
	}
	return []string{sasl.Plain}
}

func (s *smtpSession) Auth(mech string) (sasl.Server, error) {
	if !slices.Contains(s.AuthMechanisms(), mech) {
		// As Exchange Online answers AUTH PLAIN.
		return nil, &smtp.SMTPError{Code: 504, EnhancedCode: smtp.EnhancedCode{5, 7, 4}, Message: "Unrecognized authentication type"}
	}
	check := func(user, pass string) error {
		if user != s.b.user || pass != s.b.pass {
			return smtp.ErrAuthFailed
		}
		s.user = user
		return nil
	}
	switch mech {
	case sasl.Login:
		return &loginServer{check: check}, nil
	case "XOAUTH2":
		return &xoauth2Server{s: s}, nil
	}
	return sasl.NewPlainServer(func(_, user, pass string) error { return check(user, pass) }), nil
}

// loginServer is the server side of AUTH LOGIN, as Exchange Online speaks
// it: "Username:", then "Password:".
type loginServer struct {
	check func(user, pass string) error
	user  string
	step  int
}

func (l *loginServer) Next(response []byte) ([]byte, bool, error) {
	l.step++
	switch l.step {
	case 1:
		if len(response) > 0 {
			return nil, false, errors.New("LOGIN takes no initial response here")
		}
		return []byte("Username:"), false, nil
	case 2:
		l.user = string(response)
		return []byte("Password:"), false, nil
	}
	return nil, true, l.check(l.user, string(response))
}

// xoauth2Server is the server side of AUTH XOAUTH2 as Google and Microsoft
// document it: the initial response "user=<mailbox>^Aauth=Bearer
// <token>^A^A"; a refused token gets a 334 with a JSON error, the client's
// empty line, then 535.
type xoauth2Server struct {
	s      *smtpSession
	failed bool
}

func (x *xoauth2Server) Next(response []byte) ([]byte, bool, error) {
	if x.failed {
		if len(response) != 0 {
			return nil, false, errors.New("the client answered the error challenge with more than an empty line")
		}
		return nil, true, smtp.ErrAuthFailed
	}
	fields := strings.Split(string(response), "\x01")
	if len(fields) != 4 || fields[2] != "" || fields[3] != "" ||
		!strings.HasPrefix(fields[0], "user=") || !strings.HasPrefix(fields[1], "auth=Bearer ") {
		return nil, true, &smtp.SMTPError{Code: 501, EnhancedCode: smtp.EnhancedCode{5, 5, 2}, Message: "malformed XOAUTH2 response"}
	}
	user, token := strings.TrimPrefix(fields[0], "user="), strings.TrimPrefix(fields[1], "auth=Bearer ")
	if user != x.s.b.user || !x.s.b.tokenOK(token) {
		x.failed = true
		return []byte(`{"status":"401","schemes":"bearer","scope":"https://outlook.office365.com/.default"}`), false, nil
	}
	x.s.user = user
	return nil, true, nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.b.failMail != nil {
		return s.b.failMail
	}
	if s.b.user != "" && s.user == "" {
		return smtp.ErrAuthRequired
	}
	_, isTLS := s.c.TLSConnectionState()
	s.b.box.mu.Lock()
	defer s.b.box.mu.Unlock()
	s.b.box.from, s.b.box.user, s.b.box.tlsMail, s.b.box.rcpts = from, s.user, isTLS, nil
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	if strings.HasSuffix(to, "@reject.invalid") {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: "no such user"}
	}
	s.b.box.mu.Lock()
	defer s.b.box.mu.Unlock()
	s.b.box.rcpts = append(s.b.box.rcpts, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	s.b.box.mu.Lock()
	defer s.b.box.mu.Unlock()
	s.b.box.data = b
	s.b.box.messages++
	return err
}

func (s *smtpSession) Reset()        {}
func (s *smtpSession) Logout() error { return nil }

// smtpServer starts a go-smtp server on loopback: with STARTTLS offered
// when starttls, speaking TLS from the start when implicitTLS.
func smtpServer(t *testing.T, be *smtpBackend, starttls, implicitTLS bool) (port int32) {
	t.Helper()
	cert := testCert()
	l, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	s := smtp.NewServer(be)
	s.Domain = "localhost"
	s.ReadTimeout, s.WriteTimeout = 5*time.Second, 5*time.Second
	s.ErrorLog = quietLog{}
	if starttls {
		s.TLSConfig = tlsConfig
	}
	if implicitTLS {
		l = tls.NewListener(l, tlsConfig)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(func() { _ = s.Close() })
	return int32(l.Addr().(*net.TCPAddr).Port)
}

type quietLog struct{}

func (quietLog) Printf(string, ...any) {}
func (quietLog) Println(...any)        {}

func emailChannel(port int32, security v1.SMTPSecurity, creds bool, to ...string) *v1.Channel {
	if len(to) == 0 {
		to = []string{"ops@example.com", "Oncall Team <oncall@example.com>"}
	}
	e := &v1.EmailChannel{To: to, From: "Vigil <vigil@alerts.example.com>", Host: "127.0.0.1", Port: port, Security: security}
	if creds {
		e.CredentialsSecretRef = &v1.LocalSecretRef{Name: "smtp"}
	}
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelEmail, Email: e})
}

const smtpPassword = "sm7p-Pa55w0rd!"

var smtpSecrets = map[string]string{"smtp/username": "vigil", "smtp/password": smtpPassword + "\n"}

// parsedEmail is a received message split into its headers and MIME parts.
type parsedEmail struct {
	header     mail.Header
	text, html string
	partTypes  []string
}

func parseEmail(t *testing.T, data []byte) parsedEmail {
	t.Helper()
	if !bytes.Contains(data, []byte("\r\n")) || bytes.Contains(bytes.ReplaceAll(data, []byte("\r\n"), nil), []byte("\n")) {
		t.Error("the message does not use CRLF line ends throughout")
	}
	msg, err := mail.ReadMessage(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("parsing the message: %v", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/alternative" || params["boundary"] == "" {
		t.Fatalf("Content-Type %q: %v", msg.Header.Get("Content-Type"), err)
	}
	p := parsedEmail{header: msg.Header}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading a part: %v", err)
		}
		// NextPart decodes quoted-printable and drops the header; the raw
		// type says which part this is.
		body, err := io.ReadAll(part)
		if err != nil {
			t.Fatal(err)
		}
		ct := part.Header.Get("Content-Type")
		p.partTypes = append(p.partTypes, ct)
		switch ct {
		case "text/plain; charset=utf-8":
			p.text = string(body)
		case "text/html; charset=utf-8":
			p.html = string(body)
		}
	}
	return p
}

func TestEmailStartTLSWithAuth(t *testing.T) {
	for _, tc := range []struct {
		name, subject, status string
		msg                   Message
	}{
		{"down", "DOWN | Nightly backup", "down", downMessage()},
		{"up", "UP | Nightly backup", "up", upMessage()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			box := &mailbox{}
			port := smtpServer(t, &smtpBackend{box: box, user: "vigil", pass: smtpPassword}, true, false)
			mustSend(t, emailChannel(port, v1.SMTPStartTLS, true), tc.msg, smtpSecrets)

			box.mu.Lock()
			defer box.mu.Unlock()
			if !box.tlsMail || box.user != "vigil" {
				t.Errorf("MAIL FROM over TLS %v, authenticated as %q", box.tlsMail, box.user)
			}
			if box.from != "vigil@alerts.example.com" || strings.Join(box.rcpts, ",") != "ops@example.com,oncall@example.com" {
				t.Errorf("envelope from %q to %v", box.from, box.rcpts)
			}
			e := parseEmail(t, box.data)
			h := e.header
			from, err := h.AddressList("From")
			if err != nil || len(from) != 1 || from[0].Address != "vigil@alerts.example.com" || from[0].Name != "Vigil" {
				t.Errorf("From %q: %v", h.Get("From"), err)
			}
			to, err := h.AddressList("To")
			if err != nil || len(to) != 2 || to[0].Address != "ops@example.com" || to[1].Name != "Oncall Team" {
				t.Errorf("To %q: %v", h.Get("To"), err)
			}
			if h.Get("Subject") != tc.subject {
				t.Errorf("Subject %q, want %q", h.Get("Subject"), tc.subject)
			}
			if d, err := h.Date(); err != nil || !d.Equal(fixedNow) {
				t.Errorf("Date %q: %v", h.Get("Date"), err)
			}
			if !regexp.MustCompile(`^<[0-9a-f]{32}@alerts\.example\.com>$`).MatchString(h.Get("Message-ID")) {
				t.Errorf("Message-ID %q", h.Get("Message-ID"))
			}
			if h.Get("MIME-Version") != "1.0" || h.Get("Auto-Submitted") != "auto-generated" {
				t.Errorf("MIME-Version %q Auto-Submitted %q", h.Get("MIME-Version"), h.Get("Auto-Submitted"))
			}
			if strings.Join(e.partTypes, ", ") != "text/plain; charset=utf-8, text/html; charset=utf-8" {
				t.Errorf("parts %v, want plain text then HTML", e.partTypes)
			}
			for _, want := range []string{
				`The check "Nightly backup" has gone ` + tc.status + ` (2024-05-01 12:00:00 UTC).`,
				"View on Vigil:\r\nhttps://vigil.example.com/checks/" + fixtureUUID,
				"Description:\r\n------------\r\nBacks up the orders database.",
				"Namespace: team-a\r\nTags: prod db\r\nPeriod: 1 day\r\nTotal Pings: 42\r\nLast Ping: Success, 10 minutes ago\r\n",
				"Last Ping Body:\r\n---------------\r\nbackup done: 3 files\r\n",
			} {
				if !strings.Contains(e.text, want) {
					t.Errorf("text part lacks %q:\n%s", want, e.text)
				}
			}
			reason := "Reason: success signal did not arrive on time, grace time passed."
			if strings.Contains(e.text, reason) != !tc.msg.Up || strings.Contains(e.html, reason) != !tc.msg.Up {
				t.Errorf("reason shown %v/%v for up=%v", strings.Contains(e.text, reason), strings.Contains(e.html, reason), tc.msg.Up)
			}
			for _, want := range []string{
				`<a href="https://vigil.example.com/checks/` + fixtureUUID + `">Nightly backup</a>`,
				">" + tc.status + "</span>",
				"<th align=\"left\" style=\"padding-right: 16px;\">Period</th><td>1 day</td>",
				"<code>prod db</code>",
				"backup done: 3 files</pre>",
			} {
				if !strings.Contains(e.html, want) {
					t.Errorf("HTML part lacks %q:\n%s", want, e.html)
				}
			}
		})
	}
}

func TestEmailImplicitTLSAndPlain(t *testing.T) {
	for _, tc := range []struct {
		name        string
		security    v1.SMTPSecurity
		implicitTLS bool
		creds       bool
		wantTLS     bool
	}{
		{"implicit TLS with auth", v1.SMTPTLS, true, true, true},
		{"implicit TLS without auth", v1.SMTPTLS, true, false, true},
		{"none without auth", v1.SMTPNone, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			box := &mailbox{}
			be := &smtpBackend{box: box}
			if tc.creds {
				be.user, be.pass = "vigil", smtpPassword
			}
			port := smtpServer(t, be, false, tc.implicitTLS)
			mustSend(t, emailChannel(port, tc.security, tc.creds), downMessage(), smtpSecrets)
			box.mu.Lock()
			defer box.mu.Unlock()
			if box.messages != 1 || box.tlsMail != tc.wantTLS {
				t.Errorf("%d messages, TLS %v", box.messages, box.tlsMail)
			}
			if e := parseEmail(t, box.data); e.header.Get("Subject") != "DOWN | Nightly backup" {
				t.Errorf("Subject %q", e.header.Get("Subject"))
			}
		})
	}
}

func TestEmailErrors(t *testing.T) {
	tempFail := &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
	for _, tc := range []struct {
		name      string
		be        *smtpBackend
		starttls  bool
		channel   func(port int32) *v1.Channel
		secrets   map[string]string
		permanent bool
		contains  string
	}{
		{"wrong password", &smtpBackend{user: "vigil", pass: "other"}, true,
			func(p int32) *v1.Channel { return emailChannel(p, v1.SMTPStartTLS, true) }, smtpSecrets, true, "535"},
		{"no STARTTLS offered", &smtpBackend{}, false,
			func(p int32) *v1.Channel { return emailChannel(p, v1.SMTPStartTLS, false) }, nil, true, "does not offer STARTTLS"},
		{"temporary failure", &smtpBackend{failMail: tempFail}, true,
			func(p int32) *v1.Channel { return emailChannel(p, v1.SMTPStartTLS, false) }, nil, false, "451"},
		{"all recipients rejected", &smtpBackend{}, true,
			func(p int32) *v1.Channel { return emailChannel(p, v1.SMTPStartTLS, false, "a@reject.invalid") }, nil, true, "550"},
		{"bad recipient address", &smtpBackend{}, true,
			func(p int32) *v1.Channel { return emailChannel(p, v1.SMTPStartTLS, false, "not an address") }, nil, true, "recipient"},
		{"missing credentials Secret", &smtpBackend{}, true,
			func(p int32) *v1.Channel { return emailChannel(p, v1.SMTPStartTLS, true) }, nil, false, `Secret "smtp"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.be.box = &mailbox{}
			port := smtpServer(t, tc.be, tc.starttls, false)
			err := send(t, tc.channel(port), downMessage(), tc.secrets)
			if err == nil || IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("Send = %v (permanent %v), want an error containing %q, permanent %v", err, IsPermanent(err), tc.contains, tc.permanent)
			}
			if strings.Contains(err.Error(), smtpPassword) {
				t.Errorf("error contains the password: %v", err)
			}
			if tc.be.box.messages != 0 {
				t.Errorf("a message was delivered")
			}
		})
	}
}

func TestEmailPartialRejection(t *testing.T) {
	box := &mailbox{}
	port := smtpServer(t, &smtpBackend{box: box}, true, false)
	err := send(t, emailChannel(port, v1.SMTPStartTLS, false, "ok@example.com", "gone@reject.invalid"), downMessage(), nil)
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "gone@reject.invalid") {
		t.Fatalf("Send = %v, want a permanent error naming the rejected recipient", err)
	}
	box.mu.Lock()
	defer box.mu.Unlock()
	if box.messages != 1 || strings.Join(box.rcpts, ",") != "ok@example.com" {
		t.Errorf("%d messages to %v, want one to the accepted recipient", box.messages, box.rcpts)
	}
}

func TestEmailSubjectEncodingAndTest(t *testing.T) {
	box := &mailbox{}
	port := smtpServer(t, &smtpBackend{box: box}, true, false)
	m := downMessage()
	m.Test = true
	m.Check.Name = "Sauvegarde café\r\nBcc: x@example.com"
	m.Check.Desc = "<script>alert(1)</script>"
	mustSend(t, emailChannel(port, v1.SMTPStartTLS, false), m, nil)
	box.mu.Lock()
	defer box.mu.Unlock()
	e := parseEmail(t, box.data)
	raw := e.header.Get("Subject")
	subject, err := new(mime.WordDecoder).DecodeHeader(raw)
	if err != nil || subject != "[Test] DOWN | Sauvegarde café\r\nBcc: x@example.com" || strings.ContainsAny(raw, "\r\n") {
		t.Errorf("Subject %q decodes to %q (%v)", raw, subject, err)
	}
	if e.header.Get("Bcc") != "" {
		t.Error("the check's name injected a header")
	}
	if !strings.HasPrefix(e.text, "This is a test notification.") || strings.Contains(e.html, "<script>") {
		t.Errorf("text %q…, HTML escaped: %v", e.text[:40], !strings.Contains(e.html, "<script>"))
	}
}

func TestEmailHonoursContextDeadline(t *testing.T) {
	// A server that accepts connections but never greets.
	l, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	port := int32(l.Addr().(*net.TCPAddr).Port)
	// The server never greets, so only the deadline can end Send; the
	// limit below is a hang guard, far beyond it.
	errc := make(chan error, 1)
	go func() {
		errc <- Send(ctx, Delivery{Channel: emailChannel(port, v1.SMTPStartTLS, false), Message: downMessage(), Secret: secretMap(nil), Egress: loopbackEgress})
	}()
	select {
	case err := <-errc:
		if err == nil || IsPermanent(err) {
			t.Fatalf("Send = %v, want a retryable error", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Send ignored its deadline")
	}
}

// TestEmailHonoursDeliveryTimeout: without a context deadline (the
// dispatcher's has none), the delivery's Timeout bounds the whole SMTP
// session, as it bounds an HTTP request, and what ends it is a timeout the
// breaker counts: a server that accepts connections and never greets opens
// the breaker after a few timeouts of the delivery bound, not of a longer
// one of the email kind's own.
func TestEmailHonoursDeliveryTimeout(t *testing.T) {
	l, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = c.Close() })
		}
	}()
	port := int32(l.Addr().(*net.TCPAddr).Port)
	b := breaker.New(clock.RealClock{}, 1, time.Hour)
	attempt := b.Attempt("team-a")
	const timeout = 100 * time.Millisecond
	errc := make(chan error, 1)
	go func() {
		errc <- Send(context.Background(), Delivery{Channel: emailChannel(port, v1.SMTPStartTLS, false), Message: downMessage(),
			Secret: secretMap(nil), Egress: loopbackEgress, Gate: attempt.Gate, Timeout: timeout})
	}()
	select {
	case err = <-errc:
	case <-time.After(100 * timeout): // a hang guard, far beyond the bound
		t.Fatalf("Send ignored its Timeout of %v", timeout)
	}
	if err == nil || IsPermanent(err) || !breaker.IsTimeout(err) {
		t.Fatalf("Send = %v, want a retryable timeout", err)
	}
	attempt.Done(err)
	var open *breaker.OpenError
	if err := b.Allow(breaker.Key{Namespace: "team-a", Endpoint: l.Addr().String()}); !errors.As(err, &open) {
		t.Errorf("after the timeout the breaker says %v, want it open", err)
	}
}

func TestSMTPEndpointDefaults(t *testing.T) {
	for _, tc := range []struct {
		security v1.SMTPSecurity
		port     int32
		wantSec  v1.SMTPSecurity
		wantPort int
	}{
		{"", 0, v1.SMTPStartTLS, 587},
		{v1.SMTPStartTLS, 0, v1.SMTPStartTLS, 587},
		{v1.SMTPTLS, 0, v1.SMTPTLS, 465},
		{v1.SMTPNone, 0, v1.SMTPNone, 25},
		{v1.SMTPTLS, 2465, v1.SMTPTLS, 2465},
	} {
		sec, port := smtpEndpoint(&v1.EmailChannel{Security: tc.security, Port: tc.port})
		if sec != tc.wantSec || port != tc.wantPort {
			t.Errorf("%q:%d → %q:%d, want %q:%d", tc.security, tc.port, sec, port, tc.wantSec, tc.wantPort)
		}
	}
}
