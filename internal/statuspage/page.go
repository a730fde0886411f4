package statuspage

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/singleflight"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/webpage"
	"github.com/vigil-operator/vigil/internal/words"
)

// A status page shows what its StatusPage selects to anyone with its
// address: each check's name (spec.name, or its object name without a UUID
// part), its state in a word and its 90-day uptime, and the state changes
// as a feed. Never a UUID, a ping URL, a slug, a tag, a body or who pinged.

// statusMaxChecks bounds what one page shows, and so what a request to it
// costs: the first of the selected checks by name.
const statusMaxChecks = 200

// statusEvents is how many state changes the feed and the JSON carry.
const statusEvents = 50

// statusFor is how long a page is shared between its visitors: a public
// address is asked for by anyone, as often as they like.
const statusFor = 30 * time.Second

// Server serves the public status pages at PathPrefix.
type Server struct {
	// Checks is the door the pages read checks through.
	Checks *checks.Door
	// Find finds the StatusPage with a key (Find with the manager's
	// cache), nil when none has it.
	Find func(ctx context.Context, key string) (*v1.StatusPage, error)
	// BaseURL is the site's root, for the pages' own addresses; a
	// https:// one turns on HSTS.
	BaseURL string
	Log     logr.Logger

	pages webpage.Pages
	cache statusCache
}

//go:embed templates/*.html
var templateFS embed.FS

// Handler serves GET /status/{page}. Register it for PathPrefix.
func (s *Server) Handler() http.Handler {
	s.pages = webpage.Parse(templateFS, nil, "status")
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+PathPrefix+"{page}", s.statusPage)
	return webpage.SecurityHeaders(strings.HasPrefix(s.BaseURL, "https://"), mux)
}

// statusPageData is a status page's template data, and its JSON.
type statusPageData struct {
	Title       string        `json:"title"`
	Description string        `json:"description,omitempty"`
	Summary     string        `json:"summary"`
	Down        int           `json:"down"`
	Updated     time.Time     `json:"updated"`
	Checks      []statusCheck `json:"checks"`
	Events      []statusEvent `json:"events"`
	More        int           `json:"-"` // selected checks past statusMaxChecks
	Key         string        `json:"-"`
	URL         string        `json:"-"`
	Now         time.Time     `json:"-"`
}

type statusCheck struct {
	Name        string   `json:"name"`
	State       string   `json:"status"`
	Uptime      *float64 `json:"uptime_90d"` // percent; null: no data
	UptimeWords string   `json:"-"`
	// HeldBy names the check it depends on that is down and holds its
	// notifications: its public name when the page shows it, "another
	// check" when it does not (spec.dependsOn).
	HeldBy string        `json:"held_by,omitempty"`
	Label  webpage.Label `json:"-"`
	Days   []webpage.Day `json:"-"` // the last webpage.Days, oldest first
}

type statusEvent struct {
	Check string    `json:"check"`
	State string    `json:"status"`
	At    time.Time `json:"at"`
	n     int64
}

// statusPage serves GET /status/{page}: the page's key, as HTML, or with
// .json or .rss.
func (s *Server) statusPage(w http.ResponseWriter, r *http.Request) {
	key, format := r.PathValue("page"), "html"
	for _, f := range []string{"json", "rss"} {
		if k, ok := strings.CutSuffix(key, "."+f); ok {
			key, format = k, f
		}
	}
	h := w.Header()
	// Unlisted: not for search engines, and no address of it in a
	// Referer to anywhere.
	h.Set("X-Robots-Tag", "noindex, nofollow")
	h.Set("Referrer-Policy", "no-referrer")
	var sp *v1.StatusPage
	var err error
	if keyRE.MatchString(key) && s.Find != nil {
		sp, err = s.Find(r.Context(), key)
	}
	if err != nil {
		s.unavailable(w, r, "finding the status page", err)
		return
	}
	if sp != nil {
		if _, err := Selection(sp); err != nil || !Served(sp) {
			sp = nil // not served: its Ready condition says why
		}
	}
	if sp == nil {
		s.errorPage(w, http.StatusNotFound, "No such status page.")
		return
	}
	page, err := s.cache.of(r.Context(), sp, s.Checks.Now(), s.renderStatus)
	if err != nil {
		s.unavailable(w, r, "reading the checks", err)
		return
	}
	body := page.html
	h.Set("Content-Type", "text/html; charset=utf-8")
	switch format {
	case "json":
		body = page.json
		h.Set("Content-Type", "application/json")
	case "rss":
		body = page.rss
		h.Set("Content-Type", "application/rss+xml; charset=utf-8")
	}
	// Every visitor in the next statusFor gets these same bytes: written
	// from the cache, so that a reader who never reads costs a
	// connection, not a page (and a revalidation with the ETag, nothing).
	h.Set("Cache-Control", "public, max-age=30")
	h.Set("ETag", page.etag+"-"+format+`"`)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

var keyRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// statusData looks at the page's checks now.
func (s *Server) statusData(ctx context.Context, sp *v1.StatusPage, now time.Time) (*statusPageData, error) {
	chosen, err := Selection(sp)
	if err != nil {
		return nil, err
	}
	key := Key(sp.UID)
	d := &statusPageData{Title: sp.Spec.Title, Description: sp.Spec.Description, Updated: now, Now: now, Key: key,
		URL: URL(s.BaseURL, sp), Checks: []statusCheck{}, Events: []statusEvent{}}
	var selected []*v1.Check
	for _, c := range s.Checks.InProject(sp.Namespace) {
		if chosen.Selects(c) {
			selected = append(selected, c)
		}
	}
	slices.SortFunc(selected, func(a, b *v1.Check) int { return cmp.Compare(publicName(a), publicName(b)) })
	if len(selected) > statusMaxChecks {
		d.More, selected = len(selected)-statusMaxChecks, selected[:statusMaxChecks]
	}
	observed, err := s.Checks.ObservedIn(ctx, sp.Namespace)
	if err != nil {
		return nil, err
	}
	shown := make(map[string]string, len(selected)) // object name: public name
	for _, c := range selected {
		shown[c.Name] = publicName(c)
	}
	for _, c := range selected {
		obs := observed.Of(c.UID)
		view := s.Checks.View(c, obs, now)
		flips, err := s.Checks.RecentFlips(ctx, c, webpage.FlipsRead)
		if err != nil {
			return nil, err
		}
		label := webpage.LabelOf(view)
		history := webpage.HistoryOf(c, obs, view.Status, flips, now)
		sc := statusCheck{Name: publicName(c), State: label.Word, Label: label, Days: webpage.Strip(history, now)}
		if parent := obs.Dependency.Parent; parent != "" {
			if sc.HeldBy = shown[parent]; sc.HeldBy == "" {
				sc.HeldBy = "another check" // one the page does not show: not named
			}
		}
		if share, ok := history.Measure(now.Add(-webpage.Span), now).Uptime(); ok {
			up := words.PercentValue(share)
			sc.Uptime, sc.UptimeWords = &up, words.Percent(share)
		}
		if label.Class == "down" {
			d.Down++
		}
		d.Checks = append(d.Checks, sc)
		for _, f := range flips { // newest first
			if now.Sub(f.At) > webpage.Span || len(d.Events) > statusEvents*4 {
				break
			}
			d.Events = append(d.Events, statusEvent{Check: sc.Name, State: webpage.StateWord(f.Up), At: f.At.UTC(), n: f.N})
		}
	}
	slices.SortStableFunc(d.Events, func(a, b statusEvent) int { return b.At.Compare(a.At) })
	d.Events = d.Events[:min(len(d.Events), statusEvents)]
	switch {
	case len(d.Checks) == 0:
		d.Summary = "No checks on this page yet."
	case d.Down == 0:
		d.Summary = "All checks are up."
	case d.Down == 1:
		d.Summary = "1 check is down."
	default:
		d.Summary = words.Plural(int64(d.Down), "check") + " are down."
	}
	return d, nil
}

// uuidSuffix is the start of a UUID that Vigil puts at the end of the
// object names it gives (checks.ObjectName): a public page leaves it out.
var uuidSuffix = regexp.MustCompile(`-[0-9a-f]{8}$`)

// publicName is how a status page names a check: its name, or its object
// name without a UUID's start, unless that is its slug (half of a ping
// URL): then it is unnamed.
func publicName(c *v1.Check) string {
	if c.Spec.Name != "" {
		return c.Spec.Name
	}
	name := c.Name
	if uuid := checks.UUIDOf(c); len(uuid) >= 8 && strings.HasSuffix(name, "-"+uuid[:8]) {
		name = strings.TrimSuffix(name, "-"+uuid[:8])
	} else {
		name = uuidSuffix.ReplaceAllString(name, "")
	}
	if c.Spec.Slug != "" && strings.EqualFold(name, c.Spec.Slug) {
		return "Unnamed check"
	}
	return name
}

// rss is an RSS 2.0 feed of a page's state changes.
type rss struct {
	XMLName xml.Name   `xml:"rss"`
	Version string     `xml:"version,attr"`
	Channel rssChannel `xml:"channel"`
}

type rssChannel struct {
	Title       string    `xml:"title"`
	Link        string    `xml:"link"`
	Description string    `xml:"description"`
	LastBuild   string    `xml:"lastBuildDate"`
	Items       []rssItem `xml:"item"`
}

type rssItem struct {
	Title   string  `xml:"title"`
	PubDate string  `xml:"pubDate"`
	GUID    rssGUID `xml:"guid"`
}

type rssGUID struct {
	Value     string `xml:",chardata"`
	Permalink bool   `xml:"isPermaLink,attr"`
}

func rssOf(d *statusPageData) rss {
	desc := d.Description
	if desc == "" {
		desc = d.Summary
	}
	feed := rss{Version: "2.0", Channel: rssChannel{Title: d.Title, Link: d.URL, Description: desc,
		LastBuild: d.Updated.UTC().Format(time.RFC1123Z)}}
	for _, e := range d.Events {
		title := e.Check + " is down"
		if e.State == "up" {
			title = e.Check + " is up again"
		}
		// A stable id that names neither the check's UUID nor its object.
		sum := sha256.Sum256([]byte(d.Key + "\x00" + e.Check + "\x00" + e.At.Format(time.RFC3339Nano) + "\x00" + e.State))
		feed.Channel.Items = append(feed.Channel.Items, rssItem{Title: title, PubDate: e.At.Format(time.RFC1123Z),
			GUID: rssGUID{Value: "vigil-status-" + hex.EncodeToString(sum[:12])}})
	}
	return feed
}

// renderedStatus is a status page as each of its formats, rendered once
// for all the visitors of statusFor.
type renderedStatus struct {
	html, json, rss []byte
	etag            string
}

// renderStatus looks at the page's checks now and renders what it saw.
func (s *Server) renderStatus(ctx context.Context, sp *v1.StatusPage, now time.Time) (*renderedStatus, error) {
	d, err := s.statusData(ctx, sp, now)
	if err != nil {
		return nil, err
	}
	page := &renderedStatus{}
	if page.html, err = s.pages.Execute("status", "layout.html", d); err != nil {
		return nil, fmt.Errorf("rendering: %w", err)
	}
	if page.json, err = json.Marshal(d); err != nil {
		return nil, err
	}
	feed, err := xml.Marshal(rssOf(d))
	if err != nil {
		return nil, err
	}
	page.rss = append([]byte(xml.Header), feed...)
	sum := sha256.Sum256(page.html)
	page.etag = `"` + hex.EncodeToString(sum[:8])
	return page, nil
}

// statusRenderTimeout bounds a page's rendering, which runs for every
// visitor waiting on it, not on the first one's request.
const statusRenderTimeout = 30 * time.Second

// statusCache shares each page between its visitors for statusFor. A page
// is rendered once however many ask for it at once (singleflight): the
// first visitor's leaving does not cancel it for the others.
type statusCache struct {
	flight singleflight.Group
	mu     sync.Mutex
	byKey  map[string]statusEntry
}

type statusEntry struct {
	generation int64
	at, taken  time.Time
	page       *renderedStatus
}

type renderFunc func(context.Context, *v1.StatusPage, time.Time) (*renderedStatus, error)

func (sc *statusCache) of(ctx context.Context, sp *v1.StatusPage, now time.Time, render renderFunc) (*renderedStatus, error) {
	key := string(sp.UID)
	if page := sc.fresh(key, sp.Generation, now); page != nil {
		return page, nil
	}
	ch := sc.flight.DoChan(key+"/"+strconv.FormatInt(sp.Generation, 10), func() (any, error) {
		// A visitor who missed the cache while the last rendering ran may
		// start this flight after that one ended and kept its page.
		if page := sc.fresh(key, sp.Generation, now); page != nil {
			return page, nil
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), statusRenderTimeout)
		defer cancel()
		page, err := render(rctx, sp, now)
		if err != nil {
			return nil, err
		}
		sc.keep(key, statusEntry{generation: sp.Generation, at: now, taken: time.Now(), page: page})
		return page, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*renderedStatus), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fresh is the kept page of key at generation if it still holds at now.
func (sc *statusCache) fresh(key string, generation int64, now time.Time) *renderedStatus {
	sc.mu.Lock()
	e, ok := sc.byKey[key]
	sc.mu.Unlock()
	if ok && e.generation == generation && time.Since(e.taken) < statusFor && !now.Before(e.at) && now.Sub(e.at) < statusFor {
		return e.page
	}
	return nil
}

// keep stores a page, and forgets those nobody asked for in a minute.
func (sc *statusCache) keep(key string, e statusEntry) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.byKey == nil {
		sc.byKey = map[string]statusEntry{}
	}
	for k, old := range sc.byKey {
		if time.Since(old.taken) > time.Minute {
			delete(sc.byKey, k)
		}
	}
	sc.byKey[key] = e
}

// errorPage answers with the frame's error page.
func (s *Server) errorPage(w http.ResponseWriter, status int, msg string) {
	if err := s.pages.Render(w, status, "error", "layout.html", webpage.ErrorData(status, msg)); err != nil {
		s.Log.Error(err, "rendering a status page's error")
	}
}

// unavailable answers a failure of the store or the cache.
func (s *Server) unavailable(w http.ResponseWriter, r *http.Request, what string, err error) {
	status, msg := webpage.Failure(w, r, s.Checks, s.Log, what, err)
	s.errorPage(w, status, msg)
}
