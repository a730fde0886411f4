package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/maintenance"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/runstats"
	"github.com/vigil-operator/vigil/internal/schedule"
	"github.com/vigil-operator/vigil/internal/sla"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/webpage"
	"github.com/vigil-operator/vigil/internal/words"
)

// checkPage is a check's page template data. What a read-only key may not
// see (ping URLs, the ping log and its bodies, channels) is not filled in
// for it at all, rather than hidden by the template.
type checkPage struct {
	Title, Namespace, ID, Object, Name, Slug, Desc string
	ReadWrite                                      bool
	// Person names a person signed in through OpenID Connect.
	Person      string
	CSRF        string
	Status      webpage.Label
	Why         string
	Policy      []string
	Maintenance []string
	Coverage    string
	Snoozed     bool
	// Ack says who acknowledged the down and when; Acknowledgeable: it is
	// down and nobody has.
	Ack             string
	Acknowledgeable bool
	// Depends is what spec.dependsOn does (nil: the check has none).
	Depends                                    *dependsView
	Tags                                       []string
	Period, Grace, TZ, Schedule, ScheduleWords string
	Upcoming                                   []time.Time
	NPings                                     int64
	Timeline                                   timeline
	Calendar                                   calendar
	Runs                                       runsView
	Badges                                     []badgeLink
	Kubectl                                    string
	Paused                                     bool
	Now                                        time.Time

	// Read-write keys only.
	PingURL, SlugURL string
	Snippets         []snippet
	Pings            []pingRow
	Channels         []channelRow
	Notifications    []notificationRow
	// Tested is the Channel a test notification just went through.
	Tested string
}

type badgeLink struct{ Label, URL, Markdown string }

type snippet struct{ Label, ID, Text string }

type channelRow struct {
	Name, Kind string
	// Members are a group's Channels, each tested on its own by the
	// group's button.
	Members []string
}

type pingRow struct {
	N                          int64
	Kind, Icon                 string
	At                         time.Time
	Ago, Source, Method, UA    string
	Duration, ExitStatus, Body string
	BodyURL                    string
	BodyMore                   bool
}

// previewBytes is how much of a ping body the log shows.
const previewBytes = 120

// checkPage shows one check.
func (s *Server) checkPage(w http.ResponseWriter, r *http.Request) {
	v, c := visitorOf(r), checkOf(r)
	obs, err := s.Checks.Observed(r.Context(), c)
	if err != nil {
		s.unavailable(w, r, "reading the check", err)
		return
	}
	now := s.now()
	view := s.Checks.View(c, obs, now)
	uuid := checks.UUIDOf(c)
	p := &checkPage{
		Title: checks.DisplayName(c), Namespace: c.Namespace, ID: checkID(c, v.ReadWrite), Object: c.Name, Name: checks.DisplayName(c),
		Slug: c.Spec.Slug, Desc: c.Spec.Desc, ReadWrite: v.ReadWrite, Person: v.personName(), CSRF: v.CSRF, Status: webpage.LabelOf(view),
		Tags: checks.Tags(c.Spec.Tags), Period: period(c), TZ: string(c.Spec.Zone()), NPings: view.NPings,
		Grace:   words.Duration(time.Duration(c.Spec.Grace) * time.Second),
		Kubectl: "kubectl -n " + c.Namespace + " get check " + c.Name,
		Paused:  view.Status == monitor.StatusPaused, Now: now,
	}
	p.Why = s.why(c, obs, view)
	p.Policy = s.policy(c, obs, now)
	p.Maintenance, p.Snoozed = s.maintenance(c, obs, now)
	p.Depends = s.depends(c, obs, v.ReadWrite, now)
	if ack, ok := obs.Acknowledged(); ok {
		p.Ack = "Acknowledged by " + ack.By + ", " + words.Relative(ack.At, now) + ": its re-alerts and escalation stop until it recovers."
	} else {
		p.Acknowledgeable = obs.Facts.State == monitor.StatusDown
	}
	p.Coverage = coverageLine(c.Status.Coverage)
	s.explainSchedule(p, c, now)
	flips, err := s.Checks.RecentFlips(r.Context(), c, webpage.FlipsRead)
	if err != nil {
		s.unavailable(w, r, "reading the flips", err)
		return
	}
	history := webpage.HistoryOf(c, obs, view.Status, flips, now)
	p.Timeline = timelineOf(history, now)
	loc, err := schedule.LoadLocation(p.TZ)
	if err != nil {
		loc = time.UTC
	}
	p.Calendar = calendarOf(history, now, loc)
	window, err := runstats.ParseWindow(r.URL.Query().Get("window"))
	if err != nil {
		window = runstats.Default // a hand-edited address: the page, not an error
	}
	st, err := s.Checks.RunStats(r.Context(), c, window)
	if err != nil {
		s.unavailable(w, r, "reading the runs", err)
		return
	}
	usual, err := s.Checks.Usual(r.Context(), c)
	if err != nil {
		s.unavailable(w, r, "reading the runs", err)
		return
	}
	p.Runs = runsViewOf(st, usual, window, loc, func(w string) string { return "/checks/" + p.ID + "?window=" + w + "#runs-h" })
	badgeKey := checks.BadgeKey(uuid)
	for _, b := range []struct{ label, path string }{
		{"two states (up, down)", "/b/2/" + badgeKey + ".svg"},
		{"three states (up, late, down)", "/b/3/" + badgeKey + ".svg"},
	} {
		url := s.BaseURL + b.path
		p.Badges = append(p.Badges, badgeLink{Label: b.label, URL: b.path, Markdown: "![" + p.Name + "](" + url + ")"})
	}
	if v.ReadWrite {
		if tested := r.URL.Query().Get("tested"); c.Spec.Assigns(tested) {
			p.Tested = tested
		}
		if err := s.fillReadWrite(r.Context(), p, c); err != nil {
			s.unavailable(w, r, "reading the ping log", err)
			return
		}
		if p.Notifications, err = s.notifications(r.Context(), c, obs, len(s.Checks.Channels(c)) > 0); err != nil {
			s.unavailable(w, r, "reading the notifications", err)
			return
		}
	}
	s.render(w, r, http.StatusOK, "check", p)
}

// policy describes the check's alert policy, when it has one, with where
// the check stands against it.
func (s *Server) policy(c *v1.Check, obs store.Check, now time.Time) []string {
	cfg, err := s.Checks.Config(c)
	if err != nil {
		return nil
	}
	var out []string
	if n, of := cfg.Failures(obs.Facts, now); of > 1 {
		out = append(out, fmt.Sprintf("Down after %d failed runs in a row (now %d of %d).", of, n, of))
	}
	if n, of := cfg.Recovery(obs.Facts); of > 1 {
		line := fmt.Sprintf("Up again after %d successes in a row", of)
		if n > 0 {
			line += fmt.Sprintf(" (now %d of %d)", n, of)
		}
		out = append(out, line+".")
	}
	if cfg.MaxRuntime > 0 {
		out = append(out, "A run may take at most "+words.Duration(cfg.MaxRuntime)+"; grace bounds only a late start.")
	}
	if cfg.MinRuntime > 0 {
		out = append(out, "A run that succeeds in less than "+words.Duration(cfg.MinRuntime)+" is a failure.")
	}
	if p := c.Spec.RealertInterval; p != nil {
		out = append(out, "While down, announced again every "+words.Duration(p.Duration)+".")
	}
	if esc := c.Spec.Escalation; esc != nil {
		out = append(out, "Still down after "+words.Duration(esc.After.Duration)+": "+strings.Join(esc.Channels, ", ")+" told too.")
	}
	if spec := c.Spec.SLA; spec != nil {
		if rules, err := sla.RulesOf(spec); err == nil {
			out = append(out, rules.Describe())
		}
		// The leader's last judgement, as the SLAMet condition shows it.
		if cond := meta.FindStatusCondition(c.Status.Conditions, v1.ConditionSLAMet); cond != nil {
			out = append(out, cond.Message+".")
		}
	}
	return out
}

// inZone formats instants in a check's zone, named: "Tue 24 Nov 03:45 Riga
// time".
func inZone(tz string) func(time.Time) string {
	return func(t time.Time) string { return formatIn(t, tz) + " " + zoneName(tz) }
}

// why says what the check's state means, in the check's own zone.
func (s *Server) why(c *v1.Check, obs store.Check, view checks.View) string {
	at := inZone(string(c.Spec.Zone()))
	cfg, err := s.Checks.Config(c)
	if err != nil {
		return "Its schedule is not valid (" + err.Error() + "); kubectl describe shows the condition."
	}
	deadline, hasDeadline := cfg.Deadline(obs.Facts)
	switch view.Status {
	case monitor.StatusNew:
		if view.Started {
			return "A run started at " + at(obs.Facts.LastStart) + "; no ping has completed one yet."
		}
		return "No ping has arrived yet. Monitoring begins with the first one."
	case monitor.StatusPaused:
		return "Paused at " + at(obs.Facts.PausedAt) + ". The next ping resumes monitoring" +
			map[bool]string{true: ", unless the check resumes only by hand.", false: "."}[c.Spec.ManualResume]
	case monitor.StatusDown:
		if n, need := cfg.Recovery(obs.Facts); n > 0 {
			return fmt.Sprintf("Down; %d of %d successes in a row it needs to come back up.", n, need)
		}
		switch f := obs.LastFlip; {
		case f != nil && !f.Up && f.Reason == monitor.ReasonTimeout && f.Detail != "":
			// Vigil's own absence: the grace began when it came back.
			return "Expected a ping by " + at(f.At.Add(-cfg.Grace)) + ", none came (" + f.Detail + "); down since " + at(f.At) + "."
		case f != nil && !f.Up && f.Detail != "":
			// The policy's reasons, in its own words: "ran longer than 2 h".
			return "The run " + f.Detail + "; down since " + at(f.At) + "."
		case f != nil && !f.Up && f.Reason == monitor.ReasonFail:
			return "A failure ping arrived at " + at(f.At) + "."
		case f != nil && !f.Up && f.Reason == monitor.ReasonTimeout:
			// A missed deadline is recorded at the deadline itself.
			return "Expected a ping by " + at(f.At.Add(-cfg.Grace)) + ", none came; down since " + at(f.At) + "."
		case hasDeadline: // past its deadline, not yet recorded
			return "Expected a ping by " + at(view.NextPing) + ", none came; down since " + at(deadline) + "."
		case obs.Facts.LastPingFailed && !obs.Facts.LastPing.IsZero():
			return "A failure ping arrived at " + at(obs.Facts.LastPing) + "."
		}
		return "Down since " + at(obs.Facts.StateSince) + "."
	case monitor.StatusGrace:
		if cfg.Reprieved(obs.Facts, s.now()) {
			return "Its ping fell due while Vigil was away; Vigil came back at " + at(obs.Facts.Reprieve) +
				" and gives it a fresh grace: it goes down at " + at(deadline) + " unless one comes."
		}
		return "Expected a ping by " + at(view.NextPing) + ", none yet. It goes down at " + at(deadline) + " unless one comes."
	}
	msg := "Last ping at " + at(view.LastPing) + "."
	if n, of := cfg.Failures(obs.Facts, s.now()); n > 0 {
		msg = fmt.Sprintf("%d of %d failures in a row. ", n, of) + msg
	}
	if view.Started {
		msg = "A run started at " + at(obs.Facts.LastStart) + "."
	}
	if view.HasNext {
		msg += " Next expected by " + at(view.NextPing) + ", down at " + at(deadline) + " if none comes."
	}
	return msg
}

// explainSchedule fills the schedule in words and its next five instants.
func (s *Server) explainSchedule(p *checkPage, c *v1.Check, now time.Time) {
	grace := words.Duration(time.Duration(c.Spec.Grace) * time.Second)
	if c.Spec.Schedule == nil {
		p.ScheduleWords = "Expects a ping every " + words.Duration(time.Duration(c.Spec.TimeoutSeconds())*time.Second) + ", and waits " + grace + " more before it goes down."
		return
	}
	p.Schedule = *c.Spec.Schedule
	desc := ""
	if schedule.KindOf(p.Schedule) == schedule.KindCron {
		desc = describeCron(p.Schedule)
	}
	if desc != "" {
		p.ScheduleWords = "Expects a ping " + desc + ", " + zoneName(p.TZ) + ", and waits " + grace + " more before it goes down."
	} else {
		p.ScheduleWords = "Expects a ping on the schedule below, in " + zoneName(p.TZ) + ", and waits " + grace + " more before it goes down."
	}
	sched, err := schedule.Parse(p.Schedule, p.TZ)
	if err != nil {
		return
	}
	t := now
	for len(p.Upcoming) < 5 {
		next, ok := sched.Next(t)
		if !ok {
			break
		}
		p.Upcoming = append(p.Upcoming, next)
		t = next
	}
}

// fillReadWrite adds what only a read-write key sees.
func (s *Server) fillReadWrite(ctx context.Context, p *checkPage, c *v1.Check) error {
	p.PingURL = checks.PingURL(s.BaseURL, p.ID) // the UUID: read-write keys only
	if info, ok := s.Projects.Project(c.Namespace); ok && info.PingKey != "" && c.Spec.Slug != "" {
		p.SlugURL = s.BaseURL + "/ping/" + info.PingKey + "/" + c.Spec.Slug
	}
	p.Snippets = []snippet{
		{"curl", "snippet-curl", "curl -fsS -m 10 --retry 5 -o /dev/null " + p.PingURL},
		{"vigil run", "snippet-run", "vigil run " + p.PingURL + " -- /usr/local/bin/backup.sh"},
		{"CronJob", "snippet-cronjob", cronJobSnippet(c, p.PingURL)},
	}
	channels, err := s.Checks.ProjectChannels(ctx, c.Namespace)
	if err != nil {
		return err
	}
	for i := range channels {
		ch := &channels[i]
		if c.Spec.Assigns(ch.Name) {
			row := channelRow{Name: ch.Name, Kind: string(ch.Spec.Kind)}
			if ch.Spec.Group != nil {
				row.Members = ch.Spec.Group.Channels
			}
			p.Channels = append(p.Channels, row)
		}
	}
	pings, err := s.Checks.Pings(ctx, c)
	if err != nil {
		return err
	}
	durations := checks.RunDurations(pings)
	previews, err := s.Checks.BodyPreviews(ctx, c, previewBytes+1)
	if err != nil {
		return err
	}
	for i, pg := range pings {
		pr := pingRow{N: pg.N, Kind: string(pg.Kind), Icon: pingIcon(pg.Kind), At: pg.At, Ago: words.Relative(pg.At, p.Now),
			Source: strings.TrimSpace(pg.Scheme + " " + pg.RemoteAddr), Method: pg.Method, UA: pg.UA}
		if d, ok := durations[i]; ok {
			pr.Duration = words.Duration(d)
		}
		if pg.ExitStatus != nil {
			pr.ExitStatus = strconv.Itoa(*pg.ExitStatus)
		}
		if body, ok := previews[pg.N]; ok {
			pr.Body, pr.BodyMore = preview(body)
			pr.BodyURL = fmt.Sprintf("/checks/%s/pings/%d/body", p.ID, pg.N)
		}
		p.Pings = append(p.Pings, pr)
	}
	return nil
}

func pingIcon(k monitor.PingKind) string {
	switch k {
	case monitor.PingSuccess:
		return "✔"
	case monitor.PingFail:
		return "✖"
	case monitor.PingStart:
		return "▶"
	case monitor.PingLog:
		return "✎"
	}
	return "–"
}

// preview is the start of a body as text: at most previewBytes (more is
// the part read beyond them), cut at a rune, invalid UTF-8 replaced.
func preview(body []byte) (string, bool) {
	more := len(body) > previewBytes
	if more {
		body = body[:previewBytes]
		for len(body) > 0 && !utf8.Valid(body) {
			body = body[:len(body)-1]
		}
	}
	return strings.ToValidUTF8(string(body), "\uFFFD"), more
}

func cronJobSnippet(c *v1.Check, pingURL string) string {
	sched := "0 3 * * *"
	tz := ""
	if c.Spec.Schedule != nil && schedule.KindOf(*c.Spec.Schedule) == schedule.KindCron {
		sched = *c.Spec.Schedule
		if c.Spec.TZ != "" {
			tz = "\n  timeZone: " + string(c.Spec.TZ)
		}
	}
	return `apiVersion: batch/v1
kind: CronJob
metadata:
  name: ` + c.Name + `
spec:
  schedule: "` + sched + `"` + tz + `
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: job
              image: curlimages/curl
              command: ["sh", "-c", "your-job && curl -fsS -m 10 --retry 5 -o /dev/null ` + pingURL + `"]`
}

// pingBody shows a ping's full body as plain text (read-write keys only).
func (s *Server) pingBody(w http.ResponseWriter, r *http.Request) {
	c := checkOf(r)
	n, err := strconv.ParseInt(r.PathValue("n"), 10, 64)
	if err != nil || n < 1 {
		s.errorPage(w, r, http.StatusNotFound, "No such ping.")
		return
	}
	body, err := s.Checks.PingBody(r.Context(), c, n)
	switch {
	case errors.Is(err, checks.ErrPingExpired):
		s.errorPage(w, r, http.StatusNotFound, "That ping is older than the ping log keeps.")
	case err != nil && !errors.Is(err, checks.ErrNoPing):
		s.unavailable(w, r, "reading the ping log", err)
	case len(body) == 0:
		s.errorPage(w, r, http.StatusNotFound, "That ping has no body.")
	default:
		h := w.Header()
		h.Set("Content-Type", "text/plain; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("Content-Length", strconv.Itoa(len(body)))
		_, _ = w.Write(body)
	}
}

// maintenance says which maintenance windows hold the check's
// notifications, now or next, and what they hold; snoozed reports whether
// its own snooze is active.
func (s *Server) maintenance(c *v1.Check, obs store.Check, now time.Time) (lines []string, snoozed bool) {
	at := inZone(string(c.Spec.Zone()))
	for _, w := range s.Checks.Windows(c) {
		span, active := w.At(now)
		switch {
		case active:
			snoozed = snoozed || w.Name == maintenance.SnoozeName(c.Name)
			lines = append(lines, "Maintenance window "+w.Name+" holds notifications until "+at(span.End)+
				"; pings and flips are still recorded.")
		case !span.IsZero():
			lines = append(lines, "Maintenance window "+w.Name+": next from "+at(span.Start)+" to "+at(span.End)+".")
		}
	}
	if f := obs.LastFlip; f != nil && f.HeldBy() != "" && obs.Maintenance != "" {
		lines = append(lines, fmt.Sprintf("The %s at %s was not announced: window %s held it. When the window ends, the Channels are told if it still stands.",
			map[bool]string{true: "up", false: "down"}[f.Up], at(f.At), f.Held))
	}
	return lines, snoozed
}

// snoozeChoices are the snoozes the page offers, in its select's order.
var snoozeChoices = map[string]time.Duration{"1h": time.Hour, "4h": 4 * time.Hour, "24h": 24 * time.Hour, "168h": 7 * 24 * time.Hour}

// snooze holds the check's notifications for the chosen time, or ends its
// snooze (end=1), as the API's snooze does.
func (s *Server) snooze(w http.ResponseWriter, r *http.Request) {
	c := checkOf(r)
	var err error
	if r.PostFormValue("end") != "" {
		err = s.Checks.Unsnooze(r.Context(), c)
	} else {
		d, ok := snoozeChoices[r.PostFormValue("for")]
		if !ok {
			s.errorPage(w, r, http.StatusBadRequest, "Choose how long to snooze for.")
			return
		}
		_, err = s.Checks.Snooze(r.Context(), c, d)
	}
	switch {
	case errors.Is(err, maintenance.ErrSnoozeTaken):
		s.errorPage(w, r, http.StatusConflict, err.Error())
		return
	case err != nil:
		s.unavailable(w, r, "snoozing", err)
		return
	}
	http.Redirect(w, r, "/checks/"+checks.UUIDOf(c), http.StatusSeeOther)
}

// ack acknowledges the check's down, as the API's ack does, in the
// visitor's name.
func (s *Server) ack(w http.ResponseWriter, r *http.Request) {
	c := checkOf(r)
	_, err := s.Checks.Acknowledge(r.Context(), c, visitorOf(r).Who)
	switch {
	case errors.Is(err, store.ErrNotDown):
		s.errorPage(w, r, http.StatusConflict, "The check is not down: only a down can be acknowledged.")
		return
	case err != nil:
		s.unavailable(w, r, "acknowledging", err)
		return
	}
	http.Redirect(w, r, "/checks/"+checks.UUIDOf(c), http.StatusSeeOther)
}

// pause and resume change the pause in the ping store, as the API's do.
func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	s.changePause(w, r, s.Checks.Pause)
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	s.changePause(w, r, s.Checks.Resume)
}

func (s *Server) changePause(w http.ResponseWriter, r *http.Request, change func(context.Context, *v1.Check) (store.Check, error)) {
	c := checkOf(r)
	_, err := change(r.Context(), c)
	switch {
	case errors.Is(err, monitor.ErrNotPaused):
		// Resumed meanwhile (a ping, another tab): the page shows how it is.
	case err != nil:
		s.unavailable(w, r, "changing the pause", err)
		return
	}
	http.Redirect(w, r, "/checks/"+checks.UUIDOf(c), http.StatusSeeOther)
}

// coverageLine says what made a check for a CronJob, and from which
// fields; empty for a check written by hand or through the API.
func coverageLine(cov *v1.Coverage) string {
	if cov == nil {
		return ""
	}
	if cov.Policy == "" {
		return "Made for CronJob " + cov.CronJob + " by its annotation monitoring.vigil.dev/check."
	}
	line := "Made for CronJob " + cov.CronJob + " by " + cov.Policy
	if len(cov.PolicyFields) > 0 {
		line += ", which sets " + strings.Join(cov.PolicyFields, ", ")
	}
	line += "."
	if len(cov.AnnotationFields) > 0 {
		line += " The CronJob's annotations set " + strings.Join(cov.AnnotationFields, ", ") + "."
	}
	if len(cov.AlsoSelectedBy) > 0 {
		line += " " + strings.Join(cov.AlsoSelectedBy, ", ") + " selects it too; the first policy by name applies."
	}
	return line
}

// testChannel sends a test notification through one of the check's
// Channels, about the check, and comes back to its page saying so; a
// failure shows the delivery's error (Secret values redacted). A project
// sends at most one test per testInterval, whichever Channel or group it
// goes through, so the button cannot be turned into a way to flood a
// service or run up a bill of text messages and calls.
func (s *Server) testChannel(w http.ResponseWriter, r *http.Request) {
	c := checkOf(r)
	name := r.PathValue("name")
	if !c.Spec.Assigns(name) || s.TestChannel == nil {
		s.errorPage(w, r, http.StatusNotFound, "This check has no Channel of that name.")
		return
	}
	if !s.testTurns.take(c.Namespace, s.now()) {
		s.errorPage(w, r, http.StatusTooManyRequests, "A test notification went out of this project moments ago: wait a few seconds and try again.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if err := s.TestChannel(ctx, c.Namespace, name, c); err != nil {
		s.errorPage(w, r, http.StatusBadGateway, "The test notification through "+name+" failed: "+err.Error())
		return
	}
	http.Redirect(w, r, "/checks/"+checks.UUIDOf(c)+"?tested="+url.QueryEscape(name)+"#channels", http.StatusSeeOther)
}

// testInterval is how often a project may send a test from the dashboard.
const testInterval = 10 * time.Second

// turns lets each key through at most once per testInterval.
type turns struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (t *turns) take(key string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.last == nil {
		t.last = map[string]time.Time{}
	}
	for k, at := range t.last { // forget the old turns: the map stays small
		if now.Sub(at) >= testInterval {
			delete(t.last, k)
		}
	}
	if _, taken := t.last[key]; taken {
		return false
	}
	t.last[key] = now
	return true
}
