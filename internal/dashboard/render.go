package dashboard

import (
	"html/template"
	"net/http"

	"github.com/vigil-operator/vigil/internal/webpage"
)

// pageNames are the templates under templates/, each rendered inside the
// frame's layout (package webpage); a page's "live" template is the part
// the script refetches.
var pageNames = []string{"signin", "board", "check", "bounce"}

func parseTemplates() webpage.Pages {
	return webpage.Parse(templateFS, template.FuncMap{"in": formatIn}, pageNames...)
}

// render executes a page into a buffer first, so that a template error is
// a clean 500 and not half a page. A live-update fetch gets the page's live
// part alone.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	name := "layout.html"
	if isFragment(r) && s.pages.Has(page, "live") {
		name = "live"
	}
	if err := s.pages.Render(w, status, page, name, data); err != nil {
		s.Log.Error(err, "rendering a dashboard page", "page", page)
	}
}
