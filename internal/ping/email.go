package ping

import (
	"bytes"
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
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-smtp"
	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
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
type EmailListener struct {
	// Addr is where SMTP is served, such as ":2525".
	Addr string
	// Domain is the domain part recipients must have (case-insensitive).
	Domain string
	// Client reads checks from the cache.
	Client client.Client
	// Projects resolves ping keys.
	Projects *project.Registry
	// Recorder stores the pings.
	Recorder *Recorder
	// BodyLimit bounds the stored message (DefaultBodyLimit when 0).
	BodyLimit int
	// Clock stamps the pings.
	Clock clock.PassiveClock
	// Log reports failures.
	Log logr.Logger
}

// maxMessageBytes bounds what a client may send; beyond the stored part a
// message only needs its headers and text parts for the keywords.
const maxMessageBytes = 10 << 20

// NeedLeaderElection: every replica takes mail.
func (e *EmailListener) NeedLeaderElection() bool { return false }

// Start serves SMTP until ctx ends.
func (e *EmailListener) Start(ctx context.Context) error {
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &emailSession{l: e, remote: hostOnly(c.Conn().RemoteAddr().String())}, nil
	}))
	srv.Domain = e.Domain
	srv.MaxMessageBytes = maxMessageBytes
	srv.MaxRecipients = 50
	srv.ReadTimeout, srv.WriteTimeout = time.Minute, time.Minute
	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", e.Addr)
	if err != nil {
		return fmt.Errorf("smtp listener: %w", err)
	}
	e.Log.Info("serving email pings", "addr", l.Addr().String(), "domain", e.Domain)
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

type emailSession struct {
	l      *EmailListener
	remote string
	from   string
	to     []*v1.Check
}

func (s *emailSession) Reset()        { s.from, s.to = "", nil }
func (s *emailSession) Logout() error { return nil }

func (s *emailSession) Mail(from string, _ *smtp.MailOptions) error {
	s.from = from
	return nil
}

// Rcpt accepts a recipient that names a check; anything else is refused
// (550) so that the sender learns the address is wrong.
func (s *emailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	check, err := s.l.resolve(context.Background(), to)
	if err != nil {
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1}, Message: err.Error()}
	}
	s.to = append(s.to, check)
	return nil
}

func (s *emailSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
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
	for _, check := range s.to {
		p := store.Ping{
			Kind: emailKind(&check.Spec, msg), At: s.l.Clock.Now(), Scheme: "email",
			RemoteAddr: s.remote, UA: truncateRunes("Email from "+s.from, 200), Body: body,
		}
		if _, err := s.l.Recorder.Record(ctx, check, p); err != nil {
			s.l.Log.Error(err, "recording an email ping", "check", client.ObjectKeyFromObject(check))
			return &smtp.SMTPError{Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0}, Message: "try again later"}
		}
	}
	return nil
}

// resolve finds the check an address names.
func (e *EmailListener) resolve(ctx context.Context, address string) (*v1.Check, error) {
	local, domain, ok := strings.Cut(strings.Trim(address, "<>"), "@")
	if !ok || !strings.EqualFold(domain, e.Domain) {
		return nil, errors.New("no such check")
	}
	local = strings.ToLower(local)
	t := Target{UUID: local}
	if key, slug, ok := strings.Cut(local, "+"); ok {
		t = Target{PingKey: key, Slug: slug}
	}
	// Whatever the lookup's failure (an ambiguous slug included), the
	// address names no check.
	check, _, err := lookupCheck(ctx, e.Client, e.Projects, t)
	if err != nil {
		return nil, errors.New("no such check")
	}
	return check, nil
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
	return monitor.PingKind(Classify(texts, KeywordsOf(spec), spec.FilterDefaultFail))
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
	b, _ := io.ReadAll(io.LimitReader(r, maxMessageBytes))
	return []string{string(b)}
}
