package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/egress"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/version"
)

// SecretFunc reads one key of a Secret in the channel's namespace.
type SecretFunc func(ctx context.Context, ref v1.SecretKeyRef) (string, error)

// Delivery is everything a sender needs to deliver one message through one
// channel.
type Delivery struct {
	// Channel is the channel to deliver through.
	Channel *v1.Channel
	// Message is what to deliver.
	Message Message
	// Secret reads the Secret keys the channel references.
	Secret SecretFunc
	// Egress is the guard every connection of the delivery goes through,
	// for the Channel's namespace: the only way a sender reaches the
	// network. Nil means the default policy, with no exceptions.
	Egress *egress.Guard
	// Gate, when set, is asked before each connection to an endpoint
	// (host:port as the channel names it): before every HTTP request and
	// every SMTP session. An error refuses it: nothing is sent and Send
	// returns the error, wrapped. The dispatcher's breaker uses it to skip
	// endpoints that keep timing out.
	Gate func(endpoint string) error
	// Timeout bounds each request of the delivery, whatever the kind: an
	// HTTP request, or a whole SMTP session from dialling to QUIT. Zero
	// means DefaultHTTPTimeout. A context deadline that comes sooner ends
	// it sooner.
	Timeout time.Duration

	// recorder holds the Secret values read so far (set by Send).
	recorder *secretRecorder
}

// DefaultHTTPTimeout bounds each request of a delivery of every kind (an
// HTTP request, an SMTP session), as the reference bounds its requests;
// connecting is bounded sooner (egress.ConnectTimeout). One bound for every
// kind, so that a server that accepts connections and never answers holds
// a delivery worker, and trips the breaker, as soon whatever it speaks.
const DefaultHTTPTimeout = 10 * time.Second

// timeout is the bound of each request of the delivery.
func (d *Delivery) timeout() time.Duration { return cmp.Or(d.Timeout, DefaultHTTPTimeout) }

// defaultEgress is the guard of a Delivery without one: nothing but global
// addresses.
var defaultEgress = egress.New(egress.Options{})

// httpClient is the client of the HTTP kinds: through the guard, bounded by
// DefaultHTTPTimeout, following no redirects (a 3xx answer is a retryable error).
func (d *Delivery) httpClient() *http.Client {
	return &http.Client{
		Transport:     d.Egress.Transport(d.Channel.Namespace),
		Timeout:       d.timeout(),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// dial connects to address ("host:port") through the guard, for the kinds
// that speak something other than HTTP.
func (d *Delivery) dial(ctx context.Context, address string) (net.Conn, error) {
	return d.Egress.DialContext(ctx, d.Channel.Namespace, "tcp", address)
}

var userAgent = sync.OnceValue(func() string {
	v := version.Get()
	if v == "" {
		v = "dev"
	}
	return "Vigil/" + v
})

// UserAgent is the User-Agent header every HTTP kind sends: "Vigil/<version>".
func UserAgent() string { return userAgent() }

// Send delivers a message through a channel: it looks up the channel's kind
// and calls its sender.
//
// A nil error means the message was delivered, or that the channel does not
// send this event at all (a webhook channel without an up request, on an up
// flip). Errors that retrying cannot fix are marked (see IsPermanent); any
// other error may succeed when retried. No error contains a value read from
// a Secret: URLs that came from a Secret show only their host, and every
// Secret value read during the delivery is replaced by "[redacted]" in the
// error's text.
func Send(ctx context.Context, d Delivery) error {
	if d.Channel == nil {
		return Permanent(errors.New("no channel"))
	}
	k, ok := Lookup(d.Channel.Spec.Kind)
	if !ok {
		return Permanent(fmt.Errorf("unknown channel kind %q", d.Channel.Spec.Kind))
	}
	if d.Message.Report != nil && d.Channel.Spec.Kind != v1.ChannelEmail {
		return Permanent(fmt.Errorf("a %s Channel does not take reports: only email does", d.Channel.Spec.Kind))
	}
	if _, carries := k.(acknowledger); d.Message.Notice == monitor.NoticeAck && !carries {
		return nil // an acknowledgement is news to an incident, not to people
	}
	if _, tracks := k.(incidentTracker); tracks && d.Message.aside() {
		// An incident tracker would open an incident for a check that is
		// not down: a failure below the threshold, a maintenance window's
		// start and end, and the SLA are for people to read.
		return nil
	}
	if d.Channel.Spec.Kind != v1.ChannelWebhook && d.Message.Report == nil {
		d.Message.applyTemplate(d.Channel.Spec.Template)
	}
	if d.Egress == nil {
		d.Egress = defaultEgress
	}
	rec := &secretRecorder{read: d.Secret}
	d.Secret, d.recorder = rec.get, rec
	err := k.Send(ctx, d)
	if err == nil {
		return nil
	}
	secrets := rec.values()
	// Callers may read a StatusError's fields directly, past the redacting
	// Error method, so scrub them too.
	var se *StatusError
	if errors.As(err, &se) {
		se.Target, se.Body = redact(se.Target, secrets), redact(se.Body, secrets)
	}
	return &redactedError{err: fmt.Errorf("%s: %w", d.Channel.Spec.Kind, err), secrets: secrets}
}

// gate asks d.Gate, if any, whether endpoint may be contacted.
func (d *Delivery) gate(endpoint string) error {
	if d.Gate == nil {
		return nil
	}
	return d.Gate(endpoint)
}

// secretRecorder remembers every Secret value read through it, so errors can
// be scrubbed of them.
type secretRecorder struct {
	read SecretFunc
	mu   sync.Mutex
	seen []string
}

func (r *secretRecorder) get(ctx context.Context, ref v1.SecretKeyRef) (string, error) {
	if r.read == nil {
		return "", fmt.Errorf("reading Secret %q: no Secret reader", ref.Name)
	}
	v, err := r.read(ctx, ref)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, sensitiveParts(v)...)
	return v, nil
}

// minRedacted is the shortest Secret value scrubbed from errors; shorter
// values would mangle the text and protect nothing.
const minRedacted = 4

// sensitiveParts is a Secret value and, when it is a URL, the parts of it
// that may show up on their own (path, query, password), in any escaping.
func sensitiveParts(v string) []string {
	parts := []string{v, strings.TrimSpace(v)}
	if u, err := url.Parse(strings.TrimSpace(v)); err == nil && u.Host != "" {
		parts = append(parts, u.Path, u.EscapedPath(), u.RawQuery, u.Fragment)
		if p, ok := u.User.Password(); ok {
			parts = append(parts, p)
		}
		if u.User != nil {
			parts = append(parts, u.User.Username())
		}
		for _, vs := range u.Query() {
			parts = append(parts, vs...)
		}
		// Tokens are often one path segment (Slack's last three, Discord's
		// last one); short segments such as "api" are not worth hiding.
		for _, seg := range strings.Split(u.Path, "/") {
			if len(seg) >= 8 {
				parts = append(parts, seg)
			}
		}
	}
	out := make([]string, 0, 3*len(parts))
	for _, p := range parts {
		if len(p) >= minRedacted && p != "/" {
			out = append(out, p, url.QueryEscape(p), url.PathEscape(p))
		}
	}
	return out
}

func (r *secretRecorder) values() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	vals := append([]string(nil), r.seen...)
	// Longest first, so a value is replaced before any part of it.
	sort.Slice(vals, func(i, j int) bool { return len(vals[i]) > len(vals[j]) })
	return vals
}

// redactedError hides Secret values in its text; errors.Is and errors.As
// see the original error.
type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string { return redact(e.err.Error(), e.secrets) }
func (e *redactedError) Unwrap() error { return e.err }

func redact(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, "[redacted]")
	}
	return s
}
