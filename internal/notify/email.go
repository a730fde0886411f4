package notify

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"mime"
	"mime/multipart"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"text/template"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

func init() { register(v1.ChannelEmail, emailKind{}) }

// emailKind sends an email through the channel's SMTP server, using the
// standard library's net/smtp: it is dependency-free, and this kind needs
// only what it does well (STARTTLS, implicit TLS over a dialled connection,
// AUTH PLAIN); AUTH LOGIN and XOAUTH2 are small net/smtp.Auth
// implementations beside it (smtpauth.go). No credentials are sent over an
// unencrypted connection to anything but localhost.
//
// The connection is secured as the channel says: "starttls" (the default,
// port 587) requires the server to offer STARTTLS, "tls" (port 465) speaks
// TLS from the start, "none" (port 25) stays in the clear. With a
// credentials Secret, the client authenticates with AUTH PLAIN, or LOGIN
// when the server offers no PLAIN (Exchange Online), or the mechanism the
// channel's auth names; with auth xoauth2 it sends an OAuth 2.0 access
// token obtained with the client-credentials grant (Exchange Online's
// app-only SMTP), cached until shortly before it expires. The whole
// session, from dialling to QUIT, is bounded by the delivery's Timeout (the
// HTTP kinds' bound), or the context's deadline when that comes sooner: the
// dispatcher's context has none, and a server that accepts connections but
// never greets must time out as soon as a hanging HTTP endpoint does, so
// that the breaker opens as soon.
//
// The message is multipart/alternative with a plain-text and an HTML part
// (both quoted-printable UTF-8) and the headers From, To, Subject
// ("DOWN | <name>", as the reference's), Date, Message-ID, MIME-Version and
// Auto-Submitted. A recipient the server rejects does not stop delivery to
// the others; the error then names the rejected ones and is permanent.
// SMTP 5xx replies and addresses that do not parse are permanent errors.
type emailKind struct{}

func (emailKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Email == nil {
		return nil
	}
	if o := spec.Email.OAuth2; o != nil {
		return []v1.SecretKeyRef{o.ClientSecretRef}
	}
	return credentialRefs(spec.Email.CredentialsSecretRef)
}

// smtpCredentials reads what the channel authenticates with: the
// username and password of credentialsSecretRef, or, for xoauth2, an
// access token from the oauth2 settings' token endpoint (cached).
func (d *Delivery) smtpCredentials(ctx context.Context, s *v1.EmailChannel) (smtpCredentials, error) {
	if s.Auth == v1.SMTPAuthXOAuth2 {
		if s.OAuth2 == nil {
			return smtpCredentials{}, Permanent(errors.New("auth xoauth2 needs oauth2 settings"))
		}
		token, key, cached, err := d.smtpAccessToken(ctx, s.OAuth2)
		if err != nil {
			return smtpCredentials{}, err
		}
		return smtpCredentials{mechanism: s.Auth, user: s.OAuth2.Username, secret: token, tokenKey: key, cachedToken: cached}, nil
	}
	ref := s.CredentialsSecretRef
	if ref == nil {
		return smtpCredentials{}, nil
	}
	// Credentials are used as they are, apart from a final newline.
	u, err := d.Secret(ctx, v1.SecretKeyRef{Name: ref.Name, Key: "username"})
	if err != nil {
		return smtpCredentials{}, fmt.Errorf("reading Secret %q key %q: %w", ref.Name, "username", err)
	}
	p, err := d.Secret(ctx, v1.SecretKeyRef{Name: ref.Name, Key: "password"})
	if err != nil {
		return smtpCredentials{}, fmt.Errorf("reading Secret %q key %q: %w", ref.Name, "password", err)
	}
	return smtpCredentials{mechanism: s.Auth, user: strings.TrimRight(u, "\r\n"), secret: strings.TrimRight(p, "\r\n")}, nil
}

// smtpRootCAs verifies SMTP servers' certificates; nil means the system's
// roots. Tests replace it.
var smtpRootCAs *x509.CertPool

// emailBodyLimit bounds the ping body excerpt in emails, as the reference's.
const emailBodyLimit = 10_000

func (emailKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Email
	if s == nil {
		return Permanent(errors.New("the channel has no email settings"))
	}
	from, err := mail.ParseAddress(s.From)
	if err != nil {
		return Permanent(fmt.Errorf("from address %q: %w", s.From, err))
	}
	if len(s.To) == 0 {
		return Permanent(errors.New("no recipients"))
	}
	to := make([]*mail.Address, 0, len(s.To))
	for _, a := range s.To {
		addr, err := mail.ParseAddress(a)
		if err != nil {
			return Permanent(fmt.Errorf("recipient %q: %w", a, err))
		}
		to = append(to, addr)
	}
	creds, err := d.smtpCredentials(ctx, s)
	if err != nil {
		return err
	}
	msg, err := buildEmail(&d.Message, from, to)
	if err != nil {
		return Permanent(err)
	}
	_, port := smtpEndpoint(s)
	addr := net.JoinHostPort(s.Host, strconv.Itoa(port))
	if err := d.gate(addr); err != nil {
		return fmt.Errorf("SMTP %s: %w", addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	return sendSMTP(ctx, d.dial, s, creds, from.Address, to, msg)
}

// sendSMTP runs one SMTP session that sends msg, over a connection from
// dial (the guard's), within ctx's deadline.
func sendSMTP(ctx context.Context, dial func(context.Context, string) (net.Conn, error), s *v1.EmailChannel,
	creds smtpCredentials, from string, to []*mail.Address, msg []byte) (err error) {
	security, port := smtpEndpoint(s)
	addr := net.JoinHostPort(s.Host, strconv.Itoa(port))
	deadline, _ := ctx.Deadline()
	tlsConfig := &tls.Config{ServerName: s.Host, RootCAs: smtpRootCAs, MinVersion: tls.VersionTLS12}

	switch security {
	case v1.SMTPTLS, v1.SMTPStartTLS, v1.SMTPNone:
	default:
		return Permanent(fmt.Errorf("unknown security %q", security))
	}
	conn, err := dial(ctx, addr)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", addr, err)
	}
	defer func() { _ = conn.Close() }()
	if security == v1.SMTPTLS {
		tc := tls.Client(conn, tlsConfig)
		if err := tc.HandshakeContext(ctx); err != nil {
			return fmt.Errorf("connecting to %s: TLS: %w", addr, err)
		}
		conn = tc
	}
	_ = conn.SetDeadline(deadline)
	// Cancelling the context ends the session at once.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	step := "greeting"
	defer func() {
		if err != nil {
			err = smtpError(addr, step, err)
		}
	}()
	c, err := smtp.NewClient(conn, s.Host)
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	step = "EHLO"
	if err = c.Hello(heloName()); err != nil {
		return err
	}
	if security == v1.SMTPStartTLS {
		if ok, _ := c.Extension("STARTTLS"); !ok {
			return Permanent(errors.New("the server does not offer STARTTLS"))
		}
		step = "STARTTLS"
		if err = c.StartTLS(tlsConfig); err != nil {
			return err
		}
	}
	if !creds.none() {
		ok, offered := c.Extension("AUTH")
		if !ok {
			return Permanent(errors.New("the server does not offer authentication"))
		}
		auth, err := chooseSMTPAuth(creds, s.Host, offered)
		if err != nil {
			return err
		}
		step = "AUTH"
		if err = c.Auth(auth); err != nil {
			var tp *textproto.Error
			if !errors.As(err, &tp) {
				// net/smtp refuses to send credentials in the clear.
				return Permanent(err)
			}
			if creds.tokenKey != "" {
				// The token may have been revoked before it expired: the
				// next attempt asks for a new one.
				forgetSMTPToken(creds.tokenKey)
				if creds.cachedToken {
					// Not wrapped: a 5xx reply is permanent (smtpError), and
					// this one is not.
					return fmt.Errorf("the server refused the cached access token (%s); the next attempt asks for a new one", tp.Error())
				}
			}
			return err
		}
	}
	step = "MAIL FROM"
	if err = c.Mail(from); err != nil {
		return err
	}
	var rejected []string
	var lastReject error
	for _, a := range to {
		step = "RCPT TO"
		if err := c.Rcpt(a.Address); err != nil {
			var tp *textproto.Error
			if !errors.As(err, &tp) {
				return err
			}
			rejected = append(rejected, a.Address)
			lastReject = err
		}
	}
	if len(rejected) == len(to) {
		return lastReject
	}
	step = "DATA"
	w, err := c.Data()
	if err != nil {
		return err
	}
	if _, err = w.Write(msg); err != nil {
		return err
	}
	if err = w.Close(); err != nil {
		return err
	}
	step = "QUIT"
	_ = c.Quit()
	if len(rejected) > 0 {
		step = "RCPT TO"
		return Permanent(fmt.Errorf("sent, but the server rejected %s: %w", strings.Join(rejected, ", "), lastReject))
	}
	return nil
}

// smtpEndpoint is the channel's security mode (starttls by default) and
// port (by default the mode's: 587, 465 or 25).
func smtpEndpoint(s *v1.EmailChannel) (v1.SMTPSecurity, int) {
	security := s.Security
	if security == "" {
		security = v1.SMTPStartTLS
	}
	port := int(s.Port)
	if port == 0 {
		port = map[v1.SMTPSecurity]int{v1.SMTPStartTLS: 587, v1.SMTPTLS: 465, v1.SMTPNone: 25}[security]
	}
	return security, port
}

// smtpError names the server and the step that failed; SMTP 5xx replies
// are permanent.
func smtpError(addr, step string, err error) error {
	permanent := IsPermanent(err)
	var tp *textproto.Error
	if errors.As(err, &tp) && tp.Code >= 500 {
		permanent = true
	}
	err = fmt.Errorf("SMTP %s, %s: %w", addr, step, err)
	if permanent {
		return Permanent(err)
	}
	return err
}

// heloName is the name the client greets the server with.
func heloName() string {
	if h, err := os.Hostname(); err == nil && h != "" && !strings.ContainsAny(h, " \r\n") {
		return h
	}
	return "localhost"
}

// buildEmail writes the whole message, with CRLF line ends.
func buildEmail(m *Message, from *mail.Address, to []*mail.Address) ([]byte, error) {
	if r := m.Report; r != nil {
		return composeEmail(r.Subject, []byte(r.Text), []byte(r.HTML), from, to)
	}
	var text, html bytes.Buffer
	data := emailData(m)
	if err := emailText.Execute(&text, data); err != nil {
		return nil, fmt.Errorf("rendering the text part: %w", err)
	}
	if err := emailHTML.Execute(&html, data); err != nil {
		return nil, fmt.Errorf("rendering the HTML part: %w", err)
	}
	return composeEmail(emailSubject(m), text.Bytes(), html.Bytes(), from, to)
}

// composeEmail is the whole message: headers, and the text and HTML as
// the parts of a multipart/alternative body.
func composeEmail(subject string, text, html []byte, from *mail.Address, to []*mail.Address) ([]byte, error) {
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, part := range []struct {
		ctype string
		text  []byte
	}{{"text/plain; charset=utf-8", text}, {"text/html; charset=utf-8", html}} {
		pw, err := mw.CreatePart(textproto.MIMEHeader{
			"Content-Type":              {part.ctype},
			"Content-Transfer-Encoding": {"quoted-printable"},
		})
		if err != nil {
			return nil, err
		}
		qw := quotedprintable.NewWriter(pw)
		if _, err := qw.Write(crlf(part.text)); err != nil {
			return nil, err
		}
		if err := qw.Close(); err != nil {
			return nil, err
		}
	}
	if err := mw.Close(); err != nil {
		return nil, err
	}

	recipients := make([]string, len(to))
	for i, a := range to {
		recipients[i] = a.String()
	}
	domain := "vigil.invalid"
	if at := strings.LastIndexByte(from.Address, '@'); at >= 0 && at < len(from.Address)-1 {
		domain = from.Address[at+1:]
	}
	var id [16]byte
	_, _ = rand.Read(id[:])

	var msg bytes.Buffer
	header := func(k, v string) { msg.WriteString(k + ": " + v + "\r\n") }
	header("From", from.String())
	header("To", strings.Join(recipients, ",\r\n "))
	header("Subject", mime.QEncoding.Encode("utf-8", subject))
	header("Date", now().Format(time.RFC1123Z))
	header("Message-ID", "<"+hex.EncodeToString(id[:])+"@"+domain+">")
	header("MIME-Version", "1.0")
	header("Content-Type", mime.FormatMediaType("multipart/alternative", map[string]string{"boundary": mw.Boundary()}))
	header("Auto-Submitted", "auto-generated")
	msg.WriteString("\r\n")
	msg.Write(body.Bytes())
	return msg.Bytes(), nil
}

// emailSubject is "DOWN | <name>" or "UP | <name>", as the reference's;
// "STILL DOWN | <name>" for a re-alert or an escalation.
func emailSubject(m *Message) string {
	if m.Subject != "" {
		return m.title()
	}
	word := strings.ToUpper(m.status())
	switch m.Notice {
	case monitor.NoticeRealert, monitor.NoticeEscalation:
		word = "STILL DOWN"
	case monitor.NoticeMaintenanceEnd:
		word = "MAINTENANCE ENDED"
	case monitor.NoticeSLABreach:
		word = "SLA BREACHED"
	case monitor.NoticeSLAMet:
		word = "SLA MET"
	case monitor.NoticeFlapping:
		word = "FLAPPING"
	}
	return m.testPrefix() + word + " | " + m.Check.name()
}

// crlf turns every line end into CRLF.
func crlf(b []byte) []byte {
	return bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
}

type emailFields struct {
	Test       bool
	Name       string
	Status     string
	Up         bool
	Reason     string
	Time       string
	DetailsURL string
	Desc       string
	Facts      []fact
	Body       string
}

func emailData(m *Message) emailFields {
	var facts []fact
	for _, f := range m.facts() {
		if f.Title != "Description" {
			facts = append(facts, f)
		}
	}
	return emailFields{
		Test:       m.Test,
		Name:       m.Check.name(),
		Status:     m.status(),
		Up:         m.Up,
		Reason:     m.reasonLine(),
		Time:       m.flipTime().Format("2006-01-02 15:04:05 MST"),
		DetailsURL: m.Check.DetailsURL,
		Desc:       m.Check.Desc,
		Facts:      facts,
		Body:       m.Check.bodyExcerpt(emailBodyLimit),
	}
}

var emailText = template.Must(template.New("text").Parse(`
{{- if .Test}}This is a test notification.

{{end -}}
The check "{{.Name}}" has gone {{.Status}} ({{.Time}}).
{{- if .Reason}}
{{.Reason}}{{end}}
{{- if .DetailsURL}}

View on Vigil:
{{.DetailsURL}}{{end}}
{{- if .Desc}}

Description:
------------
{{.Desc}}{{end}}

Details:
--------
{{range .Facts}}{{.Title}}: {{.Value}}
{{end}}
{{- if .Body}}
Last Ping Body:
---------------
{{.Body}}
{{end}}
--
Vigil
`))

var emailHTML = htmltemplate.Must(htmltemplate.New("html").Parse(`<!DOCTYPE html>
<html>
<head><meta charset="utf-8"><title>{{.Status}} | {{.Name}}</title></head>
<body style="font-family: Helvetica, Arial, sans-serif; font-size: 15px; color: #333;">
{{if .Test}}<p><em>This is a test notification.</em></p>
{{end -}}
<p>The check <strong>{{if .DetailsURL}}<a href="{{.DetailsURL}}">{{.Name}}</a>{{else}}{{.Name}}{{end}}</strong> has gone
<span style="color: #fff; background: {{if .Up}}#5cb85c{{else}}#d9534f{{end}}; padding: 2px 6px; border-radius: 3px; font-weight: bold;">{{.Status}}</span>
({{.Time}}).</p>
{{if .Reason}}<p style="white-space: pre-wrap;">{{.Reason}}</p>
{{end -}}
{{if .Desc}}<h3>Description</h3>
<p style="white-space: pre-wrap;">{{.Desc}}</p>
{{end -}}
<h3>Details</h3>
<table cellpadding="4" style="border-collapse: collapse;">
{{range .Facts}}<tr><th align="left" style="padding-right: 16px;">{{.Title}}</th><td>{{if .Code}}<code>{{.Value}}</code>{{else}}{{.Value}}{{end}}</td></tr>
{{end -}}
</table>
{{if .Body}}<h3>Last Ping Body</h3>
<pre style="background: #f5f5f5; padding: 8px; white-space: pre-wrap;">{{.Body}}</pre>
{{end -}}
<p style="color: #888;">-- <br>Vigil</p>
</body>
</html>
`))
