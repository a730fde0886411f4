// Package dashboard is Vigil's web face: the status board of a project's
// checks, a check's page (its state and why, ping log, flips, schedule,
// ping URLs, badges) and pause/resume, served by the manager's HTTP server
// in every replica at /.
//
// Pages are rendered on the server with html/template from the same
// informer cache and ping store the Management API reads, and work without
// JavaScript; a small embedded script adds live updates (it refetches the
// page's live part), the search box's instant filtering and copy buttons.
// There is no build step and nothing is fetched from elsewhere: the
// templates, the stylesheet and the script are embedded in the binary
// (docs/dashboard.md says why).
//
// A user signs in with one of the project's API keys; what each key kind
// sees is exactly what the Management API shows it. The key is kept in a
// sealed, HttpOnly, SameSite=Strict session cookie (session.go), and every
// form carries a CSRF token bound to the session.
package dashboard

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/webpage"
)

//go:embed templates/*.html
var templateFS embed.FS

// DefaultSessionTTL is how long a sign-in lasts.
const DefaultSessionTTL = 12 * time.Hour

// Server serves the dashboard.
type Server struct {
	// Checks is the door for what can be done to a check; its clock
	// tells the time for statuses and session expiry.
	Checks *checks.Door
	// Projects authenticates API keys and holds each project's secrets.
	Projects *project.Registry
	// BaseURL is the site root shown in ping URLs and snippets; a https://
	// one makes the cookies Secure.
	BaseURL string
	// SessionTTL is how long a sign-in lasts (DefaultSessionTTL when 0).
	SessionTTL time.Duration
	// TestChannel sends a test notification about check through the
	// namespace's Channel name (the dispatcher's Test); nil hides the
	// dashboard's test buttons' effect (they answer 404).
	TestChannel func(ctx context.Context, namespace, name string, check *v1.Check) error
	Log         logr.Logger

	pages     webpage.Pages
	snapshots snapshots
	runStats  runStatsCache
	testTurns turns
	fallback  []byte // seals sessions of a project without a signing secret
}

// Handler returns the dashboard's routes: /, /login, /logout, /checks/…
// and the pages' shared /static/…. Register it for exactly those paths.
func (s *Server) Handler() http.Handler {
	s.pages = parseTemplates()
	s.fallback = make([]byte, 32)
	if _, err := rand.Read(s.fallback); err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /static/", webpage.Static())
	mux.HandleFunc("GET /{$}", s.signedIn(s.board))
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/", http.StatusSeeOther) })
	mux.HandleFunc("POST /logout", s.signedIn(s.checkCSRF(s.logout)))
	mux.HandleFunc("GET /checks/{id}", s.signedIn(s.withCheck(s.checkPage)))
	mux.HandleFunc("GET /checks/{id}/pings/{n}/body", s.signedIn(s.readWrite(s.withCheck(s.pingBody))))
	mux.HandleFunc("POST /checks/{id}/pause", s.signedIn(s.readWrite(s.checkCSRF(s.withCheck(s.pause)))))
	mux.HandleFunc("POST /checks/{id}/resume", s.signedIn(s.readWrite(s.checkCSRF(s.withCheck(s.resume)))))
	mux.HandleFunc("POST /checks/{id}/snooze", s.signedIn(s.readWrite(s.checkCSRF(s.withCheck(s.snooze)))))
	mux.HandleFunc("POST /checks/{id}/ack", s.signedIn(s.readWrite(s.checkCSRF(s.withCheck(s.ack)))))
	mux.HandleFunc("POST /checks/{id}/channels/{name}/test", s.signedIn(s.readWrite(s.checkCSRF(s.withCheck(s.testChannel)))))
	return webpage.SecurityHeaders(s.secure(), mux)
}

// visitor is a signed-in request's project and key kind.
type visitor struct {
	Namespace string
	ReadWrite bool
	CSRF      string
	// Who names the visitor in what they do (an acknowledgement): the
	// label of the key they signed in with.
	Who string
}

type visitorKey struct{}

func visitorOf(r *http.Request) visitor { return r.Context().Value(visitorKey{}).(visitor) }

// Cookie names: __Host- binds the cookie to this exact origin over HTTPS.
func (s *Server) sessionCookie() string {
	if s.secure() {
		return "__Host-vigil-session"
	}
	return "vigil_session"
}

func (s *Server) loginCookie() string {
	if s.secure() {
		return "__Host-vigil-login"
	}
	return "vigil_login"
}

func (s *Server) secure() bool { return strings.HasPrefix(s.BaseURL, "https://") }

func (s *Server) setCookie(w http.ResponseWriter, name, value string, ttl time.Duration) {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: s.secure(), SameSite: http.SameSiteStrictMode}
	if ttl > 0 {
		c.MaxAge = int(ttl.Seconds())
	} else {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}

func (s *Server) now() time.Time { return s.Checks.Now() }

func (s *Server) ttl() time.Duration {
	if s.SessionTTL > 0 {
		return s.SessionTTL
	}
	return DefaultSessionTTL
}

// secret is the project's session sealing secret: its badge signing
// secret, which every replica reads from the project Secret; a project
// without one (a hand-written Secret) gets this replica's own, so its
// sessions hold on this replica only.
func (s *Server) secret(namespace string) []byte {
	if info, ok := s.Projects.Project(namespace); ok && info.SigningSecret != "" {
		return []byte(info.SigningSecret)
	}
	return s.fallback
}

// signedIn opens the session, authenticates its key again and passes the
// visitor on; without a valid session it shows the sign-in page (401), or
// answers a live-update fetch with a bare 401.
func (s *Server) signedIn(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, ok, problem := s.visitor(r)
		if !ok {
			if problem != "" {
				// Only a cookie that was sent and failed is cleared: a
				// SameSite=Strict cookie is not sent on a link from
				// elsewhere, and the session it belongs to is still good.
				s.setCookie(w, s.sessionCookie(), "", 0)
			}
			if isFragment(r) {
				http.Error(w, problem, http.StatusUnauthorized)
				return
			}
			if problem == "" && r.Method == http.MethodGet && r.Header.Get("Sec-Fetch-Site") == "cross-site" {
				// A link from elsewhere (a notification, a chat) does not
				// carry the SameSite=Strict cookie; the same URL opened again
				// from this page does. The page does that once: a request
				// from this site without a cookie gets the sign-in page.
				s.render(w, r, http.StatusOK, "bounce", map[string]any{"Title": "Opening", "URL": r.URL.RequestURI()})
				return
			}
			s.signInPage(w, r, http.StatusUnauthorized, problem)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), visitorKey{}, v)))
	}
}

// visitor returns the request's visitor, or, when it has none, why: ""
// for a request without a session cookie (nothing to say), otherwise what
// was wrong with its cookie.
func (s *Server) visitor(r *http.Request) (v visitor, ok bool, problem string) {
	c, err := r.Cookie(s.sessionCookie())
	if err != nil || c.Value == "" {
		return visitor{}, false, ""
	}
	ns, err := cookieNamespace(c.Value)
	if err != nil {
		return visitor{}, false, "Your session is not valid. Sign in again."
	}
	sess, err := open(s.secret(ns), ns, c.Value)
	if err != nil {
		return visitor{}, false, "Your session is not valid. Sign in again."
	}
	if sess.expired(s.now()) {
		return visitor{}, false, "Your session expired. Sign in again."
	}
	keyNS, access := s.Projects.Authenticate(sess.Key)
	if access == project.NoAccess || keyNS != ns {
		return visitor{}, false, "The API key of your session no longer exists. Sign in with a current key."
	}
	return visitor{Namespace: ns, ReadWrite: access == project.ReadWrite, CSRF: sess.CSRF,
		Who: "dashboard, key " + project.KeyLabel(sess.Key)}, true, ""
}

// login signs in with an API key from the sign-in form.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		s.signInPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	c, err := r.Cookie(s.loginCookie())
	if err != nil || !sameToken(c.Value, r.PostForm.Get("csrf")) {
		s.signInPage(w, r, http.StatusForbidden, "The sign-in form expired or did not come from this page. Try again.")
		return
	}
	key := strings.TrimSpace(r.PostForm.Get("key"))
	if len(key) != project.KeyLength {
		s.signInPage(w, r, http.StatusUnauthorized, "That is not an API key: a key is "+strconv.Itoa(project.KeyLength)+" characters.")
		return
	}
	ns, access := s.Projects.Authenticate(key)
	if access == project.NoAccess {
		s.signInPage(w, r, http.StatusUnauthorized, "Wrong API key: no project has it.")
		return
	}
	value, err := seal(s.secret(ns), ns, session{Key: key, Expires: s.now().Add(s.ttl()).Unix(), CSRF: newToken()})
	if err != nil {
		s.Log.Error(err, "sealing a dashboard session")
		http.Error(w, "could not sign in", http.StatusInternalServerError)
		return
	}
	s.setCookie(w, s.sessionCookie(), value, s.ttl())
	s.setCookie(w, s.loginCookie(), "", 0)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the session in this browser.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	s.setCookie(w, s.sessionCookie(), "", 0)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signInPage shows the sign-in form with a fresh login CSRF token
// (double-submitted: in a cookie and in the form).
func (s *Server) signInPage(w http.ResponseWriter, r *http.Request, status int, problem string) {
	token := newToken()
	s.setCookie(w, s.loginCookie(), token, time.Hour)
	s.render(w, r, status, "signin", map[string]any{"CSRF": token, "Problem": problem, "Title": "Sign in"})
}

// readWrite refuses read-only keys.
func (s *Server) readWrite(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !visitorOf(r).ReadWrite {
			s.errorPage(w, r, http.StatusForbidden, "This needs a read-write API key; you signed in with a read-only key.")
			return
		}
		next(w, r)
	}
}

// checkCSRF requires the session's CSRF token in the form.
func (s *Server) checkCSRF(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		if err := r.ParseForm(); err != nil || !sameToken(visitorOf(r).CSRF, r.PostForm.Get("csrf")) {
			s.errorPage(w, r, http.StatusForbidden, "The form did not carry this session's CSRF token: reload the page and try again.")
			return
		}
		next(w, r)
	}
}

type checkKey struct{}

// withCheck finds the check the path names within the visitor's project;
// another project's check is not found, as if it did not exist.
func (s *Server) withCheck(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c, err := s.lookup(r, visitorOf(r), r.PathValue("id"))
		switch {
		case errors.Is(err, checks.ErrNotFound):
			s.errorPage(w, r, http.StatusNotFound, "No such check in this project.")
			return
		case err != nil:
			s.unavailable(w, r, "looking up the check", err)
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), checkKey{}, c)))
	}
}

// lookup finds a check by the ID a visitor knows it by: a read-write key
// by its UUID, a read-only key by its unique key only (see row). Another
// project's check is not found.
func (s *Server) lookup(r *http.Request, v visitor, id string) (*v1.Check, error) {
	if !v.ReadWrite {
		if !uniqueKeyRE.MatchString(id) {
			return nil, checks.ErrNotFound
		}
		return s.Checks.ByUniqueKey(v.Namespace, id)
	}
	if parsed, err := uuid.Parse(id); err != nil || parsed.String() != id {
		return nil, checks.ErrNotFound
	}
	c, err := s.Checks.ByUUID(r.Context(), id)
	if err == nil && c.Namespace != v.Namespace {
		return nil, checks.ErrNotFound
	}
	return c, err
}

var uniqueKeyRE = regexp.MustCompile(`^[0-9a-f]{40}$`)

func checkOf(r *http.Request) *v1.Check { return r.Context().Value(checkKey{}).(*v1.Check) }

// unavailable answers a failure of the store or the cache.
func (s *Server) unavailable(w http.ResponseWriter, r *http.Request, what string, err error) {
	status, msg := webpage.Failure(w, r, s.Checks, s.Log, what, err)
	s.errorPage(w, r, status, msg)
}

func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if isFragment(r) {
		http.Error(w, msg, status)
		return
	}
	s.render(w, r, status, "error", webpage.ErrorData(status, msg))
}

// isFragment: the script's live update asks for the page's live part only.
func isFragment(r *http.Request) bool { return r.Header.Get("X-Vigil-Fragment") == "1" }
