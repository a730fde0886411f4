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
// form carries a CSRF token bound to the session. Where the administrator
// configured an OpenID Connect provider, people sign in as themselves
// instead (package signin), and Kubernetes RBAC decides what they see and
// do (package access): every project they may list checks in, on one
// board, and the changes of the projects they may update checks in.
package dashboard

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"golang.org/x/sync/errgroup"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/access"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/signin"
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
	// SignIn, when set, signs people in through OpenID Connect, and
	// Access (then required) asks Kubernetes what they may do.
	SignIn *signin.Service
	Access *access.Authorizer
	// Bindings, when set, narrows the projects a person's board asks
	// about to those with a RoleBinding naming them; nil asks about every
	// project.
	Bindings *access.Bindings
	// NoKeySignIn turns the API-key sign-in off (with SignIn set).
	NoKeySignIn bool
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
	mux.HandleFunc("GET /auth/signin", s.oidcBegin)
	mux.HandleFunc("GET /auth/callback", s.oidcFinish)
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

// visitor is a signed-in request's project and key kind, or the person
// signed in. On a check's routes a person's visitor is narrowed to the
// check's project (withCheck): Namespace is it, and ReadWrite whether
// they may update checks there.
type visitor struct {
	Namespace string
	ReadWrite bool
	// Person is a person signed in through OpenID Connect; nil for a key.
	Person *signin.Person
	CSRF   string
	// Who names the visitor in what they do (an acknowledgement): the
	// label of the key they signed in with, or the person's name.
	Who string
}

// personName is the signed-in person's name, "" for a key.
func (v visitor) personName() string {
	if v.Person == nil {
		return ""
	}
	return v.Person.Username
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
				if s.SignIn != nil {
					s.SignIn.ClearCookie(w)
				}
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
	if s.SignIn != nil {
		p, ok, problem, err := s.SignIn.Person(r)
		switch {
		case err != nil:
			s.Log.Error(err, "reading a dashboard session")
			return visitor{}, false, "Your session could not be read; sign in again in a moment."
		case ok:
			return visitor{Person: &p, CSRF: p.CSRF, Who: "dashboard, " + p.Username}, true, ""
		case problem != "":
			return visitor{}, false, problem
		}
		if s.NoKeySignIn {
			return visitor{}, false, ""
		}
	}
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
	if s.SignIn != nil && s.NoKeySignIn {
		s.signInPage(w, r, http.StatusForbidden, "Signing in with an API key is turned off here: sign in with your account.")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 4096)
	if err := r.ParseForm(); err != nil {
		s.signInPage(w, r, http.StatusBadRequest, "The form could not be read.")
		return
	}
	c, err := r.Cookie(s.loginCookie())
	if err != nil || !signin.SameToken(c.Value, r.PostForm.Get("csrf")) {
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
	value, err := seal(s.secret(ns), ns, session{Key: key, Expires: s.now().Add(s.ttl()).Unix(), CSRF: signin.NewToken()})
	if err != nil {
		s.Log.Error(err, "sealing a dashboard session")
		http.Error(w, "could not sign in", http.StatusInternalServerError)
		return
	}
	s.setCookie(w, s.sessionCookie(), value, s.ttl())
	s.setCookie(w, s.loginCookie(), "", 0)
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout ends the session in this browser; a person's "everywhere" ends
// every session of theirs, on every replica.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	s.setCookie(w, s.sessionCookie(), "", 0)
	if v := visitorOf(r); v.Person != nil {
		if err := s.SignIn.SignOut(w, r, *v.Person, r.PostForm.Get("everywhere") == "1"); err != nil {
			s.unavailable(w, r, "ending the session", err)
			return
		}
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// signInPage shows the sign-in form with a fresh login CSRF token
// (double-submitted: in a cookie and in the form).
func (s *Server) signInPage(w http.ResponseWriter, r *http.Request, status int, problem string) {
	token := signin.NewToken()
	s.setCookie(w, s.loginCookie(), token, time.Hour)
	s.render(w, r, status, "signin", map[string]any{"CSRF": token, "Problem": problem, "Title": "Sign in",
		"OIDC": s.SignIn != nil, "Keys": s.SignIn == nil || !s.NoKeySignIn, "Next": r.URL.RequestURI()})
}

// oidcBegin sends the browser to the identity provider.
func (s *Server) oidcBegin(w http.ResponseWriter, r *http.Request) {
	if s.SignIn == nil {
		http.NotFound(w, r)
		return
	}
	if err := s.SignIn.Begin(w, r, r.URL.Query().Get("next")); err != nil {
		s.signInProblem(w, r, err)
	}
}

// oidcFinish is the redirect URL: the provider sends the browser back
// here, and the session starts.
func (s *Server) oidcFinish(w http.ResponseWriter, r *http.Request) {
	if s.SignIn == nil {
		http.NotFound(w, r)
		return
	}
	next, err := s.SignIn.Finish(w, r)
	if err != nil {
		s.signInProblem(w, r, err)
		return
	}
	// The session's cookie is SameSite=Strict, and this request came from
	// the provider's site: the page it goes to bounces once (signedIn).
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signInProblem shows the sign-in page with what went wrong.
func (s *Server) signInProblem(w http.ResponseWriter, r *http.Request, err error) {
	var p *signin.Problem
	if !errors.As(err, &p) {
		s.Log.Error(err, "signing in")
		s.signInPage(w, r, http.StatusInternalServerError, "Signing in failed; try again.")
		return
	}
	if p.Err != nil {
		s.Log.Info("a sign-in did not succeed", "problem", p.Message, "cause", p.Err.Error())
	}
	s.signInPage(w, r, p.Status, p.Message)
}

// may reports whether v may do verb with the checks of namespace: a key in
// its own project only (Operate with a read-write key), a person as
// Kubernetes RBAC says.
func (s *Server) may(r *http.Request, v visitor, namespace string, verb access.Verb) (bool, error) {
	if v.Person == nil {
		return namespace == v.Namespace && (verb == access.View || v.ReadWrite), nil
	}
	return s.Access.May(r.Context(), access.Person{Username: v.Person.Username, Groups: v.Person.Groups}, namespace, verb)
}

// viewableAtOnce bounds the reviews one board asks at once.
const viewableAtOnce = 8

// viewable lists the projects v may see, sorted. A person may see every
// project when a ClusterRoleBinding lets them list checks everywhere
// (one question); otherwise each project with checks where a RoleBinding
// names them (Bindings), or each project with checks, is asked about
// (package access keeps the answers).
func (s *Server) viewable(r *http.Request, v visitor) ([]string, error) {
	if v.Person == nil {
		return []string{v.Namespace}, nil
	}
	all := s.Checks.Namespaces()
	if everywhere, err := s.may(r, v, "", access.View); err != nil || everywhere {
		return all, err
	}
	if s.Bindings != nil {
		if named, ok := s.Bindings.Namespaces(access.Person{Username: v.Person.Username, Groups: v.Person.Groups}); ok {
			all = slices.DeleteFunc(all, func(ns string) bool { _, found := slices.BinarySearch(named, ns); return !found })
		}
	}
	allowed := make([]bool, len(all))
	g, ctx := errgroup.WithContext(r.Context())
	g.SetLimit(viewableAtOnce)
	for i, ns := range all {
		g.Go(func() error {
			ok, err := s.may(r.WithContext(ctx), v, ns, access.View)
			allowed[i] = ok
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []string
	for i, ns := range all {
		if allowed[i] {
			out = append(out, ns)
		}
	}
	return out, nil
}

// readWrite refuses read-only keys. A person's right to change a
// project's checks is known once the check is: withCheck asks, for the
// routes readWrite marks.
func (s *Server) readWrite(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := visitorOf(r)
		if v.Person != nil {
			next(w, r.WithContext(context.WithValue(r.Context(), writeKey{}, true)))
			return
		}
		if !v.ReadWrite {
			s.errorPage(w, r, http.StatusForbidden, "This needs a read-write API key; you signed in with a read-only key.")
			return
		}
		next(w, r)
	}
}

type writeKey struct{}

// checkCSRF requires the session's CSRF token in the form.
func (s *Server) checkCSRF(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		if err := r.ParseForm(); err != nil || !signin.SameToken(visitorOf(r).CSRF, r.PostForm.Get("csrf")) {
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
		v := visitorOf(r)
		c, err := s.lookup(r, v, r.PathValue("id"))
		switch {
		case errors.Is(err, checks.ErrNotFound):
			s.errorPage(w, r, http.StatusNotFound, "No such check in this project.")
			return
		case err != nil:
			s.unavailable(w, r, "looking up the check", err)
			return
		}
		ctx := context.WithValue(r.Context(), checkKey{}, c)
		if v.Person != nil {
			// The person, narrowed to the check's project.
			v.Namespace = c.Namespace
			if v.ReadWrite, err = s.may(r, v, c.Namespace, access.Operate); err != nil {
				s.unavailable(w, r, "asking Kubernetes what you may do", err)
				return
			}
			if r.Context().Value(writeKey{}) != nil && !v.ReadWrite {
				s.errorPage(w, r, http.StatusForbidden, "Kubernetes does not let you update checks in project "+c.Namespace+
					": this needs a binding that allows update on checks.monitoring.vigil.dev there.")
				return
			}
			ctx = context.WithValue(ctx, visitorKey{}, v)
		}
		next(w, r.WithContext(ctx))
	}
}

// lookup finds a check by the ID a visitor knows it by: a read-write key
// by its UUID, a read-only key by its unique key only (see row). Another
// project's check is not found.
func (s *Server) lookup(r *http.Request, v visitor, id string) (*v1.Check, error) {
	if v.Person != nil {
		return s.personLookup(r, v, id)
	}
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

// personLookup finds a check for a person by its UUID (the board names
// checks by UUID where they may update them) or its unique key (where
// they may only look), in a project they may see; any other is not found.
func (s *Server) personLookup(r *http.Request, v visitor, id string) (*v1.Check, error) {
	viewable := func(c *v1.Check) (*v1.Check, error) {
		ok, err := s.may(r, v, c.Namespace, access.View)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, checks.ErrNotFound
		}
		return c, nil
	}
	if uniqueKeyRE.MatchString(id) {
		// A check's unique key is its UUID's, which another project's
		// check may name too: the first the person may see.
		for _, ns := range s.Checks.Namespaces() {
			if c, err := s.Checks.ByUniqueKey(ns, id); err == nil {
				if c, err := viewable(c); !errors.Is(err, checks.ErrNotFound) {
					return c, err
				}
			}
		}
		return nil, checks.ErrNotFound
	}
	if parsed, err := uuid.Parse(id); err != nil || parsed.String() != id {
		return nil, checks.ErrNotFound
	}
	c, err := s.Checks.ByUUID(r.Context(), id)
	if err != nil {
		return nil, err
	}
	return viewable(c)
}

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
