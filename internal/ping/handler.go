package ping

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/httpserver"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/store"
)

// DefaultBodyLimit is how much of a ping's body is kept (100 kB, as the
// hosted reference service); the rest is dropped, not rejected.
const DefaultBodyLimit = 100_000

// Handler serves /ping/... .
type Handler struct {
	// Checks finds the checks pings name, creates those of ?create=1 and
	// records the pings.
	Checks *checks.Door
	// Projects resolves ping keys.
	Projects *project.Registry
	// TrustedProxies may set X-Forwarded-For and X-Forwarded-Proto.
	TrustedProxies []netip.Prefix
	// BodyLimit bounds a stored ping body (DefaultBodyLimit when 0).
	BodyLimit int
	// Bodies bounds the body bytes being read at once, with the API's;
	// nil bounds nothing.
	Bodies *httpserver.BodyBudget
	// Log receives errors.
	Log logr.Logger
}

// msgStoreUnavailable answers a ping while the ping store's database does
// not: clients are asked to wait longer than for a busy server.
const msgStoreUnavailable = "the ping store is unavailable, try again"

// msgStoreFull answers a ping while the ping store's volume is full: an
// operator must free space, so clients are asked to wait longer still.
const msgStoreFull = "the ping store is full, try again later"

// retryAfter is the Retry-After of a 503 or a 429 with this message.
func retryAfter(msg string) string {
	if msg == msgStoreUnavailable {
		return "5"
	}
	return "1"
}

// provisionTimeout bounds the API server's answer when a ping creates its
// check (?create=1): a slow or unreachable API server is answered with 503
// and Retry-After, not a hang.
const provisionTimeout = 3 * time.Second

func (h *Handler) bodyLimit() int { return bodyLimitOr(h.BodyLimit) }

// bodyLimitOr is a configured body limit, or DefaultBodyLimit when it is not
// positive.
func bodyLimitOr(limit int) int {
	if limit > 0 {
		return limit
	}
	return DefaultBodyLimit
}

// ServeHTTP handles a ping of any HTTP method, as the reference does (there
// is no 405 on ping URLs; HEAD is answered without a body).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	now := h.Checks.Now()
	target, msg, ok := ParsePath(strings.TrimPrefix(r.URL.Path, "/ping/"))
	if !ok {
		respond(w, http.StatusNotFound, msgNotFound, false)
		return
	}
	uuidForm := target.UUID != ""
	if msg != "" {
		respond(w, http.StatusBadRequest, msg, uuidForm)
		return
	}
	check, created, status, msg := h.resolve(r, target)
	if check == nil {
		if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", retryAfter(msg))
		}
		respond(w, status, msg, uuidForm)
		return
	}
	if target.BadExitStatus {
		respond(w, http.StatusBadRequest, msgInvalidURL, uuidForm)
		return
	}

	p, release, ok := h.readPing(w, r, target, now, uuidForm)
	defer release()
	if !ok {
		return
	}
	p.Kind = KindOf(check, p)
	_, err := h.Checks.RecordPing(r.Context(), check, p)
	if h.refused(w, err, check, uuidForm) {
		return
	}
	w.Header().Set("Ping-Body-Limit", strconv.Itoa(h.bodyLimit()))
	if created {
		respond(w, http.StatusCreated, "Created", true)
		return
	}
	respond(w, http.StatusOK, "OK", true)
}

// readPing reads the ping a request makes, its kind as the URL says: its
// body within the body budget (a body over the limit is truncated, not
// refused; one that did not arrive whole is no ping: its client sees an
// error and tries again, and the ping must not then be stored twice) and
// its rid. When it cannot, it answers the request and ok is false. Call
// release once the body is stored.
func (h *Handler) readPing(w http.ResponseWriter, r *http.Request, target Target, now time.Time, uuidForm bool) (p store.Ping, release func(), ok bool) {
	body, release, err := h.Bodies.ReadBody(r, int64(h.bodyLimit()))
	switch {
	case errors.Is(err, httpserver.ErrBusy):
		w.Header().Set("Retry-After", "1")
		respond(w, http.StatusServiceUnavailable, "busy, try again", uuidForm)
		return store.Ping{}, release, false
	case err != nil && !errors.Is(err, httpserver.ErrBodyTooLarge):
		respond(w, http.StatusBadRequest, "could not read the request body", uuidForm)
		return store.Ping{}, release, false
	}
	rid, ok := ParseRID(r.URL.Query()["rid"], r.URL.Query().Has("rid"))
	if !ok {
		respond(w, http.StatusBadRequest, msgInvalidUUID, uuidForm)
		return store.Ping{}, release, false
	}
	return store.Ping{
		Kind: target.Kind, At: now, RID: rid, ExitStatus: target.ExitStatus,
		Scheme: truncateRunes(h.scheme(r), maxScheme), RemoteAddr: h.clientAddr(r), Method: truncateRunes(r.Method, maxMethod),
		UA: truncateRunes(r.UserAgent(), maxUA), Body: body,
	}, release, true
}

// KindOf applies the check's rules to a ping as it came: a check that
// takes only POST ignores other methods, and one that filters bodies
// classifies the body by its keywords. The Door applies them to early
// pings when it records them.
func KindOf(check *v1.Check, p store.Ping) monitor.PingKind {
	kind := p.Kind
	if check.Spec.Methods == http.MethodPost && p.Method != http.MethodPost {
		kind = monitor.PingIgnored
	}
	if kind != monitor.PingIgnored && check.Spec.FilterHTTPBody {
		kind = Classify([]string{strings.ToValidUTF8(string(p.Body), string(utf8.RuneError))},
			KeywordsOf(&check.Spec), check.Spec.FilterDefaultFail)
	}
	return kind
}

// refused answers a ping the store refused (err not nil), and reports
// whether it did; check is nil for an early ping.
func (h *Handler) refused(w http.ResponseWriter, err error, check *v1.Check, uuidForm bool) bool {
	switch {
	case errors.Is(err, store.ErrOverloaded):
		w.Header().Set("Retry-After", "1")
		respond(w, http.StatusServiceUnavailable, "busy, try again", uuidForm)
	case errors.Is(err, store.ErrFull):
		// Said once by the store (a log line and vigil_store_full).
		w.Header().Set("Retry-After", "30")
		respond(w, http.StatusServiceUnavailable, msgStoreFull, uuidForm)
	case errors.Is(err, store.ErrUnavailable):
		// Not logged per ping: the store logs nothing either, and the
		// heartbeat and the pings' 503s say it.
		w.Header().Set("Retry-After", retryAfter(msgStoreUnavailable))
		respond(w, http.StatusServiceUnavailable, msgStoreUnavailable, uuidForm)
	case err != nil:
		if check != nil {
			h.Log.Error(err, "storing a ping", "check", client.ObjectKeyFromObject(check))
		} else {
			h.Log.Error(err, "keeping an early ping")
		}
		w.Header().Set("Retry-After", "1")
		respond(w, http.StatusServiceUnavailable, "could not store the ping, try again", uuidForm)
	default:
		return false
	}
	return true
}

// ServeEarly answers a ping that comes before the Door is ready, when it
// names a UUID whose holder the store knows: it is kept in the store and
// acknowledged, and recorded when the Door is ready (checks.HoldEarly). It
// reports false, having answered nothing, for any other request: that one
// waits for the Door.
func (h *Handler) ServeEarly(w http.ResponseWriter, r *http.Request) bool {
	if !strings.HasPrefix(r.URL.Path, "/ping/") {
		return false
	}
	now := h.Checks.Now()
	target, msg, ok := ParsePath(strings.TrimPrefix(r.URL.Path, "/ping/"))
	if !ok || msg != "" || target.UUID == "" {
		return false
	}
	hold, ok, err := h.Checks.HoldEarly(r.Context(), target.UUID)
	switch {
	case err != nil:
		w.Header().Set("Retry-After", retryAfter(msgStoreUnavailable))
		respond(w, http.StatusServiceUnavailable, msgStoreUnavailable, true)
		return true
	case !ok:
		return false
	}
	defer hold.Release()
	if target.BadExitStatus {
		respond(w, http.StatusBadRequest, msgInvalidURL, true)
		return true
	}
	p, release, ok := h.readPing(w, r, target, now, true)
	defer release()
	if !ok {
		return true
	}
	if h.refused(w, hold.Record(r.Context(), p), nil, true) {
		return true
	}
	w.Header().Set("Ping-Body-Limit", strconv.Itoa(h.bodyLimit()))
	respond(w, http.StatusOK, "OK", true)
	return true
}

// resolve finds the check a ping names, creating it for a slug URL with
// ?create=1. It returns the check or the status and body to answer.
func (h *Handler) resolve(r *http.Request, t Target) (check *v1.Check, created bool, status int, msg string) {
	ctx := r.Context()
	c, namespace, err := lookupCheck(ctx, h.Checks, h.Projects, t)
	switch {
	case err == nil:
		return c, false, 0, ""
	case errors.Is(err, errSlugAmbiguous):
		return nil, false, http.StatusConflict, msgAmbiguousSlug
	case errors.Is(err, errNoSlugMatch):
		if r.URL.Query().Get("create") != "1" {
			return nil, false, http.StatusNotFound, msgNotFound
		}
		// ?create=1: provision it below.
	case errors.Is(err, errNoCheck):
		return nil, false, http.StatusNotFound, msgNotFound
	case h.Checks.Unavailable(err):
		// Asking the store who owns the UUID failed as recording would.
		return nil, false, http.StatusServiceUnavailable, msgStoreUnavailable
	default:
		return nil, false, http.StatusServiceUnavailable, "try again"
	}
	ctx, cancel := context.WithTimeout(ctx, provisionTimeout)
	defer cancel()
	// The reference's defaults (a day, an hour's grace), named and slugged
	// after the slug, every channel of the project assigned; a ping to the
	// same slug that took its turn first created it.
	spec := v1.DefaultCheckSpec()
	spec.Name, spec.Slug = t.Slug, t.Slug
	c, created, err = h.Checks.Create(ctx, checks.Creation{Namespace: namespace, Spec: spec, AllChannels: true,
		Existing: func(c *v1.Check) bool { return c.Spec.Slug == t.Slug }})
	var limit *checks.LimitError
	switch {
	case errors.As(err, &limit):
		return nil, false, http.StatusNotFound, msgNotFound
	case errors.Is(err, checks.ErrOverShare):
		return nil, false, http.StatusTooManyRequests, "too many checks being created in this project, try again"
	case err != nil:
		// The API server is slow, unreachable or refused: the client may
		// try again.
		h.Log.Error(err, "auto-provisioning a check", "namespace", namespace, "slug", t.Slug)
		return nil, false, http.StatusServiceUnavailable, "could not create the check, try again"
	}
	return c, created, 0, ""
}

// clientAddr reads every X-Forwarded-For line: a proxy may add its own
// line rather than append to the client's.
func (h *Handler) clientAddr(r *http.Request) string {
	return ClientAddr(r.RemoteAddr, strings.Join(r.Header.Values("X-Forwarded-For"), ","), h.TrustedProxies)
}

// scheme is the scheme the client used: X-Forwarded-Proto from a trusted
// proxy, else the connection's.
func (h *Handler) scheme(r *http.Request) string {
	host := r.RemoteAddr
	if p := r.Header.Get("X-Forwarded-Proto"); p != "" && isTrusted(hostOnly(host), h.TrustedProxies) {
		return p
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

func hostOnly(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i >= 0 {
		return strings.Trim(addr[:i], "[]")
	}
	return addr
}

// respond writes a plain-text answer. Success and the UUID form's errors
// carry the reference's no-cache headers; success also allows any origin.
func respond(w http.ResponseWriter, status int, text string, noCache bool) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if status < 300 {
		h.Set("Access-Control-Allow-Origin", "*")
	}
	if noCache {
		h.Set("Cache-Control", "max-age=0, no-cache, no-store, must-revalidate, private")
		h.Set("Expires", time.Now().UTC().Format(http.TimeFormat))
	}
	w.WriteHeader(status)
	_, _ = io.WriteString(w, text)
}
