package site

import (
	"regexp"
	"strings"
)

// templateOf is the template of the route a request path takes, such as
// /ping/{ping-key}/{slug} or /projects/{project}/metrics/{key}: what a log
// line may say about the path. A path carries credentials (a check's UUID
// is its ping URL, a ping key, the read-only key of a metrics URL, a badge
// key and its signature), and logs go where those must not: every segment
// that is not a fixed word of the route is its placeholder. A path that
// takes no route of Vigil's is "{unknown}", below the prefix that says
// whose it is (/api/, /ping/) when it has one: nothing the code does not
// recognise is echoed.
func templateOf(path string) string {
	if !strings.HasPrefix(path, "/") {
		return "{unknown}" // "*", or a proxy's absolute form
	}
	trimmed := strings.TrimSuffix(path, "/")
	slash := ""
	if trimmed != path && trimmed != "" {
		slash = "/"
	}
	segments := strings.Split(strings.TrimPrefix(trimmed, "/"), "/")
	for _, t := range routeTemplates {
		if t.match(segments) {
			return t.path + slash
		}
	}
	switch {
	case path == "/":
		return "/"
	case strings.HasPrefix(path, "/api/"):
		return "/api/{unknown}"
	case strings.HasPrefix(path, "/ping/"):
		return "/ping/{unknown}"
	}
	return "{unknown}"
}

// routeTemplate is one route: its literal words and placeholders.
type routeTemplate struct {
	path     string
	segments []string
}

// placeholders are the shapes a placeholder segment must have; one not
// listed here takes any non-empty segment.
var placeholders = map[string]*regexp.Regexp{
	"{uuid}":        regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`),
	"{exit-status}": regexp.MustCompile(`^[0-9]+$`),
	"{n}":           regexp.MustCompile(`^[0-9]+$`),
	"{version}":     regexp.MustCompile(`^v[123]$`),
}

func (t routeTemplate) match(segments []string) bool {
	if len(segments) != len(t.segments) {
		return false
	}
	for i, want := range t.segments {
		got := segments[i]
		if !strings.HasPrefix(want, "{") {
			if got != want {
				return false
			}
			continue
		}
		// A placeholder, and what follows it in the segment (a badge's
		// format).
		end := strings.IndexByte(want, '}') + 1
		name, suffix := want[:end], want[end:]
		value, ok := strings.CutSuffix(got, suffix)
		if !ok || value == "" || (placeholders[name] != nil && !placeholders[name].MatchString(value)) {
			return false
		}
	}
	return true
}

// routeTemplates are Vigil's routes, the first match wins (a UUID's routes
// before the slug routes they overlap). Badge paths end in their format,
// which stays in the template.
var routeTemplates = func() []routeTemplate {
	var paths []string
	for _, v := range []string{"v1", "v2", "v3"} {
		api := "/api/" + v
		paths = append(paths,
			api+"/status", api+"/checks", api+"/channels", api+"/badges",
			api+"/checks/{check}", api+"/checks/{check}/flips", api+"/checks/{check}/pause",
			api+"/checks/{check}/resume", api+"/checks/{check}/snooze", api+"/checks/{check}/pings", api+"/checks/{check}/stats",
			api+"/checks/{check}/pings/{n}/body")
	}
	for _, action := range []string{"", "/start", "/fail", "/log", "/{exit-status}"} {
		paths = append(paths, "/ping/{uuid}"+action)
	}
	for _, action := range []string{"", "/start", "/fail", "/log", "/{exit-status}"} {
		paths = append(paths, "/ping/{ping-key}/{slug}"+action)
	}
	paths = append(paths,
		"/projects/{project}/metrics", "/projects/{project}/metrics/{key}", "/projects/{project}/checks/metrics/{key}",
		"/login", "/logout", "/auth/signin", "/auth/callback", "/checks/{check}", "/checks/{check}/pause", "/checks/{check}/resume",
		"/checks/{check}/snooze", "/checks/{check}/pings/{n}/body", "/checks/{check}/channels/{channel}/test", "/static/{file}",
		"/status/{status-page}.json", "/status/{status-page}.rss", "/status/{status-page}")
	for _, format := range []string{"svg", "json", "shields"} {
		paths = append(paths,
			"/badge/{badge-key}/{signature}."+format, "/badge/{badge-key}/{signature}/{tag}."+format,
			"/b/2/{badge-key}."+format, "/b/3/{badge-key}."+format)
	}
	out := make([]routeTemplate, 0, len(paths))
	for _, p := range paths {
		out = append(out, routeTemplate{path: p, segments: strings.Split(strings.TrimPrefix(p, "/"), "/")})
	}
	return out
}()
