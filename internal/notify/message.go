package notify

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/words"
)

// Message is one notification: a check went down or came back up.
type Message struct {
	// Check is what the notification is about.
	Check CheckInfo
	// Up is true when the check came up and false when it went down.
	Up bool
	// Time is when the flip happened (for a missed deadline, the deadline).
	// Zero means now.
	Time time.Time
	// Reason is why a check went down: "fail" (a failure signal),
	// "timeout" (a missed deadline), "runtime" (a run longer than the
	// check's maxRuntime) or "short" (a run shorter than its minRuntime).
	// Empty for an up flip.
	Reason string
	// Detail is the alert policy's plain words for runtime and short ("ran
	// longer than 2 hours"), or for a failure notice the count ("1 of 3
	// failures in a row"); empty otherwise.
	Detail string
	// Notice is empty for a flip. Otherwise the check's state has not
	// changed and this tells of it again (monitor.Notice says each kind):
	// still down at a re-alert or an escalation, a failed run below the
	// failure threshold, a maintenance window (Held, until Until) started
	// or ended, an SLA breached (Reason the rule, Detail the figures) or met
	// again, a check flapping (Detail says how often, and until when).
	Notice monitor.Notice
	// Since is when the down began: for an up flip, how long it was down;
	// for a re-alert or an escalation, how long it has been. Zero: unknown.
	Since time.Time
	// Held names the maintenance window that held this notification: it
	// is sent now because the window ended and the flip still stands. For
	// a maintenance notice, the window it is about.
	Held string
	// Until is when the window of a maintenance-start notice ends.
	Until time.Time
	// Flapped: the check's flapping held this notification; it is sent now
	// because the check has kept one state since.
	Flapped bool
	// Group, when set, makes this one message about several checks that
	// changed state the same way (Up) at about the same time: storm
	// control (package delivery) sends it instead of one message each.
	// Check then names only the namespace and the group (Name "12
	// checks"), Time is when the last of them changed, and the facts
	// list the checks.
	Group []GroupedCheck
	// HeldByParent names the check this one depends on whose down held
	// this notification: it is sent now because that check is no longer
	// down and this one still is.
	HeldByParent string
	// Subject and Text, when set, are the Channel's own wording
	// (spec.template, rendered with the message's variables): Subject takes
	// the place of the headline (a title, an email's subject), Text that of
	// the reason line. The facts, the link and the body excerpt stay.
	Subject, Text string
	// Test marks a test notification (vigil channels test, the API's test
	// endpoint). Senders mark it as such where a person reads it, and keep
	// it apart from real alerts where a system tracks alerts (PagerDuty,
	// Alertmanager).
	Test bool
	// Report, when set, is the whole message: a project's report, sent
	// as it is written (the email kind alone takes one), not a check's
	// notification.
	Report *Report
}

// GroupedCheck is one check of a grouped message: its name, when it went
// down (or up), why (the flip's reason and detail), and its page.
type GroupedCheck struct {
	Name           string
	At             time.Time
	Reason, Detail string
	// Since is when an up check's down began.
	Since      time.Time
	DetailsURL string
}

// maxGroupFacts bounds the checks a grouped message lists; the rest are
// counted ("and 38 more").
const maxGroupFacts = 25

// Report is a project's periodic report as the report package writes it.
type Report struct {
	Subject, Text, HTML string
}

// CheckInfo is what senders know about the check a message is about. Only
// Namespace, Object and Name are needed; the rest is shown when set.
type CheckInfo struct {
	// Namespace and Object are the Check object's namespace and name.
	Namespace, Object string
	// Name is spec.name, or the object's name when spec.name is empty.
	Name string
	// Slug is spec.slug.
	Slug string
	// UUID is the identifier in the check's ping URL (status.uuid).
	UUID string
	// Desc is spec.desc.
	Desc string
	// Tags are spec.tags, split on spaces.
	Tags []string
	// PingURL is the URL the job calls (status.pingURL).
	PingURL string
	// DetailsURL is a page about the check that notifications link to (a
	// dashboard, for example); empty when there is none. It must never be
	// the ping URL: people and tools follow these links.
	DetailsURL string
	// Timeout is the expected period of a simple check; zero for a cron check.
	Timeout time.Duration
	// Grace is the check's grace time.
	Grace time.Duration
	// Schedule and TZ are a cron check's schedule and time zone.
	Schedule, TZ string
	// NPings is the number of pings received (status.nPings).
	NPings int64
	// LastPing is when the last success or failure ping arrived; zero when
	// the check has never been pinged.
	LastPing time.Time
	// LastPingType is the type of that ping: success or fail.
	LastPingType v1.PingType
	// LastPingBody is the body of the last ping; it may be empty. Senders
	// use at most an excerpt of it.
	LastPingBody []byte
	// ExitStatus is the exit status the last ping reported, if any.
	ExitStatus *int
	// JSON, when set, is what the webhook variable $JSON expands to: the
	// check as the Management API's "Get a single check" shows it. When
	// empty, senders build a summary with the same field names.
	JSON []byte
}

// now tells the time; tests replace it.
var now = time.Now

// flipTime is the message's time, or now when it has none.
func (m *Message) flipTime() time.Time {
	if m.Time.IsZero() {
		return now().UTC()
	}
	return m.Time.UTC()
}

// status is "up" or "down", the reference's $STATUS; "failure" for a
// failure notice (a Vigil addition: the check is not down).
func (m *Message) status() string {
	switch {
	case m.Up:
		return "up"
	case m.Notice == monitor.NoticeFailure:
		return "failure"
	case m.maintenance():
		return "maintenance"
	case m.sla():
		return "sla"
	case m.Notice == monitor.NoticeFlapping:
		return "flapping"
	}
	return "down"
}

// sla reports whether the message is about the check's SLA.
func (m *Message) sla() bool {
	return m.Notice == monitor.NoticeSLABreach || m.Notice == monitor.NoticeSLAMet
}

// aside reports whether the message tells of something beside the
// check's state, for people to read: a failed run below the threshold, a
// maintenance window, the SLA, flapping. The check is not down for it, so
// an incident tracker opens no incident and a pager is not woken.
func (m *Message) aside() bool {
	return m.Notice == monitor.NoticeFailure || m.maintenance() || m.sla() || m.Notice == monitor.NoticeFlapping
}

// maintenance reports whether the message is about a maintenance window
// starting or ending.
func (m *Message) maintenance() bool {
	return m.Notice == monitor.NoticeMaintenanceStart || m.Notice == monitor.NoticeMaintenanceEnd
}

// calm reports whether the message is good news or none: an up, or a
// maintenance window (senders colour it as an up).
func (m *Message) calm() bool { return m.Up || m.maintenance() || m.Notice == monitor.NoticeSLAMet }

// testPrefix marks the human-readable titles of test notifications.
func (m *Message) testPrefix() string {
	if m.Test {
		return "[Test] "
	}
	return ""
}

// name is the check's display name: its name, object name or UUID.
func (c *CheckInfo) name() string {
	switch {
	case c.Name != "":
		return c.Name
	case c.Object != "":
		return c.Object
	default:
		return c.UUID
	}
}

// headline is the one-line summary chat messages open with:
// “backup” is DOWN. It tells the story where it can: “backup” is UP (was
// down for 2 hours). “backup” is still DOWN (for 2 hours).
func (m *Message) headline() string {
	if m.Group != nil {
		return m.summary() + "."
	}
	return fmt.Sprintf("%s“%s” %s.", m.testPrefix(), m.Check.name(), m.state())
}

// summary is the shorter form without quotes: backup is DOWN; for a
// group, 12 checks in team-a are DOWN.
func (m *Message) summary() string {
	if m.Group != nil {
		return fmt.Sprintf("%s%d checks in %s are %s", m.testPrefix(), len(m.Group), m.Check.Namespace, strings.ToUpper(m.status()))
	}
	return fmt.Sprintf("%s%s %s", m.testPrefix(), m.Check.name(), m.state())
}

// title is the headline, or the Channel's own subject (marked as a test,
// unless it says so already, as $SUMMARY does).
func (m *Message) title() string {
	if m.Subject != "" {
		if strings.HasPrefix(m.Subject, m.testPrefix()) {
			return m.Subject
		}
		return m.testPrefix() + m.Subject
	}
	return m.headline()
}

// shortTitle is the summary, or the Channel's own subject.
func (m *Message) shortTitle() string {
	if m.Subject != "" {
		return m.title()
	}
	return m.summary()
}

// reasonLine is the line under the title: the Channel's own text, or
// "Reason: …." (empty when there is no reason to give).
func (m *Message) reasonLine() string {
	if m.Text != "" {
		return m.Text
	}
	if m.Group != nil {
		return "They changed within moments of each other: one message for them all, not one each (storm control)."
	}
	if r := m.reasonText(); r != "" {
		return "Reason: " + r + "."
	}
	return ""
}

// Template limits: a subject is one line, a text a few paragraphs.
const (
	maxSubject = 250
	maxText    = 4000
)

// applyTemplate renders the Channel's own subject and text, if it has
// them, with the webhook's variables: a subject on one line, both bounded.
func (m *Message) applyTemplate(t *v1.MessageTemplate) {
	if t == nil {
		return
	}
	// Past its bound, an expansion is cut, as the result is: the room for
	// the spaces and line breaks that are dropped, then the cut.
	if t.Subject != "" {
		s, _ := m.expand(t.Subject, inBody, 4*maxSubject)
		m.Subject, _ = words.Cut(strings.Join(strings.Fields(s), " "), maxSubject)
	}
	if t.Body != "" {
		s, _ := m.expand(t.Body, inBody, 2*maxText)
		m.Text, _ = words.Cut(strings.TrimSpace(s), maxText)
	}
}

// state is what the headline says of the check: "is DOWN", "is still DOWN
// (for 2 hours)", "is UP (was down for 2 hours)", "had a failed run (1 of 3
// failures in a row)".
func (m *Message) state() string {
	lasted := ""
	if !m.Since.IsZero() && m.flipTime().After(m.Since) {
		lasted = words.Duration(m.flipTime().Sub(m.Since))
	}
	switch {
	case m.Notice == monitor.NoticeMaintenanceStart && !m.Until.IsZero():
		return "is in maintenance (window " + m.Held + " holds its notifications until " + m.Until.UTC().Format("2006-01-02 15:04 UTC") + ")"
	case m.Notice == monitor.NoticeMaintenanceStart:
		return "is in maintenance (window " + m.Held + " holds its notifications)"
	case m.Notice == monitor.NoticeMaintenanceEnd:
		return "is out of maintenance (window " + m.Held + " ended)"
	case m.Notice == monitor.NoticeFailure:
		if m.Detail != "" {
			return "had a failed run (" + m.Detail + ")"
		}
		return "had a failed run"
	case m.Notice == monitor.NoticeSLABreach:
		return "breached its SLA (" + m.Detail + ")"
	case m.Notice == monitor.NoticeSLAMet:
		return "meets its SLA again (" + m.Detail + ")"
	case m.Notice == monitor.NoticeFlapping:
		return "is flapping (" + m.Detail + ")"
	case m.Notice != "" && lasted != "":
		return "is still DOWN (for " + lasted + ")"
	case m.Notice != "":
		return "is still DOWN"
	case m.Up && lasted != "":
		return "is UP (was down for " + lasted + ")"
	}
	return "is " + strings.ToUpper(m.status())
}

// reasonText explains a down flip, as the reference words it; empty for an
// up flip or an unknown reason.
func (m *Message) reasonText() string {
	if m.Group != nil { // the checks, named: a webhook's $REASON_TEXT
		var names []string
		for i, g := range m.Group {
			if i == maxGroupFacts {
				names = append(names, fmt.Sprintf("and %d more", len(m.Group)-i))
				break
			}
			names = append(names, g.Name)
		}
		return strings.Join(names, ", ")
	}
	if m.Up {
		return ""
	}
	switch m.Reason {
	case "timeout":
		// Vigil's own absence adds why the grace began late: "it fell
		// due while Vigil was away; no ping came in …".
		if m.Detail != "" {
			return "success signal did not arrive on time, grace time passed (" + m.Detail + ")"
		}
		return "success signal did not arrive on time, grace time passed"
	case "fail":
		return "received a failure signal"
	case "runtime", "short", "anomaly":
		if m.Notice == monitor.NoticeFailure {
			return ""
		}
		// The alert policy's reasons, with its figures: "the run ran
		// longer than 2 hours", "the run finished in 3 seconds, expected at
		// least 5 minutes".
		if m.Detail != "" {
			return "the run " + m.Detail
		}
	}
	return ""
}

// fact is one labelled value of a message's details.
type fact struct {
	Title, Value string
	// Long facts take a whole row where the layout has columns.
	Long bool
	// Code facts are shown verbatim (a schedule, tags).
	Code bool
}

// facts lists a check's details in the reference's order: description,
// namespace, tags, period or schedule and time zone, total pings, last ping.
func (m *Message) facts() []fact {
	if m.Group != nil {
		return m.groupFacts()
	}
	c := &m.Check
	var out []fact
	if c.Desc != "" {
		out = append(out, fact{Title: "Description", Value: c.Desc, Long: true})
	}
	if c.Namespace != "" {
		out = append(out, fact{Title: "Namespace", Value: c.Namespace})
	}
	if len(c.Tags) > 0 {
		out = append(out, fact{Title: "Tags", Value: strings.Join(c.Tags, " "), Code: true})
	}
	if c.Schedule != "" {
		out = append(out, fact{Title: "Schedule", Value: c.Schedule, Code: true})
		tz := c.TZ
		if tz == "" {
			tz = "UTC"
		}
		out = append(out, fact{Title: "Time Zone", Value: tz})
	} else if c.Timeout > 0 {
		out = append(out, fact{Title: "Period", Value: words.Duration(c.Timeout)})
	}
	out = append(out,
		fact{Title: "Total Pings", Value: fmt.Sprint(c.NPings)},
		fact{Title: "Last Ping", Value: c.lastPingText()})
	if m.Held != "" && !m.maintenance() {
		out = append(out, fact{Title: "Maintenance", Long: true,
			Value: "Held by maintenance window " + m.Held + "; sent when it ended, since the check is still " + m.status() + "."})
	}
	if m.HeldByParent != "" {
		out = append(out, fact{Title: "Depends On", Long: true,
			Value: "Held while " + m.HeldByParent + ", which this check depends on, was down; sent now that it is not, since this check is still " + m.status() + "."})
	}
	if m.Flapped {
		out = append(out, fact{Title: "Flapping", Long: true,
			Value: "Held while the check was flapping; sent now that it has kept one state, since it is still " + m.status() + "."})
	}
	return out
}

// groupFacts lists a grouped message's checks, one fact each: when it
// changed, and why it went down or how long it was. Past maxGroupFacts
// the rest are counted.
func (m *Message) groupFacts() []fact {
	var out []fact
	for i, g := range m.Group {
		if i == maxGroupFacts {
			out = append(out, fact{Title: "And", Value: fmt.Sprintf("%d more", len(m.Group)-i)})
			break
		}
		one := Message{Up: m.Up, Time: g.At, Reason: g.Reason, Detail: g.Detail, Since: g.Since}
		v := "down at " + g.At.UTC().Format("15:04:05 UTC")
		if m.Up {
			v = "up at " + g.At.UTC().Format("15:04:05 UTC")
			if !g.Since.IsZero() && g.At.After(g.Since) {
				v += " (was down for " + words.Duration(g.At.Sub(g.Since)) + ")"
			}
		} else if r := one.reasonText(); r != "" {
			v += ": " + r
		}
		out = append(out, fact{Title: g.Name, Value: v, Long: true})
	}
	return out
}

// Groups reports whether notifications through a Channel of the kind may
// be grouped (storm control): not for incident trackers, which open and
// resolve one incident per check (and group alerts themselves), nor for a
// group Channel, which sends nothing itself.
func Groups(kind v1.ChannelKind) bool {
	k, ok := kinds[kind]
	if !ok || kind == v1.ChannelGroup {
		return false
	}
	_, tracks := k.(incidentTracker)
	return !tracks
}

// lastPingText describes the last ping that counted (a success or a
// failure) as the reference does: "Success, 10 minutes ago", "Exit status
// 3, 2 hours ago" or "Never".
func (c *CheckInfo) lastPingText() string {
	if c.LastPing.IsZero() {
		return "Never"
	}
	var kind string
	switch {
	case c.ExitStatus != nil && *c.ExitStatus > 0:
		kind = fmt.Sprintf("Exit status %d", *c.ExitStatus)
	case c.LastPingType == v1.PingFail:
		kind = "Failure"
	default:
		kind = "Success"
	}
	return kind + ", " + words.Relative(c.LastPing, now())
}

// bodyExcerpt is the last ping body as text without trailing white space,
// cut to at most max bytes on a character boundary with "[truncated]"
// appended when it was cut; "" when there is no body or it is blank.
func (c *CheckInfo) bodyExcerpt(max int) string {
	body := strings.TrimRightFunc(strings.ToValidUTF8(string(c.LastPingBody), "\uFFFD"), unicode.IsSpace)
	if strings.TrimSpace(body) == "" {
		return ""
	}
	s, cut := words.Cut(body, max)
	if cut {
		s += "\n[truncated]"
	}
	return s
}
