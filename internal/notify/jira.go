package notify

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelJira, jiraKind{}) }

// jiraKind tracks a down as a Jira issue (Jira Software, Work Management or
// Service Management), through Jira's REST API version 2
// (https://developer.atlassian.com/cloud/jira/platform/rest/v2/, and the
// Data Center's /rest/api/2). Version 2 because Jira Cloud and Data Center
// both serve it, and it takes a description or a comment as one string of
// Jira's wiki markup, where Cloud's version 3 wants an Atlassian Document
// Format tree that Data Center does not read: one request body for both.
//
// The Channel's credentials say which Jira it is: an Atlassian account's
// email and API token (credentialsSecretRef, sent as basic auth) work only
// on Jira Cloud, a personal access token (tokenSecretRef, sent as a bearer
// token) only on Data Center. That matters for one request, the search:
// Cloud removed /rest/api/2/search in 2025 for /rest/api/2/search/jql,
// which Data Center does not have.
//
// Vigil keeps no state, so it finds its issue again by a label,
// vigil-<check uuid> ("vigil-test-<uuid>" for test messages, so a test
// never touches a real incident): a label is what Jira searches exactly
// and people leave alone. It asks for the issues of the project with that
// label whose status is not of the Done category, newest first (JQL
// project = "OPS" AND labels = "vigil-…" AND statusCategory != Done).
//
//   - Down: with no open issue of the check, it creates one in the
//     project, of the Channel's issue type (Task by default) and priority:
//     summary the short title ("Nightly backup is DOWN", or the Channel's
//     template subject), description the message in wiki markup (reason,
//     facts, last ping body, link to the check), labels the marker, the
//     Channel's labels and the check's tags (white space made "_", as Jira
//     labels hold none). With one open (a retry, a down after someone
//     reopened it), it comments on it instead.
//   - Re-alert and escalation: a comment on the open issue ("… is still
//     DOWN (for 2 hours)."); with none open (resolved by hand), a new issue.
//   - Up: each open issue of the check is moved through the Channel's
//     resolveTransition (when it names one) and then commented on ("… is
//     UP (was down for 2 hours)."); with none open, nothing is sent.
//     Without a resolveTransition the issue only gets the comment and
//     stays open, the check's, until people resolve it.
//   - Failure and maintenance notices are not sent (the check is not down).
//
// A transition the issue does not have, or one that leads to a status
// outside the Done category (the issue would stay open, and each up would
// move it again), is a permanent error that names the transitions the
// issue has, and nothing is changed. Jira's own error text (errorMessages
// and errors, a 400's "Field 'priority' cannot be set", a 404's "No
// project could be found with key 'OPS'") is what an error shows.
//
// Jira Cloud's search is eventually consistent: an issue created or
// moved a moment ago may be missing from it, or still shown open, for a
// few seconds. Downs, re-alerts and ups are minutes apart, so this shows
// only when a retry follows a lost answer closely: it may open a second
// issue (which the next up resolves with the first), and an up retried
// after its transition finds the issue already resolved when it reads it
// (see resolve).
type jiraKind struct{ tracker }

// Limits of Jira's fields, in UTF-16 code units (Jira counts Java
// characters), and how far Vigil looks for its issues.
const (
	// jiraSummaryMax is the limit of an issue's summary.
	jiraSummaryMax = 255
	// jiraTextMax is the default limit of a text field (a description, a
	// comment): jira.text.field.character.limit.
	jiraTextMax = 32767
	// jiraLabelMax is the limit of a label.
	jiraLabelMax = 255
	// jiraTagLabels bounds the check's tags put on an issue as labels.
	jiraTagLabels = 20
	// jiraSearchMax bounds the open issues of a check that a search
	// returns (more than one only after a lost answer or a reopening).
	jiraSearchMax = 20
	// jiraDefaultIssueType is the issue type when the Channel names none
	// (the CRD's default): every Jira Software and Work Management
	// project has it.
	jiraDefaultIssueType = "Task"
)

var (
	jiraProjectKey = regexp.MustCompile(`^[A-Z][A-Z0-9_]+$`)
	// jiraIssueKey is an issue key as Vigil puts it in a URL path.
	jiraIssueKey = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]*-[0-9]{1,18}$`)
	jiraIssueID  = regexp.MustCompile(`^[0-9]{1,18}$`)
)

func (jiraKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	s := spec.Jira
	if s == nil {
		return nil
	}
	var refs []v1.SecretKeyRef
	if c := s.CredentialsSecretRef; c != nil {
		refs = append(refs, v1.SecretKeyRef{Name: c.Name, Key: "email"}, v1.SecretKeyRef{Name: c.Name, Key: "apiToken"})
	}
	return append(refs, optional(s.TokenSecretRef)...)
}

// jiraSite is a Jira site's REST API, for one delivery.
type jiraSite struct {
	d *Delivery
	// api is <url>/rest/api/2.
	api    target
	header http.Header
	// cloud: Jira Cloud, whose search is /search/jql.
	cloud bool
}

// jiraIssue is what Vigil reads of an issue a search or GET returns.
type jiraIssue struct {
	ID     string `json:"id"`
	Key    string `json:"key"`
	Fields struct {
		Status *jiraStatus `json:"status"`
	} `json:"fields"`
}

type jiraStatus struct {
	Name           string `json:"name"`
	StatusCategory struct {
		Key string `json:"key"`
	} `json:"statusCategory"`
}

// done reports whether a status is of the Done category (whose key is
// "done" in every language and on every deployment).
func (s *jiraStatus) done() bool { return s != nil && s.StatusCategory.Key == "done" }

type jiraSearch struct {
	JQL        string   `json:"jql"`
	Fields     []string `json:"fields"`
	MaxResults int      `json:"maxResults"`
}

type jiraSearchResult struct {
	Issues []jiraIssue `json:"issues"`
}

type jiraNewIssue struct {
	Fields jiraIssueFields `json:"fields"`
}

type jiraIssueFields struct {
	Project     jiraKey   `json:"project"`
	IssueType   jiraName  `json:"issuetype"`
	Summary     string    `json:"summary"`
	Description string    `json:"description"`
	Labels      []string  `json:"labels"`
	Priority    *jiraName `json:"priority,omitempty"`
}

type jiraKey struct {
	Key string `json:"key"`
}

type jiraName struct {
	Name string `json:"name"`
}

type jiraComment struct {
	Body string `json:"body"`
}

type jiraTransitions struct {
	Transitions []jiraTransition `json:"transitions"`
}

type jiraTransition struct {
	ID   string      `json:"id"`
	Name string      `json:"name"`
	To   *jiraStatus `json:"to"`
}

type jiraDoTransition struct {
	Transition struct {
		ID string `json:"id"`
	} `json:"transition"`
}

func (jiraKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Jira
	if s == nil {
		return Permanent(errors.New("the channel has no jira settings"))
	}
	if !jiraProjectKey.MatchString(s.Project) {
		return Permanent(fmt.Errorf("the project key %q is not a Jira project key (an uppercase letter, then uppercase letters, digits or _)", s.Project))
	}
	site, err := jiraConnect(ctx, &d, s)
	if err != nil {
		return err
	}
	m := &d.Message
	marker := jiraLabel(incidentKey(m))
	open, err := site.openIssues(ctx, s.Project, marker)
	if err != nil {
		return err
	}
	text := jiraMessageText(m)
	if m.Up {
		for _, is := range open {
			if err := site.resolve(ctx, is, s.ResolveTransition, text); err != nil {
				return err
			}
		}
		return nil
	}
	if len(open) > 0 {
		return site.comment(ctx, open[0], text)
	}
	fields := jiraIssueFields{
		Project:     jiraKey{Key: s.Project},
		IssueType:   jiraName{Name: jiraDefaultIssueType},
		Summary:     ellipsizeUTF16(strings.Join(strings.Fields(m.shortTitle()), " "), jiraSummaryMax),
		Description: text,
		Labels:      jiraLabels(marker, s.Labels, m.Check.Tags),
	}
	if s.IssueType != "" {
		fields.IssueType.Name = s.IssueType
	}
	if s.Priority != "" {
		fields.Priority = &jiraName{Name: s.Priority}
	}
	return site.do(ctx, http.MethodPost, jiraNewIssue{Fields: fields}, nil, "issue")
}

// jiraConnect checks the site's URL and reads the credentials.
func jiraConnect(ctx context.Context, d *Delivery, s *v1.JiraChannel) (*jiraSite, error) {
	base, err := parseTarget(s.URL, false)
	if err != nil {
		return nil, err
	}
	base.u.RawQuery, base.u.Fragment = "", ""
	base.u = base.u.JoinPath("rest", "api", "2")
	site := &jiraSite{d: d, api: base, header: http.Header{}}
	site.header.Set("Accept", "application/json")
	switch {
	case (s.CredentialsSecretRef == nil) == (s.TokenSecretRef == nil):
		return nil, Permanent(errors.New("set exactly one of credentialsSecretRef (Jira Cloud) and tokenSecretRef (Jira Data Center)"))
	case s.TokenSecretRef != nil:
		return site, d.setBearer(ctx, site.header, s.TokenSecretRef, "the Jira personal access token")
	}
	refs := jiraKind{}.SecretRefs(&d.Channel.Spec)
	email, err := d.secret(ctx, refs[0])
	if err != nil {
		return nil, err
	}
	token, err := d.secret(ctx, refs[1])
	if err != nil {
		return nil, err
	}
	if !validHeaderValue(email) || strings.Contains(email, ":") || !validHeaderValue(token) {
		return nil, Permanent(errors.New("the Jira email or API token holds characters basic auth cannot carry"))
	}
	basic := base64.StdEncoding.EncodeToString([]byte(email + ":" + token))
	// A server that echoes the request in its error must not show the
	// encoded credentials either.
	d.redactDerived(basic)
	site.header.Set("Authorization", "Basic "+basic)
	site.cloud = true
	return site, nil
}

// openIssues returns the check's issues in the project whose status is
// not of the Done category, newest first.
func (j *jiraSite) openIssues(ctx context.Context, project, marker string) ([]jiraIssue, error) {
	path := "search"
	if j.cloud {
		path = "search/jql"
	}
	q := jiraSearch{
		JQL:        "project = " + jqlQuote(project) + " AND labels = " + jqlQuote(marker) + " AND statusCategory != Done ORDER BY created DESC",
		Fields:     []string{"status"},
		MaxResults: jiraSearchMax,
	}
	var res jiraSearchResult
	err := j.do(ctx, http.MethodPost, q, &res, path)
	if answerWasEmpty(err) {
		// An empty answer (a 204, or a proxy's) lists nothing.
		err, res.Issues = nil, nil
	}
	if err != nil {
		return nil, err
	}
	var open []jiraIssue
	for _, is := range res.Issues {
		// The search says so already; a status shown as done (the index
		// catching up) is left alone all the same.
		if is.ref() != "" && !is.Fields.Status.done() {
			open = append(open, is)
		}
	}
	return open, nil
}

// ref is how the issue is named in a URL path: its key, or its id when
// the answer holds no key Vigil can use; "" when neither.
func (is *jiraIssue) ref() string {
	switch {
	case jiraIssueKey.MatchString(is.Key):
		return is.Key
	case jiraIssueID.MatchString(is.ID):
		return is.ID
	}
	return ""
}

func (j *jiraSite) comment(ctx context.Context, is jiraIssue, text string) error {
	return j.do(ctx, http.MethodPost, jiraComment{Body: text}, nil, "issue", is.ref(), "comment")
}

// resolve moves an open issue of the check through the transition named
// (when there is one), then comments on it.
//
// The transition is looked up first, so an issue without it is left as
// it was. It is applied before the comment: a retry after a failure
// between the two finds the issue resolved and sends nothing, where the
// other order would comment twice. (A comment lost that way is the
// smaller harm: the issue says it was resolved.) A retry that comes
// before Cloud's search has caught up still sees the issue open; it then
// finds the transition gone (the issue is Done), reads the issue itself,
// and leaves it alone.
func (j *jiraSite) resolve(ctx context.Context, is jiraIssue, transition, text string) error {
	if transition != "" {
		id, err := j.transition(ctx, is, transition)
		if err != nil || id == "" {
			return err
		}
		var do jiraDoTransition
		do.Transition.ID = id
		if err := j.do(ctx, http.MethodPost, do, nil, "issue", is.ref(), "transitions"); err != nil {
			return err
		}
	}
	return j.comment(ctx, is, text)
}

// transition returns the id of the issue's transition named name (in any
// case). It returns "" and no error when the issue has none because it is
// resolved already, and a permanent error when the issue has none
// otherwise, or the transition would leave it open.
func (j *jiraSite) transition(ctx context.Context, is jiraIssue, name string) (string, error) {
	var list jiraTransitions
	if err := j.do(ctx, http.MethodGet, nil, &list, "issue", is.ref(), "transitions"); err != nil {
		return "", err
	}
	var names []string
	for _, t := range list.Transitions {
		if !strings.EqualFold(strings.TrimSpace(t.Name), strings.TrimSpace(name)) {
			names = append(names, strconv.Quote(words.Ellipsize(t.Name, 60)))
			continue
		}
		if t.To != nil && t.To.StatusCategory.Key != "" && !t.To.done() {
			return "", Permanent(fmt.Errorf("the transition %q of issue %s leads to %q, a status outside the Done category: the issue would stay open; name one that resolves it in resolveTransition",
				name, is.ref(), words.Ellipsize(t.To.Name, 60)))
		}
		if t.ID == "" {
			return "", Permanent(fmt.Errorf("the transition %q of issue %s has no id", name, is.ref()))
		}
		return t.ID, nil
	}
	// Resolved meanwhile (a person, or this delivery's earlier attempt
	// that the search does not show yet)? Then there is nothing to do.
	var now jiraIssue
	t := j.path("issue", is.ref())
	t.u.RawQuery = "fields=status"
	if err := j.d.do(ctx, request{method: http.MethodGet, target: t, header: j.header, into: &now, judge: jiraJudge}); err != nil {
		return "", err
	}
	if now.Fields.Status.done() {
		return "", nil
	}
	available := "none"
	if len(names) > 0 {
		if len(names) > 10 {
			names = append(names[:10], fmt.Sprintf("and %d more", len(names)-10))
		}
		available = strings.Join(names, ", ")
	}
	return "", Permanent(fmt.Errorf("issue %s has no transition %q (its transitions: %s); name one of them in resolveTransition",
		is.ref(), words.Ellipsize(name, 60), available))
}

// path is the API's URL for the path made of elems.
func (j *jiraSite) path(elems ...string) target {
	t := j.api
	u := *t.u
	t.u = u.JoinPath(elems...)
	return t
}

// do sends body (as JSON, when not nil) to the API path made of elems and
// reads a 2xx answer into into, when not nil.
func (j *jiraSite) do(ctx context.Context, method string, body, into any, elems ...string) error {
	return j.d.do(ctx, request{method: method, target: j.path(elems...), header: j.header, json: body, into: into, judge: jiraJudge})
}

// jiraJudge shows Jira's own words for an error answer (its errorMessages
// and the errors of each field) in place of the raw excerpt, and
// classifies it by its status as d.do does.
func jiraJudge(se *StatusError, excerpt string) error {
	if se.Code >= 400 {
		if msg := jiraErrorText(excerpt); msg != "" {
			se.Body = oneLine(msg, maxErrorBody)
		}
	}
	return byStatus(se)
}

// jiraErrorText reads Jira's error body, {"errorMessages": [...],
// "errors": {"field": "message"}}: the messages, then the fields' in the
// order of their names; "" when the body is not one.
func jiraErrorText(body string) string {
	var v struct {
		ErrorMessages []string          `json:"errorMessages"`
		Errors        map[string]string `json:"errors"`
	}
	if json.Unmarshal([]byte(body), &v) != nil {
		return ""
	}
	parts := append([]string(nil), v.ErrorMessages...)
	fields := make([]string, 0, len(v.Errors))
	for f := range v.Errors {
		fields = append(fields, f)
	}
	sort.Strings(fields)
	for _, f := range fields {
		parts = append(parts, f+": "+v.Errors[f])
	}
	return strings.Join(parts, "; ")
}

// jqlQuote makes s a JQL string literal.
func jqlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// jiraLabel makes s a Jira label: no white space (each run becomes "_"),
// at most jiraLabelMax UTF-16 code units.
func jiraLabel(s string) string {
	s = strings.Join(strings.Fields(s), "_")
	n := 0
	for i, r := range s {
		if n += utf16.RuneLen(r); n > jiraLabelMax {
			return s[:i]
		}
	}
	return s
}

// jiraLabels are an issue's labels: the marker first, then the Channel's
// and the check's tags (at most jiraTagLabels of them), made labels, each
// once.
func jiraLabels(marker string, channel, tags []string) []string {
	out := []string{marker}
	seen := map[string]bool{marker: true}
	add := func(l string) {
		if l = jiraLabel(l); l != "" && !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, l := range channel {
		add(l)
	}
	for i, t := range tags {
		if i == jiraTagLabels {
			break
		}
		add(t)
	}
	return out
}

// jiraMessageText is the message in Jira's wiki markup, within a text
// field's limit: the free-form parts (the description, the Channel's text,
// the last ping body) are cut until it fits, then the whole as a last
// resort.
func jiraMessageText(m *Message) string {
	return ellipsizeUTF16(chatFitted(m, jiraTextMax, utf16Len, jiraWiki), jiraTextMax)
}

// jiraWiki is the message in Jira's wiki markup, which REST API version 2
// takes for a description or a comment on Cloud and Data Center alike: the
// title in bold (linked to the check's page), the reason, the facts as a
// list, and the last ping body excerpt (at most bodyLimit bytes) in a
// noformat block (left out when it holds "{noformat}" itself). Every text
// from the check or the Channel is escaped, so none of it is read as
// markup: no link, image, macro or mention.
func jiraWiki(m *Message, bodyLimit int) string {
	var b strings.Builder
	title := jiraEscape(m.title())
	if u := m.Check.DetailsURL; u != "" {
		title = "[" + title + "|" + jiraLinkURL(u) + "]"
	}
	b.WriteString("*" + title + "*")
	if l := m.reasonLine(); l != "" {
		b.WriteString("\n\n" + jiraEscape(l))
	}
	b.WriteString("\n")
	for _, f := range m.facts() {
		// A line break would end the list item: a value's lines are
		// kept in it with Jira's forced line break.
		v := strings.Join(strings.Split(jiraEscape(f.Value), "\n"), ` \\ `)
		if f.Code {
			v = "{{" + v + "}}"
		}
		b.WriteString("\n* *" + jiraEscape(f.Title) + ":* " + v)
	}
	if body := m.Check.bodyExcerpt(bodyLimit); bodyLimit > 0 && body != "" && !strings.Contains(body, "{noformat}") {
		b.WriteString("\n\n*Last ping body:*\n{noformat}\n" + body + "\n{noformat}")
	}
	return b.String()
}

// jiraEscape escapes the characters Jira's wiki markup reads as markup
// with a backslash; a backslash itself (which would escape the next
// character, or make a line break of two) becomes its HTML entity. "\r"
// is dropped.
var jiraEscape = strings.NewReplacer(`\`, "&#92;", "\r", "",
	"*", `\*`, "_", `\_`, "?", `\?`, "-", `\-`, "+", `\+`, "^", `\^`, "~", `\~`,
	"{", `\{`, "}", `\}`, "[", `\[`, "]", `\]`, "!", `\!`, "|", `\|`, "#", `\#`).Replace

// jiraLinkURL makes u safe between "|" and "]" of a wiki link.
var jiraLinkURL = strings.NewReplacer("|", "%7C", "[", "%5B", "]", "%5D", " ", "%20", "\n", "", "\r", "").Replace
