package dashboard

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/access"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/runstats"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/webpage"
	"github.com/vigil-operator/vigil/internal/words"
)

// pageSize is how many checks the board shows at once: the page is paged on
// the server, so that 10,000 checks cost the browser no more than 100.
const pageSize = 100

// query is the board's state, all of it in the URL so that it can be
// shared: ?q=backup&tag=prod&sort=status&page=2&wall=1.
type query struct {
	Search string
	Tags   []string
	// Project and State narrow the board to one namespace (a person's
	// board spans every project they may see) and one status class
	// ("down", "grace", "up", "paused", "new", "started").
	Project, State string
	Sort           string // name (a key's default), status (a person's), last, next, rate (worst success rate first), p95 (slowest first)
	Page           int    // from 1
	Wall           bool
	// defaultSort is the visitor's: what url leaves out.
	defaultSort string
}

// These bound what the board reads from its URL.
const (
	maxSearch = 200
	maxTags   = 10
	maxTag    = 100
)

// parseQuery reads the board's URL; defaultSort is the visitor's order
// when the URL names none.
func parseQuery(v url.Values, defaultSort string) query {
	q := query{Search: strings.TrimSpace(v.Get("q")), Sort: v.Get("sort"), Wall: v.Get("wall") == "1", defaultSort: defaultSort}
	if ns := v.Get("project"); len(ns) <= 63 {
		q.Project = ns
	}
	if _, ok := statusOrder[v.Get("state")]; ok {
		q.State = v.Get("state")
	}
	q.Search, _ = words.Cut(q.Search, maxSearch)
	for _, t := range v["tag"] {
		if t = strings.TrimSpace(t); t != "" && len(t) <= maxTag && len(q.Tags) < maxTags && !slices.Contains(q.Tags, t) {
			q.Tags = append(q.Tags, t)
		}
	}
	switch q.Sort {
	case "name", "status", "last", "next", "rate", "p95":
	default:
		q.Sort = defaultSort
	}
	if q.Wall {
		q.Sort = "status" // a wall shows what is wrong first
	}
	q.Page, _ = strconv.Atoi(v.Get("page"))
	q.Page = max(q.Page, 1)
	return q
}

// url is the board's address for q, with only what differs from the
// defaults.
func (q query) url() string {
	v := url.Values{}
	if q.Search != "" {
		v.Set("q", q.Search)
	}
	for _, t := range q.Tags {
		v.Add("tag", t)
	}
	if q.Project != "" {
		v.Set("project", q.Project)
	}
	if q.State != "" {
		v.Set("state", q.State)
	}
	if !q.SortIsDefault() && !q.Wall {
		v.Set("sort", q.Sort)
	}
	if q.Page > 1 {
		v.Set("page", strconv.Itoa(q.Page))
	}
	if q.Wall {
		v.Set("wall", "1")
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
}

func (q query) withTag(tag string) query {
	q.Page = 1
	if i := slices.Index(q.Tags, tag); i >= 0 {
		q.Tags = slices.Delete(slices.Clone(q.Tags), i, i+1)
	} else {
		q.Tags = append(slices.Clone(q.Tags), tag)
	}
	return q
}

// SortIsDefault reports whether the board is in the visitor's own order,
// which its URL leaves out.
func (q query) SortIsDefault() bool { return q.Sort == q.defaultSort }

func (q query) withSort(sort string) query { q.Sort, q.Page = sort, 1; return q }
func (q query) withProject(ns string) query {
	if q.Project == ns {
		ns = ""
	}
	q.Project, q.Page = ns, 1
	return q
}
func (q query) withState(state string) query {
	if q.State == state {
		state = ""
	}
	q.State, q.Page = state, 1
	return q
}
func (q query) withPage(page int) query { q.Page = page; return q }

// row is one check on the board. ID names it in URLs: its UUID for a
// read-write key, and for a read-only key its unique key, as in the API,
// because the UUID is also its ping URL.
type row struct {
	ID, Name, Slug, Object  string
	Namespace               string
	Tags                    []chip
	Status                  webpage.Label
	Failures                string // "1 of 3": failed runs in a row below the threshold
	Maintenance             string // the window holding its notifications
	Period, Grace           string
	LastPing, NextPing      time.Time
	LastPingAgo, NextPingIn string
	NPings                  int64
	// Runs are its last week's runs: a sparkline of durations, the
	// success rate and p95 (their sort keys below).
	Runs      sparkline
	rate      float64 // -1: no run
	p95       time.Duration
	runCounts store.RunCounts
	order     int       // status order: down first
	check     *v1.Check // the cache's object: read only
}

// fill sets what the board shows of a row beyond its sort keys.
func (rw *row) fill(q query, readWrite bool, now time.Time) {
	c := rw.check
	rw.ID, rw.Slug = checkID(c, readWrite), c.Spec.Slug
	rw.Period, rw.Grace = period(c), words.Duration(time.Duration(c.Spec.Grace)*time.Second)
	for _, t := range checks.Tags(c.Spec.Tags) {
		rw.Tags = append(rw.Tags, chip{Tag: t, URL: q.withTag(t).url(), On: slices.Contains(q.Tags, t)})
	}
	if !rw.LastPing.IsZero() {
		rw.LastPingAgo = words.Relative(rw.LastPing, now)
	}
	if !rw.NextPing.IsZero() {
		rw.NextPingIn = words.Relative(rw.NextPing, now)
	}
}

// chip is a tag as a filter link.
type chip struct {
	Tag, URL string
	On       bool
	Count    int
}

// statusOrder is the order a wall shows the statuses in: what needs a
// person first.
var statusOrder = map[string]int{"down": 0, "grace": 1, "started": 2, "up": 3, "new": 4, "paused": 5}

// summary counts the project's checks by what they need from a person.
type summary struct {
	Total, Up, Late, Down, Paused, New, Running int
}

// boardPage is the board's template data.
type boardPage struct {
	Title, Namespace, ProjectUUID string
	ReadWrite                     bool
	// Person names a person signed in through OpenID Connect, whose board
	// spans Projects, the namespaces Kubernetes lets them list checks in
	// (with a chip each to narrow the board to one).
	Person                    string
	Projects                  []chip
	States                    []chip
	CSRF                      string
	Query                     query
	Rows                      []row
	Chips                     []chip
	Summary                   summary
	Matching, From, To        int
	PrevURL, NextURL, WallURL string
	SortURLs                  map[string]string
	Now                       time.Time
}

// board shows the project's checks: a key's project, or every project a
// person may see.
func (s *Server) board(w http.ResponseWriter, r *http.Request) {
	v := visitorOf(r)
	defaultSort := "name"
	if v.Person != nil {
		defaultSort = "status" // worst first, across projects
	}
	q := parseQuery(r.URL.Query(), defaultSort)
	page, err := s.boardPage(r, v, q)
	if err != nil {
		s.unavailable(w, r, "listing the checks", err)
		return
	}
	s.render(w, r, http.StatusOK, "board", page)
}

func (s *Server) boardPage(r *http.Request, v visitor, q query) (*boardPage, error) {
	projects := []string{v.Namespace}
	p := &boardPage{Title: v.Namespace, Namespace: v.Namespace, ProjectUUID: project.UUID(v.Namespace),
		ReadWrite: v.ReadWrite, CSRF: v.CSRF, Query: q}
	if v.Person != nil {
		var err error
		if projects, err = s.viewable(r, v); err != nil {
			return nil, err
		}
		p.Title, p.Namespace, p.ProjectUUID, p.Person = "Your projects", "", "", v.Person.Username
		for _, ns := range projects {
			p.Projects = append(p.Projects, chip{Tag: ns, URL: q.withProject(ns).url(), On: q.Project == ns})
		}
		if q.Project != "" {
			if !slices.Contains(projects, q.Project) {
				projects = nil // not one of theirs: nothing, as if it did not exist
			} else {
				projects = []string{q.Project}
			}
		}
	}
	// Every project's snapshot; the rows that match.
	tagCounts, stateCounts := map[string]int{}, map[string]int{}
	needle := strings.ToLower(q.Search)
	var rows []row
	now := s.now()
	for _, ns := range projects {
		snap, err := s.snapshots.of(ns, now, func(now time.Time) (*snapshot, error) { return s.snapshot(r, ns, now) })
		if err != nil {
			return nil, err
		}
		now = snap.at
		p.Summary.add(snap.summary)
		for t, n := range snap.tags {
			tagCounts[t] += n
		}
		for i := range snap.rows {
			c := snap.rows[i].check
			if !matches(c, needle) || !checks.HasAllTags(c.Spec.Tags, q.Tags) {
				continue
			}
			stateCounts[snap.rows[i].Status.Class]++
			if q.State == "" || snap.rows[i].Status.Class == q.State {
				rows = append(rows, snap.rows[i]) // a copy: fill writes the page's rows
			}
		}
	}
	p.Now = now
	// Sorting by the run figures needs every check's; otherwise only the
	// page's rows are read, below.
	var stats map[types.UID]runstats.Stats
	if q.Sort == "rate" || q.Sort == "p95" {
		stats = map[types.UID]runstats.Stats{}
		for _, ns := range projects {
			of, err := s.runStats.of(r.Context(), ns, now, func(ctx context.Context) (map[types.UID]runstats.Stats, error) {
				return s.Checks.RunStatsIn(ctx, ns, now, boardWindow, false)
			})
			if err != nil {
				return nil, err
			}
			maps.Copy(stats, of)
		}
		for i := range rows {
			st := stats[rows[i].check.UID]
			rows[i].rate, rows[i].p95 = -1, st.P95
			if st.HasRate {
				rows[i].rate = st.SuccessRate
			}
		}
	}
	sortRows(rows, q.Sort)

	p.Matching = len(rows)
	pages := max((len(rows)+pageSize-1)/pageSize, 1)
	q.Page = min(q.Page, pages)
	p.Query = q
	start := (q.Page - 1) * pageSize
	end := min(start+pageSize, len(rows))
	p.Rows = rows[start:end]
	p.From, p.To = start+1, end
	// Only the page's rows are shown: the rest of their fields are filled
	// for those alone, not for every matching check.
	if stats == nil {
		page := make(map[types.UID]store.RunCounts, len(p.Rows))
		for i := range p.Rows {
			page[p.Rows[i].check.UID] = p.Rows[i].runCounts
		}
		var err error
		if stats, err = s.Checks.RunStatsOf(r.Context(), page, boardWindow); err != nil {
			return nil, err
		}
	}
	operate := map[string]bool{v.Namespace: v.ReadWrite}
	for i := range p.Rows {
		ns := p.Rows[i].check.Namespace
		if _, asked := operate[ns]; !asked {
			ok, err := s.may(r, v, ns, access.Operate)
			if err != nil {
				return nil, err
			}
			operate[ns] = ok
		}
		p.Rows[i].fill(q, operate[ns], now)
		if v.Person != nil {
			p.Rows[i].Namespace = ns
		}
		p.Rows[i].Runs = sparklineOf(stats[p.Rows[i].check.UID])
	}
	if q.Page > 1 {
		p.PrevURL = q.withPage(q.Page - 1).url()
	}
	if q.Page < pages {
		p.NextURL = q.withPage(q.Page + 1).url()
	}
	wall := q
	wall.Wall, wall.Page = !q.Wall, 1
	if !wall.Wall {
		wall.Sort = q.defaultSort
	}
	p.WallURL = wall.url()
	p.SortURLs = map[string]string{}
	for _, by := range []string{"name", "status", "last", "next", "rate", "p95"} {
		p.SortURLs[by] = q.withSort(by).url()
	}
	for t, n := range tagCounts {
		p.Chips = append(p.Chips, chip{Tag: t, URL: q.withTag(t).url(), On: slices.Contains(q.Tags, t), Count: n})
	}
	slices.SortFunc(p.Chips, func(a, b chip) int { return cmp.Compare(a.Tag, b.Tag) })
	if v.Person != nil {
		for _, st := range []string{"down", "grace", "started", "up", "new", "paused"} {
			if n := stateCounts[st]; n > 0 || q.State == st {
				p.States = append(p.States, chip{Tag: st, URL: q.withState(st).url(), On: q.State == st, Count: n})
			}
		}
	}
	return p, nil
}

// snapshot is a project's checks as the board shows them at an instant,
// before a viewer's search, filter, order and page: every check's row with
// its status, the tags' counts and the summary.
type snapshot struct {
	at      time.Time
	rows    []row // read only
	tags    map[string]int
	summary summary
}

// snapshot looks at the project's checks.
func (s *Server) snapshot(r *http.Request, namespace string, now time.Time) (*snapshot, error) {
	project, err := s.Checks.Project(r.Context(), namespace)
	if err != nil {
		return nil, err
	}
	snap := &snapshot{at: now, rows: make([]row, 0, len(project.Checks)), tags: map[string]int{}}
	for i, c := range project.Checks {
		obs := project.Observed(i)
		view := project.View(i, now)
		label := webpage.LabelOf(view)
		snap.summary.count(label.Class)
		for _, t := range checks.Tags(c.Spec.Tags) {
			snap.tags[t]++
		}
		rw := row{check: c, Name: checks.DisplayName(c), Object: c.Name, Status: label, order: statusOrder[label.Class], NPings: view.NPings,
			LastPing: view.LastPing, Maintenance: obs.Maintenance, runCounts: obs.RunCounts}
		if view.HasNext {
			rw.NextPing = view.NextPing
		}
		if cfg, err := project.Config(i); err == nil && view.Status != monitor.StatusDown {
			if n, of := cfg.Failures(obs.Facts, now); n > 0 {
				rw.Failures = fmt.Sprintf("%d of %d", n, of)
			}
		}
		snap.rows = append(snap.rows, rw)
	}
	return snap, nil
}

// snapshots share each project's snapshot between the boards open on it
// for snapshotFor: a wall screen, or a team's many open tabs, refreshing
// every five seconds cost a look at every check of the project each.
type snapshots struct {
	mu    sync.Mutex
	byNS  map[string]*snapshot
	taken map[string]time.Time // real time, for expiry
}

// snapshotFor is how long a snapshot is shown: the board says when it was
// taken ("Updated Ns ago"), and its statuses are exact at that instant.
const snapshotFor = time.Second

// of is the namespace's snapshot at now: the one shared, taken at most
// snapshotFor ago (and not from another instant of a clock that jumped),
// or a new one take makes.
func (ss *snapshots) of(namespace string, now time.Time, take func(time.Time) (*snapshot, error)) (*snapshot, error) {
	ss.mu.Lock()
	snap, taken := ss.byNS[namespace], ss.taken[namespace]
	ss.mu.Unlock()
	if snap != nil && time.Since(taken) < snapshotFor && !now.Before(snap.at) && now.Sub(snap.at) < snapshotFor {
		return snap, nil
	}
	snap, err := take(now)
	if err != nil {
		return nil, err
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.byNS == nil {
		ss.byNS, ss.taken = map[string]*snapshot{}, map[string]time.Time{}
	}
	for ns, t := range ss.taken {
		if time.Since(t) > time.Minute {
			delete(ss.byNS, ns)
			delete(ss.taken, ns)
		}
	}
	ss.byNS[namespace], ss.taken[namespace] = snap, time.Now()
	return snap, nil
}

// add counts another project's checks in.
func (sm *summary) add(o summary) {
	sm.Total += o.Total
	sm.Up += o.Up
	sm.Late += o.Late
	sm.Down += o.Down
	sm.Paused += o.Paused
	sm.New += o.New
	sm.Running += o.Running
}

func (sm *summary) count(class string) {
	sm.Total++
	switch class {
	case "up":
		sm.Up++
	case "grace":
		sm.Late++
	case "down":
		sm.Down++
	case "paused":
		sm.Paused++
	case "new":
		sm.New++
	case "started":
		sm.Running++
	}
}

// checkID is how the dashboard names a check to a visitor (see row).
func checkID(c *v1.Check, readWrite bool) string {
	if readWrite {
		return checks.UUIDOf(c)
	}
	return checks.UniqueKey(checks.UUIDOf(c))
}

// matches is the search box: a case-insensitive substring of the name, the
// slug or the object name.
func matches(c *v1.Check, needle string) bool {
	if needle == "" {
		return true
	}
	for _, s := range []string{c.Spec.Name, c.Spec.Slug, c.Name} {
		if strings.Contains(strings.ToLower(s), needle) {
			return true
		}
	}
	return false
}

// period is the check's expectation in short: "every 1 day" or the
// schedule with its zone.
func period(c *v1.Check) string {
	if c.Spec.Schedule != nil {
		return *c.Spec.Schedule + " (" + string(c.Spec.Zone()) + ")"
	}
	return "every " + words.Duration(time.Duration(c.Spec.TimeoutSeconds())*time.Second)
}

// sortRows orders the board; ties go by name, then object name (unique in
// the project), so that the order is stable between refreshes.
func sortRows(rows []row, by string) {
	byTime := func(a, b time.Time) int {
		switch {
		case a.IsZero() && b.IsZero():
			return 0
		case a.IsZero():
			return 1 // never comes last
		case b.IsZero():
			return -1
		}
		return a.Compare(b)
	}
	slices.SortFunc(rows, func(a, b row) int {
		var c int
		switch by {
		case "status":
			c = cmp.Compare(a.order, b.order)
		case "last":
			c = -byTime(a.LastPing, b.LastPing) // most recent first
			if a.LastPing.IsZero() != b.LastPing.IsZero() {
				c = -c
			}
		case "next":
			c = byTime(a.NextPing, b.NextPing)
		case "rate":
			// Worst first; checks without runs last.
			switch {
			case (a.rate < 0) != (b.rate < 0):
				c = cmp.Compare(b.rate, a.rate)
			default:
				c = cmp.Compare(a.rate, b.rate)
			}
		case "p95":
			c = -cmp.Compare(a.p95, b.p95) // slowest first
		}
		if c != 0 {
			return c
		}
		if c = cmp.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return cmp.Compare(a.Object, b.Object)
	})
}

// boardWindow is the window of the board's run figures.
const boardWindow = runstats.Week

// runStatsFor is how long a project's run figures are shared between the
// boards sorted by them: they read every run of the project's week (1.5 s
// for 10,000 checks of 100 runs each, docs/performance.md), and move
// slowly. A board sorted otherwise reads its page's checks alone.
const runStatsFor = 30 * time.Second

// runStatsCache shares each project's run figures between its boards;
// boards that ask at once while none are held wait for one reading
// (singleflight), not one each.
type runStatsCache struct {
	mu       sync.Mutex
	byNS     map[string]runStatsEntry
	inFlight singleflight.Group
}

type runStatsEntry struct {
	at, taken time.Time // the clock's instant, and real time for expiry
	stats     map[types.UID]runstats.Stats
}

// runStatsTimeout bounds a reading of a project's run figures: it is
// shared by the boards that wait for it, so no one board's request
// bounds it, and a store that hangs must not hold them all.
const runStatsTimeout = 30 * time.Second

// of is the namespace's figures as of at most runStatsFor ago (on the
// clock and in real time), or new ones that compute makes. A board that
// leaves (ctx) stops waiting; the reading goes on for the others.
func (rc *runStatsCache) of(ctx context.Context, namespace string, now time.Time,
	compute func(context.Context) (map[types.UID]runstats.Stats, error)) (map[types.UID]runstats.Stats, error) {
	if stats, ok := rc.held(namespace, now); ok {
		return stats, nil
	}
	done := rc.inFlight.DoChan(namespace, func() (any, error) {
		// A reading that ended between held and Do left its figures.
		if stats, ok := rc.held(namespace, now); ok {
			return stats, nil
		}
		readCtx, cancel := context.WithTimeout(context.Background(), runStatsTimeout)
		defer cancel()
		stats, err := compute(readCtx)
		if err != nil {
			return nil, err
		}
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if rc.byNS == nil {
			rc.byNS = map[string]runStatsEntry{}
		}
		for ns, old := range rc.byNS {
			if time.Since(old.taken) > time.Minute {
				delete(rc.byNS, ns)
			}
		}
		rc.byNS[namespace] = runStatsEntry{at: now, taken: time.Now(), stats: stats}
		return stats, nil
	})
	select {
	case res := <-done:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(map[types.UID]runstats.Stats), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// held is the namespace's figures if they are fresh for now.
func (rc *runStatsCache) held(namespace string, now time.Time) (map[types.UID]runstats.Stats, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e, ok := rc.byNS[namespace]
	if ok && time.Since(e.taken) < runStatsFor && !now.Before(e.at) && now.Sub(e.at) < runStatsFor {
		return e.stats, true
	}
	return nil, false
}
