package dashboard

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"html/template"
	"net/http"
	"time"

	"github.com/vigil-operator/vigil/internal/words"
)

// pageNames are the templates under templates/, each rendered inside
// layout.html; a page's "live" template is the part the script refetches.
var pageNames = []string{"signin", "error", "board", "check", "bounce", "status"}

func parseTemplates(versions map[string]string) map[string]*template.Template {
	funcs := template.FuncMap{
		"asset":     func(name string) string { return "/static/" + name + "?v=" + versions[name] },
		"iso":       func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"utc":       func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") },
		"in":        formatIn,
		"pct":       words.Percent,
		"stripDays": func() int { return calendarDays },
		// gap leaves a sliver between a strip's shapes.
		"gap": func(w float64) float64 { return w - 0.2 },
	}
	pages := map[string]*template.Template{}
	for _, name := range pageNames {
		pages[name] = template.Must(template.New("layout.html").Funcs(funcs).
			ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html"))
	}
	return pages
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

// render executes a page into a buffer first, so that a template error is
// a clean 500 and not half a page. A live-update fetch gets the page's live
// part alone.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	name := "layout.html"
	if isFragment(r) && s.pages[page].Lookup("live") != nil {
		name = "live"
	}
	b, err := s.execute(page, name, data)
	if err != nil {
		s.Log.Error(err, "rendering a dashboard page", "page", page)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// execute renders the template name of page.
func (s *Server) execute(page, name string, data any) ([]byte, error) {
	var buf bytes.Buffer
	if err := s.pages[page].ExecuteTemplate(&buf, name, data); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
