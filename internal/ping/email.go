package ping

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/connlimit"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/store"
)

// EmailListener turns email into pings, as the reference's SMTP listener
// does: a message to <uuid>@<domain> or <ping-key>+<slug>@<domain> is a
// success ping, or, when the check filters on the subject or body, what its
// keywords make of them (failure, then success, then start; otherwise
// failure with filterDefaultFail, else ignored). The whole message, up to
// the body limit, is the ping's body. It runs on every replica.
//
// It is open to the Internet, so every resource a client can hold is
// bounded: connections at once, the bytes of a message (counted while they
// are read), recipients per message, the wait for each command and the
// whole session. Any address at the domain is accepted, so that RCPT does
// not tell which checks exist; mail to one that names no check is dropped.
type EmailListener struct {
	// Addr is where SMTP is served, such as ":2525".
	Addr string
	// Domain is the domain part recipients must have (case-insensitive).
	Domain string
	// Checks finds the checks addresses name and records their pings.
	Checks *checks.Door
	// Projects resolves ping keys.
	Projects *project.Registry
	// BodyLimit bounds the stored message (DefaultBodyLimit when 0).
	BodyLimit int
	// MaxConnections bounds the connections served at once
	// (DefaultSMTPMaxConnections when 0); one more is answered 421 and
	// closed.
	MaxConnections int
	// MaxConnectionsPerSource bounds the connections from one source, an
	// IPv4 address or an IPv6 prefix (DefaultSMTPMaxConnectionsPerSource
	// when 0); one more is answered 421 and closed, so that one client
	// cannot hold every connection.
	MaxConnectionsPerSource int
	// TrustedProxies are exempt from MaxConnectionsPerSource (a relay
	// that carries many clients' mail).
	TrustedProxies []netip.Prefix
	// IPv6SourcePrefix is the prefix length of one IPv6 source
	// (connlimit.DefaultIPv6Prefix, a /64, when 0).
	IPv6SourcePrefix int
	// MaxMessageBytes bounds a message, which is refused with 552 once it
	// reaches it (DefaultSMTPMaxMessageBytes, or BodyLimit when that is
	// larger, when 0).
	MaxMessageBytes int
	// CommandTimeout bounds the wait for each command, for a message's
	// data (from its DATA command) and for each reply to be taken
	// (DefaultSMTPCommandTimeout when 0).
	CommandTimeout time.Duration
	// SessionTimeout bounds a connection from its accept to its close,
	// however the client paces its bytes (DefaultSMTPSessionTimeout when 0).
	SessionTimeout time.Duration
	// Log reports failures.
	Log logr.Logger
}

// The SMTP listener's bounds when its fields leave them 0. A ping message is
// small, but its body is kept up to the ping body limit (100 kB by default)
// and MIME encodings inflate it by a third; the worst case held in memory
// is about MaxConnections x MaxMessageBytes (25 MiB). One address may hold
// a tenth of the connections: an MTA opens a few at once to one host.
const (
	DefaultSMTPMaxConnections          = 100
	DefaultSMTPMaxConnectionsPerSource = 10
	DefaultSMTPMaxMessageBytes         = 256 << 10
	DefaultSMTPCommandTimeout          = time.Minute
	DefaultSMTPSessionTimeout          = 5 * time.Minute
	// smtpMaxRecipients bounds the recipients of one message; more are
	// answered 452, which tells the client to send the rest in another.
	smtpMaxRecipients = 50
)

// NeedLeaderElection: every replica takes mail.
func (e *EmailListener) NeedLeaderElection() bool { return false }

func (e *EmailListener) maxMessageBytes() int {
	if e.MaxMessageBytes > 0 {
		return e.MaxMessageBytes
	}
	return max(DefaultSMTPMaxMessageBytes, bodyLimitOr(e.BodyLimit))
}

// Start serves SMTP until ctx ends.
func (e *EmailListener) Start(ctx context.Context) error {
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &emailSession{l: e, remote: hostOnly(c.Conn().RemoteAddr().String())}, nil
	}))
	srv.Domain = e.Domain
	// go-smtp advertises SIZE, refuses a MAIL FROM that declares more, and
	// ends the DATA reader at this many bytes; readMessage buffers no more.
	srv.MaxMessageBytes = int64(e.maxMessageBytes())
	srv.MaxRecipients = smtpMaxRecipients
	srv.ReadTimeout = cmp.Or(e.CommandTimeout, DefaultSMTPCommandTimeout)
	srv.WriteTimeout = srv.ReadTimeout
	srv.ErrorLog = logrPrintf{e.Log}
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", e.Addr)
	if err != nil {
		return fmt.Errorf("smtp listener: %w", err)
	}
	e.Log.Info("serving email pings", "addr", l.Addr().String(), "domain", e.Domain)
	maxConns := cmp.Or(e.MaxConnections, DefaultSMTPMaxConnections)
	perSource := min(cmp.Or(e.MaxConnectionsPerSource, DefaultSMTPMaxConnectionsPerSource), maxConns)
	sources, err := connlimit.NewPerSource(perSource, e.IPv6SourcePrefix, e.TrustedProxies)
	if err != nil {
		_ = l.Close()
		return fmt.Errorf("smtp listener: %w", err)
	}
	l = &boundedListener{
		Listener:  l,
		slots:     make(chan struct{}, maxConns),
		perSource: sources,
		session:   cmp.Or(e.SessionTimeout, DefaultSMTPSessionTimeout),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
		return nil
	case err := <-errc:
		return err
	}
}

// boundedListener serves at most cap(slots) connections at once, and at
// most perSource's cap from one address, each for at most session. One more
// is answered 421 and closed at once rather than left unaccepted: a client
// left in the accept queue waits silently for a greeting (five minutes, for
// an MTA) and, in a flood, the queue fills and drops even the handshakes; a
// 421 is an answer every SMTP client takes as "try again later", and it
// costs an accept and a write.
type boundedListener struct {
	net.Listener
	slots     chan struct{}
	perSource *connlimit.PerSource
	session   time.Duration
}

// The greetings of a connection over the caps.
const (
	busyReply      = "421 4.3.2 Too many connections, try again later\r\n"
	perSourceReply = "421 4.7.0 Too many connections from your address, try again later\r\n"
)

func (l *boundedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
		default:
			refuse(c, busyReply)
			continue
		}
		uncount, ok := l.perSource.Take(c.RemoteAddr())
		if !ok {
			<-l.slots
			refuse(c, perSourceReply)
			continue
		}
		sc := &sessionConn{Conn: c, end: time.Now().Add(l.session), release: func() { uncount(); <-l.slots }}
		// The session's end holds from the accept, whatever deadlines
		// go-smtp sets (or does not set) later.
		if err := sc.SetReadDeadline(sc.end); err != nil {
			_ = sc.Close()
			continue
		}
		return sc, nil
	}
}

// refuse answers a connection over a cap with reply, and closes it.
func refuse(c net.Conn, reply string) {
	// A fresh socket's send buffer is empty, so the write does not wait;
	// the deadline is there in case it would.
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = io.WriteString(c, reply)
	_ = c.Close()
}

// sessionConn is a served connection: it gives back its slot when closed,
// and no read deadline go-smtp sets (it sets one per command) goes beyond
// the session's end, so a client that trickles bytes is cut off there.
type sessionConn struct {
	net.Conn
	end     time.Time
	release func()
	once    sync.Once
}

func (c *sessionConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

func (c *sessionConn) SetReadDeadline(t time.Time) error {
	return c.Conn.SetReadDeadline(c.bound(t))
}

func (c *sessionConn) SetDeadline(t time.Time) error {
	if err := c.SetWriteDeadline(t); err != nil {
		return err
	}
	return c.SetReadDeadline(t)
}

// bound is t, or the session's end when t is later or none.
func (c *sessionConn) bound(t time.Time) time.Time {
	if t.IsZero() || t.After(c.end) {
		return c.end
	}
	return t
}

// logrPrintf is go-smtp's error log (a client gone mid-command, mostly).
type logrPrintf struct{ log logr.Logger }

func (l logrPrintf) Printf(format string, v ...any) { l.log.V(1).Info(fmt.Sprintf(format, v...)) }
func (l logrPrintf) Println(v ...any)               { l.log.V(1).Info(fmt.Sprint(v...)) }

type emailSession struct {
	l      *EmailListener
	remote string
	from   string
	to     []string
}

func (s *emailSession) Reset()        { s.from, s.to = "", nil }
func (s *emailSession) Logout() error { return nil }

func (s *emailSession) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}

// Rcpt accepts any address at the domain, whether or not it names a check,
// so that the answer does not tell which checks (or ping keys) exist; Data
// drops the message for an address that names none. Another domain is
// refused: the listener relays nothing.
func (s *emailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	_, domain, ok := strings.Cut(to, "@")
	if !ok || !strings.EqualFold(domain, s.l.Domain) {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 2},
			Message: "not a ping address: the domain is " + s.l.Domain}
	}
	s.to = append(s.to, to)
	return nil
}

func (s *emailSession) Data(r io.Reader) error {
	raw, err := readMessage(r, s.l.maxMessageBytes())
	if err != nil {
		return err
	}
	ctx := context.Background()
	// Parsed only for a check that filters on the subject or body.
	msg := sync.OnceValue(func() email { return parseEmail(raw) })
	limit := bodyLimitOr(s.l.BodyLimit)
	body := raw
	if len(body) > limit {
		body = body[:limit]
	}
	// One message is one ping for each check it reaches, however many of
	// its recipients name that check: 50 copies of one address in RCPT TO
	// are one ping, not 50 (each a write of the check's row and its log).
	reached := map[types.UID]bool{}
	for _, to := range s.to {
		check, err := s.l.resolve(ctx, to)
		if errors.Is(err, errEmailNoCheck) {
			s.l.Log.V(1).Info("dropping an email to no check", "to", addressTemplate(to))
			continue
		}
		if err != nil {
			s.l.Log.Error(err, "looking up an email ping's check", "to", addressTemplate(to))
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
		}
		if reached[check.UID] {
			continue
		}
		reached[check.UID] = true
		p := store.Ping{
			Kind: emailKind(&check.Spec, msg), At: s.l.Checks.Now(), Scheme: "email",
			RemoteAddr: s.remote, UA: truncateRunes("Email from "+s.from, maxUA), Body: body,
		}
		if _, err := s.l.Checks.RecordPing(ctx, check, p); err != nil {
			s.l.Log.Error(err, "recording an email ping", "check", client.ObjectKeyFromObject(check))
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
		}
	}
	return nil
}

// readMessage reads a message of fewer than limit bytes. Its buffer grows
// with what arrives and never beyond limit, so a client that sends more
// (declaring no SIZE, or a false one) costs no more memory than that; the
// rest is discarded by go-smtp before it answers 552.
func readMessage(r io.Reader, limit int) ([]byte, error) {
	buf := make([]byte, 0, min(limit, 4<<10))
	for {
		if len(buf) == cap(buf) {
			if len(buf) >= limit {
				return nil, smtp.ErrDataTooLarge
			}
			grown := make([]byte, len(buf), min(2*len(buf), limit))
			copy(grown, buf)
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		switch {
		case errors.Is(err, io.EOF):
			return buf, nil
		case err != nil:
			return nil, err
		}
	}
}

// resolve finds the check an address names.
// errEmailNoCheck: the address names no check; the mail is dropped.
var errEmailNoCheck = errors.New("no such check")

func (e *EmailListener) resolve(ctx context.Context, address string) (*v1.Check, error) {
	local, domain, ok := strings.Cut(strings.Trim(address, "<>"), "@")
	if !ok || !strings.EqualFold(domain, e.Domain) {
		return nil, errEmailNoCheck
	}
	local = strings.ToLower(local)
	t := Target{UUID: local}
	if key, slug, ok := strings.Cut(local, "+"); ok {
		t = Target{PingKey: key, Slug: slug}
	}
	// An ambiguous slug names no check either; a failure to look (the
	// store down) is the caller's to answer with "try again".
	check, _, err := lookupCheck(ctx, e.Checks, e.Projects, t)
	switch {
	case errors.Is(err, errNoCheck), errors.Is(err, errSlugAmbiguous):
		return nil, errEmailNoCheck
	case err != nil:
		return nil, err
	}
	return check, nil
}

// addressTemplate is the form of a ping address, what a log line may say of
// it: the address itself holds a check's UUID or the project's ping key.
func addressTemplate(address string) string {
	local, _, _ := strings.Cut(strings.Trim(address, "<>"), "@")
	switch {
	case uuidRE.MatchString(strings.ToLower(local)):
		return "{uuid}@{domain}"
	case strings.Contains(local, "+"):
		return "{ping-key}+{slug}@{domain}"
	}
	return "{unknown}@{domain}"
}

// email is what keyword filters look at.
type email struct {
	subject string
	bodies  []string // text/plain and text/html parts, decoded
}

// emailKind classifies an email for a check; parsed is only called when the
// check filters on the subject or body.
func emailKind(spec *v1.CheckSpec, parsed func() email) monitor.PingKind {
	if !spec.FilterSubject && !spec.FilterBody {
		return monitor.PingSuccess
	}
	m := parsed()
	var texts []string
	if spec.FilterSubject {
		texts = append(texts, m.subject)
	}
	if spec.FilterBody {
		texts = append(texts, m.bodies...)
	}
	return Classify(texts, KeywordsOf(spec), spec.FilterDefaultFail)
}

// parseEmail reads the subject and the text parts of a message; what does
// not parse is taken as plain text.
func parseEmail(raw []byte) email {
	m, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return email{bodies: []string{string(raw)}}
	}
	var out email
	dec := new(mime.WordDecoder)
	if s, err := dec.DecodeHeader(m.Header.Get("Subject")); err == nil {
		out.subject = s
	} else {
		out.subject = m.Header.Get("Subject")
	}
	out.bodies = textParts(m.Header.Get("Content-Type"), m.Header.Get("Content-Transfer-Encoding"), m.Body, 0)
	return out
}

func textParts(contentType, encoding string, body io.Reader, depth int) []string {
	mediaType, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		mediaType = "text/plain"
	}
	if strings.HasPrefix(mediaType, "multipart/") && depth < 5 {
		var out []string
		mr := multipart.NewReader(body, params["boundary"])
		for {
			part, err := mr.NextPart()
			if err != nil {
				return out
			}
			out = append(out, textParts(part.Header.Get("Content-Type"), part.Header.Get("Content-Transfer-Encoding"), part, depth+1)...)
		}
	}
	if mediaType != "text/plain" && mediaType != "text/html" {
		return nil
	}
	r := body
	switch strings.ToLower(strings.TrimSpace(encoding)) {
	case "quoted-printable":
		r = quotedprintable.NewReader(body)
	case "base64":
		r = base64.NewDecoder(base64.StdEncoding, body)
	}
	// Decoding never makes more than the message, which is bounded.
	b, _ := io.ReadAll(r)
	return []string{string(b)}
}
