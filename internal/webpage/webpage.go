// Package webpage is the frame every HTML page of Vigil's site shares: the
// signed-in dashboard's and the public status pages'. It holds the layout
// and error templates, the stylesheet, script and icon served at /static/
// (embedded: nothing is fetched from elsewhere, and there is no build
// step), the template functions, the security headers, and the pieces two
// kinds of page draw alike: a status's label, a check's history by the
// uptime rule, and its days as marks.
package webpage

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/words"
)

//go:embed templates/*.html
var frameFS embed.FS

//go:embed static
var staticFS embed.FS

// frame are the templates every page set has: layout.html, which each page
// is rendered inside, and the error page.
var frame = []string{"templates/layout.html", "templates/error.html"}

// Pages are a package's page templates, each parsed inside the layout.
type Pages map[string]*template.Template

// Parse parses each named page, templates/NAME.html in pages, inside the
// layout with the shared template functions and those of extra. "error" is
// the frame's own.
func Parse(pages fs.FS, extra template.FuncMap, names ...string) Pages {
	versions := assetVersions()
	funcs := template.FuncMap{
		"asset": func(name string) string { return "/static/" + name + "?v=" + versions[name] },
		"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"utc":   func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"pct":   words.Percent,
		// plural counts a unit: {{plural .NPings "ping"}}, any integer.
		"plural":    func(n any, unit string) string { return words.Plural(reflect.ValueOf(n).Int(), unit) },
		"stripDays": func() int { return Days },
		// gap leaves a sliver between a strip's shapes.
		"gap": func(w float64) float64 { return w - 0.2 },
	}
	for k, f := range extra {
		funcs[k] = f
	}
	out := Pages{"error": template.Must(template.New("layout.html").Funcs(funcs).ParseFS(frameFS, frame...))}
	for _, name := range names {
		t := template.Must(template.New("layout.html").Funcs(funcs).ParseFS(frameFS, frame[0]))
		out[name] = template.Must(t.ParseFS(pages, "templates/"+name+".html"))
	}
	return out
}

// Execute renders the template name of page into a buffer first, so that
// a template error is a clean 500 and not half a page.
func (p Pages) Execute(page, name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := p[page].ExecuteTemplate(&buf, name, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Has reports whether page defines the template name.
func (p Pages) Has(page, name string) bool { return p[page].Lookup(name) != nil }

// ErrorData is the error page's data: the status's text and the message.
func ErrorData(status int, msg string) map[string]any {
	return map[string]any{"Title": http.StatusText(status), "Message": msg}
}

// Static serves the stylesheet, script and icon under /static/. The pages
// name them with their content's hash (the asset function), so browsers
// keep them for 30 days and still see an upgrade at once.
func Static() http.Handler {
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/static/", http.FileServer(http.FS(static)))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") { // no listing of the directory
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=2592000")
		files.ServeHTTP(w, r)
	})
}

// SecurityHeaders: no inline script or style and nothing from elsewhere
// (the pages need neither), no framing, no sniffing; HSTS when the site is
// served over https.
func SecurityHeaders(secure bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; object-src 'none'; "+
			"base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		if secure {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

// assetVersions are the static files' content hashes, for their URLs.
func assetVersions() map[string]string {
	out := map[string]string{}
	entries, err := staticFS.ReadDir("static")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		b, err := staticFS.ReadFile("static/" + e.Name())
		if err != nil {
			panic(err)
		}
		sum := sha256.Sum256(b)
		out[e.Name()] = hex.EncodeToString(sum[:6])
	}
	return out
}

// Render writes the template name of page with status, not to be cached:
// a page is about now.
func (p Pages) Render(w http.ResponseWriter, status int, page, name string, data any) error {
	b, err := p.Execute(page, name, data)
	if err != nil {
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return err
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return nil
}

// Failure is how a page answers what failed while it read checks: the ping
// store unavailable (503) or a project with too many changes waiting
// (429), each with its Retry-After set on w; anything else is a 500,
// logged by the request's route, never its path (which holds a check's
// UUID or a status page's key). It returns the status and the message for
// the caller's error page.
func Failure(w http.ResponseWriter, r *http.Request, door *checks.Door, log logr.Logger, what string, err error) (int, string) {
	switch {
	case door.Unavailable(err):
		w.Header().Set("Retry-After", "5")
		return http.StatusServiceUnavailable, "The ping store is unavailable; try again in a moment."
	case errors.Is(err, checks.ErrOverShare):
		w.Header().Set("Retry-After", "1")
		return http.StatusTooManyRequests, "This project has too many changes waiting; try again in a moment."
	}
	log.Error(err, what, "route", r.Pattern)
	return http.StatusInternalServerError, what + " failed; try again."
}
