package notify

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

const (
	jiraEmail    = "vigil-bot@example.com"
	jiraAPIToken = "ATATTjiraCloudApiTokenSecret0123456789"
	jiraPAT      = "NjIzjiraDataCenterPersonalTokenSecret42"
)

// jiraBasic is the Cloud credentials as basic auth sends them: a
// credential too, which no error may show.
var jiraBasic = base64.StdEncoding.EncodeToString([]byte(jiraEmail + ":" + jiraAPIToken))

var jiraSecrets = map[string]string{"jira/email": jiraEmail, "jira/apiToken": jiraAPIToken + "\n", "jira-pat/token": jiraPAT}

func init() {
	secrets := func(string) map[string]string { return jiraSecrets }
	addHTTPKind(httpKindCase{v1.ChannelJira, func(base string) *v1.Channel { return jiraCloudChannel(base, nil) }, secrets},
		jiraAPIToken, jiraBasic)
	addHTTPKind(httpKindCase{v1.ChannelJira, func(base string) *v1.Channel { return jiraDCChannel(base, nil) }, secrets},
		jiraPAT)
}

// jiraCloudChannel is a Jira Cloud Channel: email and API token, a label,
// a priority and the transition "Done".
func jiraCloudChannel(base string, change func(*v1.JiraChannel)) *v1.Channel {
	s := &v1.JiraChannel{URL: base, CredentialsSecretRef: &v1.LocalSecretRef{Name: "jira"}, Project: "OPS",
		Labels: []string{"ops"}, Priority: "High", ResolveTransition: "Done"}
	if change != nil {
		change(s)
	}
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelJira, Jira: s})
}

// jiraDCChannel is a Jira Data Center Channel: a personal access token,
// issues of type Bug, no transition.
func jiraDCChannel(base string, change func(*v1.JiraChannel)) *v1.Channel {
	s := &v1.JiraChannel{URL: base, TokenSecretRef: &v1.SecretKeyRef{Name: "jira-pat", Key: "token"}, Project: "OPS", IssueType: "Bug"}
	if change != nil {
		change(s)
	}
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelJira, Jira: s})
}

// fakeJira is a Jira site, Cloud or Data Center, with one project, OPS,
// whose workflow goes To Do → In Progress → Done (and back by Reopen). It
// checks each request as Jira does (authentication, the JSON bodies and
// the fields they may set, the JQL Vigil sends), keeps the issues, and
// records every request.
type fakeJira struct {
	*httptest.Server
	cloud  bool
	mu     sync.Mutex
	reqs   []captured
	issues []*fakeJiraIssue
	// fail, when set, may answer a request instead (status and body) and
	// is then cleared.
	fail func(r *http.Request) (int, string, bool)
	// staleSearch makes the search show every issue as it was created
	// (To Do), as an index that has not caught up.
	staleSearch bool
}

type fakeJiraIssue struct {
	ID, Key                                           string
	IssueType, Summary, Description, Priority, Status string
	Labels                                            []string
	Comments                                          []string
}

// The project's workflow: each status's category, and the transitions
// from each.
var (
	fakeJiraCategory = map[string]string{"To Do": "new", "In Progress": "indeterminate", "Done": "done"}
	fakeJiraFlows    = map[string][]fakeJiraFlow{
		"To Do":       {{"11", "Start Progress", "In Progress"}, {"31", "Done", "Done"}},
		"In Progress": {{"21", "Stop Progress", "To Do"}, {"31", "Done", "Done"}},
		"Done":        {{"41", "Reopen", "To Do"}},
	}
)

type fakeJiraFlow struct{ ID, Name, To string }

func newFakeJira(t *testing.T, cloud bool) *fakeJira {
	f := &fakeJira{cloud: cloud}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// add stores an issue of OPS as Jira would have it, and returns its key.
func (f *fakeJira) add(is fakeJiraIssue) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := len(f.issues) + 1
	is.ID, is.Key = strconv.Itoa(10000+n), fmt.Sprintf("OPS-%d", n)
	if is.Status == "" {
		is.Status = "To Do"
	}
	f.issues = append(f.issues, &is)
	return is.Key
}

func (f *fakeJira) issue(key string) fakeJiraIssue {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, is := range f.issues {
		if is.Key == key {
			c := *is
			c.Comments = slices.Clone(is.Comments)
			return c
		}
	}
	return fakeJiraIssue{}
}

func (f *fakeJira) takeRequests() []captured {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reqs
	f.reqs = nil
	return r
}

func (f *fakeJira) status(name string) map[string]any {
	return map[string]any{"name": name, "id": "1000" + fakeJiraCategory[name][:1],
		"statusCategory": map[string]any{"key": fakeJiraCategory[name], "name": name, "colorName": "blue-gray"}}
}

// errorAnswer is Jira's error body.
func jiraErrorAnswer(w http.ResponseWriter, status int, messages []string, fields map[string]string) {
	if messages == nil {
		messages = []string{}
	}
	if fields == nil {
		fields = map[string]string{}
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"errorMessages": messages, "errors": fields})
}

// strict decodes a request body as Jira does: a field it does not know
// is an error.
func jiraStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

var fakeJQL = regexp.MustCompile(`^project = "([A-Z][A-Z0-9_]+)" AND labels = "([^"\\ ]+)" AND statusCategory != Done ORDER BY created DESC$`)

func (f *fakeJira) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, captured{r.Method, r.URL.Path, r.URL.RawQuery, r.Host, r.Header.Clone(), b})
	if f.fail != nil {
		if status, body, ok := f.fail(r); ok {
			f.fail = nil
			w.WriteHeader(status)
			_, _ = io.WriteString(w, body)
			return
		}
	}
	want := "Bearer " + jiraPAT
	if f.cloud {
		want = "Basic " + jiraBasic
	}
	if r.Header.Get("Authorization") != want {
		jiraErrorAnswer(w, http.StatusUnauthorized, []string{"You are not authenticated. Authentication required to perform this operation."}, nil)
		return
	}
	if r.Method == http.MethodPost && r.Header.Get("Content-Type") != "application/json" {
		jiraErrorAnswer(w, http.StatusUnsupportedMediaType, []string{"Unsupported Media Type"}, nil)
		return
	}
	answer := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json;charset=UTF-8")
		w.WriteHeader(status)
		if v != nil {
			_ = json.NewEncoder(w).Encode(v)
		}
	}
	find := func(ref string) *fakeJiraIssue {
		for _, is := range f.issues {
			if is.Key == ref || is.ID == ref {
				return is
			}
		}
		return nil
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/jira/rest/api/2/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	parts := strings.Split(rest, "/")
	switch {
	case r.Method == http.MethodPost && rest == "search" && f.cloud:
		jiraErrorAnswer(w, http.StatusGone, []string{"The requested API has been removed. Please migrate to the /rest/api/3/search/jql API. A full migration guideline is available at https://developer.atlassian.com/changelog/#CHANGE-2046"}, nil)
	case r.Method == http.MethodPost && (rest == "search" && !f.cloud || rest == "search/jql" && f.cloud):
		var q struct {
			JQL        string   `json:"jql"`
			Fields     []string `json:"fields"`
			MaxResults int      `json:"maxResults"`
		}
		if err := jiraStrict(b, &q); err != nil {
			jiraErrorAnswer(w, http.StatusBadRequest, []string{"Invalid request payload. Refer to the REST API documentation and try again."}, nil)
			return
		}
		m := fakeJQL.FindStringSubmatch(q.JQL)
		if m == nil {
			jiraErrorAnswer(w, http.StatusBadRequest, []string{"Error in the JQL Query: the query " + strconv.Quote(q.JQL) + " is not the one expected."}, nil)
			return
		}
		if m[1] != "OPS" {
			jiraErrorAnswer(w, http.StatusBadRequest, []string{"The value '" + m[1] + "' does not exist for the field 'project'."}, nil)
			return
		}
		issues := []map[string]any{}
		for i := len(f.issues) - 1; i >= 0 && len(issues) < q.MaxResults; i-- {
			is := f.issues[i]
			status := is.Status
			if f.staleSearch {
				status = "To Do"
			}
			if !slices.Contains(is.Labels, m[2]) || fakeJiraCategory[status] == "done" {
				continue
			}
			out := map[string]any{"id": is.ID, "key": is.Key, "self": f.URL + "/jira/rest/api/2/issue/" + is.ID,
				"expand": "operations,versionedRepresentations,editmeta,changelog,renderedFields", "fields": map[string]any{}}
			if slices.Contains(q.Fields, "status") {
				out["fields"] = map[string]any{"status": f.status(status)}
			}
			issues = append(issues, out)
		}
		if f.cloud {
			answer(http.StatusOK, map[string]any{"issues": issues, "isLast": true})
		} else {
			answer(http.StatusOK, map[string]any{"expand": "schema,names", "startAt": 0, "maxResults": q.MaxResults, "total": len(issues), "issues": issues})
		}
	case r.Method == http.MethodPost && rest == "issue":
		var in struct {
			Fields struct {
				Project     struct{ Key string }   `json:"project"`
				IssueType   struct{ Name string }  `json:"issuetype"`
				Summary     string                 `json:"summary"`
				Description string                 `json:"description"`
				Labels      []string               `json:"labels"`
				Priority    *struct{ Name string } `json:"priority"`
			} `json:"fields"`
		}
		if err := jiraStrict(b, &in); err != nil {
			jiraErrorAnswer(w, http.StatusBadRequest, []string{err.Error()}, nil)
			return
		}
		p := in.Fields
		problems := map[string]string{}
		if p.Project.Key != "OPS" {
			problems["project"] = "valid project is required"
		}
		if !slices.Contains([]string{"Task", "Bug", "Incident"}, p.IssueType.Name) {
			problems["issuetype"] = "Specify a valid issue type"
		}
		switch {
		case strings.TrimSpace(p.Summary) == "":
			problems["summary"] = "You must specify a summary of the issue."
		case strings.ContainsAny(p.Summary, "\r\n"):
			problems["summary"] = "The summary is invalid because it contains newline characters."
		case utf16Len(p.Summary) > jiraSummaryMax:
			problems["summary"] = "Summary must be less than 255 characters."
		}
		if utf16Len(p.Description) > jiraTextMax {
			problems["description"] = "The entered text is too long. It exceeds the allowed limit of 32,767 characters."
		}
		for _, l := range p.Labels {
			if l == "" || strings.ContainsAny(l, " \t\n") || utf16Len(l) > jiraLabelMax {
				problems["labels"] = "The label '" + l + "' contains spaces which is invalid."
			}
		}
		if p.Priority != nil && !slices.Contains([]string{"Highest", "High", "Medium", "Low", "Lowest"}, p.Priority.Name) {
			problems["priority"] = "Specify the Priority (id or name) in the string format"
		}
		if len(problems) > 0 {
			jiraErrorAnswer(w, http.StatusBadRequest, nil, problems)
			return
		}
		n := len(f.issues) + 1
		is := &fakeJiraIssue{ID: strconv.Itoa(10000 + n), Key: fmt.Sprintf("OPS-%d", n), IssueType: p.IssueType.Name,
			Summary: p.Summary, Description: p.Description, Labels: p.Labels, Status: "To Do"}
		if p.Priority != nil {
			is.Priority = p.Priority.Name
		} else {
			is.Priority = "Medium"
		}
		f.issues = append(f.issues, is)
		answer(http.StatusCreated, map[string]any{"id": is.ID, "key": is.Key, "self": f.URL + "/jira/rest/api/2/issue/" + is.ID})
	case parts[0] == "issue" && len(parts) >= 2 && find(parts[1]) == nil:
		jiraErrorAnswer(w, http.StatusNotFound, []string{"Issue does not exist or you do not have permission to see it."}, nil)
	case r.Method == http.MethodGet && len(parts) == 2 && parts[0] == "issue":
		is := find(parts[1])
		if r.URL.Query().Get("fields") != "status" {
			jiraErrorAnswer(w, http.StatusBadRequest, []string{"the test server serves fields=status only"}, nil)
			return
		}
		answer(http.StatusOK, map[string]any{"id": is.ID, "key": is.Key, "fields": map[string]any{"status": f.status(is.Status)}})
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "issue" && parts[2] == "comment":
		is := find(parts[1])
		var in struct {
			Body string `json:"body"`
		}
		if err := jiraStrict(b, &in); err != nil || strings.TrimSpace(in.Body) == "" {
			jiraErrorAnswer(w, http.StatusBadRequest, nil, map[string]string{"comment": "Comment body can not be empty!"})
			return
		}
		if utf16Len(in.Body) > jiraTextMax {
			jiraErrorAnswer(w, http.StatusBadRequest, nil, map[string]string{"comment": "The entered text is too long."})
			return
		}
		is.Comments = append(is.Comments, in.Body)
		answer(http.StatusCreated, map[string]any{"id": strconv.Itoa(20000 + len(is.Comments)), "body": in.Body})
	case r.Method == http.MethodGet && len(parts) == 3 && parts[0] == "issue" && parts[2] == "transitions":
		is := find(parts[1])
		list := []map[string]any{}
		for _, fl := range fakeJiraFlows[is.Status] {
			list = append(list, map[string]any{"id": fl.ID, "name": fl.Name, "hasScreen": false, "isGlobal": false,
				"to": f.status(fl.To)})
		}
		answer(http.StatusOK, map[string]any{"expand": "transitions", "transitions": list})
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "issue" && parts[2] == "transitions":
		is := find(parts[1])
		var in struct {
			Transition struct {
				ID string `json:"id"`
			} `json:"transition"`
		}
		if err := jiraStrict(b, &in); err != nil {
			jiraErrorAnswer(w, http.StatusBadRequest, []string{err.Error()}, nil)
			return
		}
		for _, fl := range fakeJiraFlows[is.Status] {
			if fl.ID == in.Transition.ID {
				is.Status = fl.To
				answer(http.StatusNoContent, nil)
				return
			}
		}
		jiraErrorAnswer(w, http.StatusBadRequest, []string{"Transition id '" + in.Transition.ID + "' is not valid for this issue."}, nil)
	default:
		jiraErrorAnswer(w, http.StatusNotFound, []string{"null for uri: " + r.URL.String()}, nil)
	}
}

// The documented request bodies.
type (
	jiraWireSearch struct {
		JQL        string   `json:"jql"`
		Fields     []string `json:"fields"`
		MaxResults int      `json:"maxResults"`
	}
	jiraWireName  struct{ Name string }
	jiraWireIssue struct {
		Fields struct {
			Project struct {
				Key string `json:"key"`
			} `json:"project"`
			IssueType   jiraWireName  `json:"issuetype"`
			Summary     string        `json:"summary"`
			Description string        `json:"description"`
			Labels      []string      `json:"labels"`
			Priority    *jiraWireName `json:"priority"`
		} `json:"fields"`
	}
	jiraWireComment struct {
		Body string `json:"body"`
	}
	jiraWireTransition struct {
		Transition struct {
			ID string `json:"id"`
		} `json:"transition"`
	}
)

// checkJiraRequests asserts the requests in order ("METHOD path?query",
// the path after /jira/rest/api/2), and the headers every one carries.
func checkJiraRequests(t *testing.T, step string, cloud bool, got []captured, want ...string) {
	t.Helper()
	auth := "Bearer " + jiraPAT
	if cloud {
		auth = "Basic " + jiraBasic
	}
	var lines []string
	for _, r := range got {
		line := r.Method + " " + strings.TrimPrefix(r.Path, "/jira/rest/api/2")
		if r.RawQuery != "" {
			line += "?" + r.RawQuery
		}
		lines = append(lines, line)
		checkHeader(t, r.Header, "Authorization", auth)
		checkHeader(t, r.Header, "Accept", "application/json")
		checkUserAgent(t, r.Header)
		wantType := "application/json"
		if r.Method == http.MethodGet {
			wantType = ""
		}
		checkHeader(t, r.Header, "Content-Type", wantType)
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("%s: requests\n  %s\nwant\n  %s", step, strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}
}

const (
	jiraSearchCloud = "POST /search/jql"
	jiraSearchDC    = "POST /search"
	jiraDownText    = "*[“Nightly backup” is DOWN.|https://vigil.example.com/checks/" + fixtureUUID + "]*\n\n" +
		"Reason: success signal did not arrive on time, grace time passed.\n\n" +
		"* *Description:* Backs up the orders database.\n* *Namespace:* team\\-a\n* *Tags:* {{prod db}}\n" +
		"* *Period:* 1 day\n* *Total Pings:* 42\n* *Last Ping:* Success, 10 minutes ago\n\n" +
		"*Last ping body:*\n{noformat}\nbackup done: 3 files\n{noformat}"
)

// checkJiraSearch asserts a search's body: the check's label in the
// project, open issues only, newest first, the status field.
func checkJiraSearch(t *testing.T, r captured, label string) {
	t.Helper()
	var q jiraWireSearch
	decodeStrict(t, r.Body, &q)
	want := `project = "OPS" AND labels = "` + label + `" AND statusCategory != Done ORDER BY created DESC`
	if q.JQL != want || !slices.Equal(q.Fields, []string{"status"}) || q.MaxResults != jiraSearchMax {
		t.Errorf("search %+v, want JQL %s", q, want)
	}
}

// TestJiraCloudStory runs a check's story against a fake Jira Cloud: a down
// creates an issue, a second down and a re-alert comment on it, the up
// moves it through Done and comments, the next up finds nothing, the next
// down creates a new issue, and a test message one of its own.
func TestJiraCloudStory(t *testing.T) {
	j := newFakeJira(t, true)
	other := j.add(fakeJiraIssue{Summary: "another check", Labels: []string{"vigil-0000"}})
	ch := jiraCloudChannel(j.URL+"/jira/", nil)
	label := "vigil-" + fixtureUUID

	mustSend(t, ch, downMessage(), jiraSecrets)
	reqs := j.takeRequests()
	checkJiraRequests(t, "down", true, reqs, jiraSearchCloud, "POST /issue")
	checkJiraSearch(t, reqs[0], label)
	var created jiraWireIssue
	decodeStrict(t, reqs[1].Body, &created)
	c := created.Fields
	if c.Project.Key != "OPS" || c.IssueType.Name != "Task" || c.Summary != "Nightly backup is DOWN" ||
		c.Priority == nil || c.Priority.Name != "High" || !slices.Equal(c.Labels, []string{label, "ops", "prod", "db"}) {
		t.Errorf("created %+v", c)
	}
	if c.Description != jiraDownText {
		t.Errorf("description\n%s\nwant\n%s", c.Description, jiraDownText)
	}
	const issue = "OPS-2"

	// The same down again (a retry after a lost answer): a comment.
	mustSend(t, ch, downMessage(), jiraSecrets)
	reqs = j.takeRequests()
	checkJiraRequests(t, "down again", true, reqs, jiraSearchCloud, "POST /issue/"+issue+"/comment")
	var comment jiraWireComment
	decodeStrict(t, reqs[1].Body, &comment)
	if comment.Body != jiraDownText {
		t.Errorf("comment %q", comment.Body)
	}

	mustSend(t, ch, realertMessage(), jiraSecrets)
	reqs = j.takeRequests()
	checkJiraRequests(t, "re-alert", true, reqs, jiraSearchCloud, "POST /issue/"+issue+"/comment")
	decodeStrict(t, reqs[1].Body, &comment)
	if !strings.HasPrefix(comment.Body, "*[“Nightly backup” is still DOWN (for 2 hours).|https://vigil.example.com/checks/") {
		t.Errorf("re-alert comment %q", comment.Body)
	}

	// Up: the transition named Done is looked up, applied, then the
	// comment.
	up := upMessage()
	up.Since = fixedFlip.Add(-2 * time.Hour)
	mustSend(t, ch, up, jiraSecrets)
	reqs = j.takeRequests()
	checkJiraRequests(t, "up", true, reqs, jiraSearchCloud, "GET /issue/"+issue+"/transitions",
		"POST /issue/"+issue+"/transitions", "POST /issue/"+issue+"/comment")
	var tr jiraWireTransition
	decodeStrict(t, reqs[2].Body, &tr)
	if tr.Transition.ID != "31" {
		t.Errorf("transition %+v, want Done (31)", tr)
	}
	decodeStrict(t, reqs[3].Body, &comment)
	if !strings.HasPrefix(comment.Body, "*[“Nightly backup” is UP (was down for 2 hours).|https://vigil.example.com/checks/"+fixtureUUID+"]*\n\n* *Description:*") {
		t.Errorf("up comment %q", comment.Body)
	}

	// Resolved, the issue is no longer found: an up sends nothing more,
	// the next down creates a new issue.
	mustSend(t, ch, upMessage(), jiraSecrets)
	checkJiraRequests(t, "up again", true, j.takeRequests(), jiraSearchCloud)
	mustSend(t, ch, downMessage(), jiraSecrets)
	checkJiraRequests(t, "down again after the up", true, j.takeRequests(), jiraSearchCloud, "POST /issue")

	test := downMessage()
	test.Test = true
	mustSend(t, ch, test, jiraSecrets)
	reqs = j.takeRequests()
	checkJiraRequests(t, "test", true, reqs, jiraSearchCloud, "POST /issue")
	checkJiraSearch(t, reqs[0], "vigil-test-"+fixtureUUID)
	decodeStrict(t, reqs[1].Body, &created)
	if created.Fields.Summary != "[Test] Nightly backup is DOWN" || created.Fields.Labels[0] != "vigil-test-"+fixtureUUID {
		t.Errorf("test issue %+v", created.Fields)
	}

	if is := j.issue(issue); is.Status != "Done" || len(is.Comments) != 3 || is.Priority != "High" {
		t.Errorf("the check's issue ends %+v", is)
	}
	if is := j.issue(other); is.Status != "To Do" || len(is.Comments) != 0 {
		t.Errorf("another check's issue was touched: %+v", is)
	}
	if is := j.issue("OPS-3"); is.Status != "To Do" || len(is.Comments) != 0 {
		t.Errorf("the new issue %+v", is)
	}
}

// TestJiraDataCenter: a personal access token as a bearer token, the
// Data Center's search, the Channel's issue type and no priority; without
// a resolveTransition an up only comments, and the issue stays the
// check's: the next down comments on it too.
func TestJiraDataCenter(t *testing.T) {
	j := newFakeJira(t, false)
	ch := jiraDCChannel(j.URL+"/jira", nil)

	mustSend(t, ch, downMessage(), jiraSecrets)
	reqs := j.takeRequests()
	checkJiraRequests(t, "down", false, reqs, jiraSearchDC, "POST /issue")
	checkJiraSearch(t, reqs[0], "vigil-"+fixtureUUID)
	var created jiraWireIssue
	decodeStrict(t, reqs[1].Body, &created)
	if c := created.Fields; c.IssueType.Name != "Bug" || c.Priority != nil || !slices.Equal(c.Labels, []string{"vigil-" + fixtureUUID, "prod", "db"}) ||
		c.Description != jiraDownText {
		t.Errorf("created %+v", c)
	}
	if !bytes.Contains(reqs[1].Body, []byte(`"labels":[`)) || bytes.Contains(reqs[1].Body, []byte(`"priority"`)) {
		t.Errorf("body %s", reqs[1].Body)
	}

	mustSend(t, ch, upMessage(), jiraSecrets)
	checkJiraRequests(t, "up", false, j.takeRequests(), jiraSearchDC, "POST /issue/OPS-1/comment")
	mustSend(t, ch, downMessage(), jiraSecrets)
	checkJiraRequests(t, "down", false, j.takeRequests(), jiraSearchDC, "POST /issue/OPS-1/comment")
	if is := j.issue("OPS-1"); is.Status != "To Do" || len(is.Comments) != 2 || !strings.Contains(is.Comments[0], "is UP.") {
		t.Errorf("issue %+v", is)
	}
}

// TestJiraUpResolvesEveryOpenIssue: an up moves each open issue of the
// check (two, after a lost answer), newest first, in any case of the
// transition's name, and leaves a resolved one and another project's
// alone.
func TestJiraUpResolvesEveryOpenIssue(t *testing.T) {
	j := newFakeJira(t, true)
	label := "vigil-" + fixtureUUID
	a := j.add(fakeJiraIssue{Summary: "a", Labels: []string{label}, Status: "In Progress"})
	done := j.add(fakeJiraIssue{Summary: "resolved", Labels: []string{label}, Status: "Done"})
	b := j.add(fakeJiraIssue{Summary: "b", Labels: []string{label}})
	mustSend(t, jiraCloudChannel(j.URL+"/jira", func(s *v1.JiraChannel) { s.ResolveTransition = " dONE" }), upMessage(), jiraSecrets)
	checkJiraRequests(t, "up", true, j.takeRequests(), jiraSearchCloud,
		"GET /issue/"+b+"/transitions", "POST /issue/"+b+"/transitions", "POST /issue/"+b+"/comment",
		"GET /issue/"+a+"/transitions", "POST /issue/"+a+"/transitions", "POST /issue/"+a+"/comment")
	for _, k := range []string{a, b} {
		if is := j.issue(k); is.Status != "Done" || len(is.Comments) != 1 {
			t.Errorf("issue %s %+v", k, is)
		}
	}
	if is := j.issue(done); len(is.Comments) != 0 {
		t.Errorf("the resolved issue was commented on: %+v", is)
	}
}

// TestJiraTransitionErrors: a transition the issue does not have, or one
// that leaves it open, is a permanent error naming the issue's
// transitions, and nothing is changed.
func TestJiraTransitionErrors(t *testing.T) {
	for _, tc := range []struct {
		name, transition, contains string
	}{
		{"unknown", "Close Issue", `issue OPS-1 has no transition "Close Issue" (its transitions: "Start Progress", "Done"); name one of them in resolveTransition`},
		{"leaves it open", "start progress", `the transition "start progress" of issue OPS-1 leads to "In Progress", a status outside the Done category`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newFakeJira(t, true)
			key := j.add(fakeJiraIssue{Summary: "mine", Labels: []string{"vigil-" + fixtureUUID}})
			err := send(t, jiraCloudChannel(j.URL+"/jira", func(s *v1.JiraChannel) { s.ResolveTransition = tc.transition }), upMessage(), jiraSecrets)
			if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), tc.contains) || !strings.HasPrefix(err.Error(), "jira: ") {
				t.Errorf("Send = %v, want a permanent error containing %s", err, tc.contains)
			}
			reqs := j.takeRequests()
			if last := reqs[len(reqs)-1]; last.Method != http.MethodGet {
				t.Errorf("requests end with %s %s: something was changed", last.Method, last.Path)
			}
			if is := j.issue(key); is.Status != "To Do" || len(is.Comments) != 0 {
				t.Errorf("issue %+v", is)
			}
		})
	}
}

// TestJiraUpRetryNeverCommentsTwice: when the transition fails, nothing
// was commented yet and the retry does both; when the comment fails after
// the transition, the retry finds the issue resolved and sends nothing;
// when the search still shows the issue open (Cloud's index catching up),
// the retry reads the issue, finds it Done, and sends nothing either.
func TestJiraUpRetryNeverCommentsTwice(t *testing.T) {
	t.Run("transition fails", func(t *testing.T) {
		j := newFakeJira(t, false)
		key := j.add(fakeJiraIssue{Summary: "mine", Labels: []string{"vigil-" + fixtureUUID}})
		ch := jiraDCChannel(j.URL+"/jira", func(s *v1.JiraChannel) { s.ResolveTransition = "Done" })
		j.fail = func(r *http.Request) (int, string, bool) {
			return http.StatusInternalServerError, `{"errorMessages":["Internal server error"],"errors":{}}`,
				r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/transitions")
		}
		if err := send(t, ch, upMessage(), jiraSecrets); err == nil || IsPermanent(err) {
			t.Fatalf("Send = %v, want a retryable error", err)
		}
		checkJiraRequests(t, "up", false, j.takeRequests(), jiraSearchDC, "GET /issue/"+key+"/transitions", "POST /issue/"+key+"/transitions")
		mustSend(t, ch, upMessage(), jiraSecrets)
		checkJiraRequests(t, "retry", false, j.takeRequests(), jiraSearchDC,
			"GET /issue/"+key+"/transitions", "POST /issue/"+key+"/transitions", "POST /issue/"+key+"/comment")
		if is := j.issue(key); is.Status != "Done" || len(is.Comments) != 1 {
			t.Errorf("issue %+v", is)
		}
	})
	for _, stale := range []bool{false, true} {
		t.Run(fmt.Sprintf("stale search %v", stale), func(t *testing.T) {
			j := newFakeJira(t, true)
			key := j.add(fakeJiraIssue{Summary: "mine", Labels: []string{"vigil-" + fixtureUUID}})
			ch := jiraCloudChannel(j.URL+"/jira", nil)
			j.fail = func(r *http.Request) (int, string, bool) {
				return http.StatusServiceUnavailable, "upstream connect error", strings.HasSuffix(r.URL.Path, "/comment")
			}
			err := send(t, ch, upMessage(), jiraSecrets)
			var se *StatusError
			if !errors.As(err, &se) || se.Code != http.StatusServiceUnavailable || IsPermanent(err) {
				t.Fatalf("Send = %v, want a retryable 503", err)
			}
			checkJiraRequests(t, "up", true, j.takeRequests(), jiraSearchCloud,
				"GET /issue/"+key+"/transitions", "POST /issue/"+key+"/transitions", "POST /issue/"+key+"/comment")

			j.staleSearch = stale
			mustSend(t, ch, upMessage(), jiraSecrets)
			want := []string{jiraSearchCloud}
			if stale {
				want = append(want, "GET /issue/"+key+"/transitions", "GET /issue/"+key+"?fields=status")
			}
			checkJiraRequests(t, "retry", true, j.takeRequests(), want...)
			if is := j.issue(key); is.Status != "Done" || len(is.Comments) != 0 {
				t.Errorf("issue %+v", is)
			}
		})
	}
}

// TestJiraErrors: Jira's answers classified, with Jira's own words in the
// error and no credential: 401 and 404 and a 400 naming the fields are
// permanent, 429 is retried after Retry-After, 5xx is retried.
func TestJiraErrors(t *testing.T) {
	t.Run("wrong credentials", func(t *testing.T) {
		for _, cloud := range []bool{true, false} {
			j := newFakeJira(t, cloud)
			secrets := map[string]string{"jira/email": jiraEmail, "jira/apiToken": "ATATTwrongTokenSecret987", "jira-pat/token": "wrongPersonalToken654"}
			ch := jiraDCChannel(j.URL+"/jira", nil)
			if cloud {
				ch = jiraCloudChannel(j.URL+"/jira", nil)
			}
			err := send(t, ch, downMessage(), secrets)
			var se *StatusError
			if !errors.As(err, &se) || se.Code != http.StatusUnauthorized || !IsPermanent(err) ||
				se.Body != "You are not authenticated. Authentication required to perform this operation." {
				t.Errorf("cloud %v: Send = %v, want a permanent 401 with Jira's message", cloud, err)
			}
			for _, secret := range []string{"ATATTwrongTokenSecret987", "wrongPersonalToken654",
				base64.StdEncoding.EncodeToString([]byte(jiraEmail + ":ATATTwrongTokenSecret987"))} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %v shows a credential", err)
				}
			}
			if n := len(j.takeRequests()); n != 1 {
				t.Errorf("%d requests after a 401", n)
			}
		}
	})
	t.Run("fields Jira refuses", func(t *testing.T) {
		j := newFakeJira(t, true)
		err := send(t, jiraCloudChannel(j.URL+"/jira", func(s *v1.JiraChannel) { s.IssueType, s.Priority = "Epic", "Urgent" }), downMessage(), jiraSecrets)
		want := "jira: POST " + j.URL + "/jira/rest/api/2/issue: HTTP 400 Bad Request: issuetype: Specify a valid issue type; priority: Specify the Priority (id or name) in the string format"
		if err == nil || !IsPermanent(err) || err.Error() != want {
			t.Errorf("Send = %v\nwant %s", err, want)
		}
	})
	t.Run("a project that does not exist", func(t *testing.T) {
		j := newFakeJira(t, false)
		err := send(t, jiraDCChannel(j.URL+"/jira", func(s *v1.JiraChannel) { s.Project = "NOPE" }), downMessage(), jiraSecrets)
		if err == nil || !IsPermanent(err) || !strings.HasSuffix(err.Error(), ": HTTP 400 Bad Request: The value 'NOPE' does not exist for the field 'project'.") {
			t.Errorf("Send = %v", err)
		}
	})
	for _, tc := range []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		permanent  bool
		retryAfter time.Duration
		shows      string
	}{
		{"429 with Retry-After", http.StatusTooManyRequests, map[string]string{"Retry-After": "13", "X-RateLimit-Reason": "jira-quota-tenant-based"},
			`{"errorMessages":["Rate limit exceeded."],"errors":{}}`, false, 13 * time.Second, "HTTP 429 Too Many Requests: Rate limit exceeded."},
		{"503", http.StatusServiceUnavailable, nil, "<html><body>Service Unavailable</body></html>", false, 0,
			"HTTP 503 Service Unavailable: <html><body>Service Unavailable</body></html>"},
		{"403", http.StatusForbidden, nil, `{"errorMessages":["You do not have permission to create issues in this project."],"errors":{}}`, true, 0,
			"HTTP 403 Forbidden: You do not have permission to create issues in this project."},
		{"404 of a Jira elsewhere", http.StatusNotFound, nil, `{"errorMessages":["null for uri: https://jira.example.com/rest/api/2/search/jql"]}`, true, 0,
			"HTTP 404 Not Found: null for uri: https://jira.example.com/rest/api/2/search/jql"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, tc.status, tc.body)
			for k, v := range tc.header {
				srv.header.Set(k, v)
			}
			err := send(t, jiraCloudChannel(srv.URL, nil), downMessage(), jiraSecrets)
			var se *StatusError
			if !errors.As(err, &se) || se.Code != tc.status || IsPermanent(err) != tc.permanent || se.RetryAfter != tc.retryAfter {
				t.Fatalf("Send = %v (%+v), want %d permanent %v retry-after %s", err, se, tc.status, tc.permanent, tc.retryAfter)
			}
			if want := "jira: POST " + srv.URL + "/rest/api/2/search/jql: " + tc.shows; err.Error() != want {
				t.Errorf("error %q\nwant  %q", err, want)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests", n)
			}
		})
	}
}

// TestJiraLabelsAndLimits: the check's tags become labels without white
// space and within 255 characters, each once, from the first 20; the summary
// is one line of at most 255 characters and the description fits Jira's
// 32,767, the body excerpt and the description cut first.
func TestJiraLabelsAndLimits(t *testing.T) {
	j := newFakeJira(t, true)
	m := downMessage()
	m.Check.Name = "Nightly\nbackup " + strings.Repeat("é", 300)
	m.Check.Desc = strings.Repeat("😀", 40000)
	m.Check.Tags = []string{"prod", "ops", "two\u00a0words", "tab\there", strings.Repeat("t", 300), "prod"}
	for i := range 25 {
		m.Check.Tags = append(m.Check.Tags, fmt.Sprintf("t%d", i))
	}
	ch := jiraCloudChannel(j.URL+"/jira", func(s *v1.JiraChannel) { s.Labels = []string{"ops", "on-call"} })
	mustSend(t, ch, m, jiraSecrets)
	reqs := j.takeRequests()
	checkJiraRequests(t, "down", true, reqs, jiraSearchCloud, "POST /issue")
	var created jiraWireIssue
	decodeStrict(t, reqs[1].Body, &created)
	c := created.Fields
	want := []string{"vigil-" + fixtureUUID, "ops", "on-call", "prod", "two_words", "tab_here", strings.Repeat("t", 255)}
	for i := range 14 { // the first 20 tags: the 6 above (two of them labels already), 14 more
		want = append(want, fmt.Sprintf("t%d", i))
	}
	if !slices.Equal(c.Labels, want) {
		t.Errorf("labels %q\nwant   %q", c.Labels, want)
	}
	if n := utf16Len(c.Summary); n != jiraSummaryMax || !strings.HasPrefix(c.Summary, "Nightly backup éé") || !strings.HasSuffix(c.Summary, "…") {
		t.Errorf("summary of %d characters: %q", n, c.Summary)
	}
	if n := utf16Len(c.Description); n > jiraTextMax || !strings.Contains(c.Description, "* *Namespace:* team\\-a") ||
		!strings.Contains(c.Description, "{noformat}\nbackup done") {
		t.Errorf("description of %d characters", n)
	}
	if is := j.issue("OPS-1"); is.Summary != c.Summary {
		t.Errorf("the issue was not created: %+v", is)
	}
}

// TestJiraWikiEscaping: what a check's author wrote is never markup in
// Jira: no link, image, macro, mention or list; its lines stay in their
// fact; a body holding {noformat} is left out rather than break out of
// its block.
func TestJiraWikiEscaping(t *testing.T) {
	m := downMessage()
	m.Check.Name = `[evil|https://evil.example] !x.png! {code} [~admin] *b* C:\temp`
	m.Check.Desc = "line one\n# not a list\r\n- nor this"
	m.Check.LastPingBody = []byte("{noformat}\nh1. escape")
	m.Check.DetailsURL = "https://vigil.example.com/checks/x?a=[1]|b"
	got := jiraWiki(&m, chatBodyLimit)
	want := `*[“\[evil\|https://evil.example\] \!x.png\! \{code\} \[\~admin\] \*b\* C:&#92;temp” is DOWN.|https://vigil.example.com/checks/x?a=%5B1%5D%7Cb]*` + "\n\n" +
		"Reason: success signal did not arrive on time, grace time passed.\n\n" +
		`* *Description:* line one \\ \# not a list \\ \- nor this` + "\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("wiki\n%s\nwant it to start\n%s", got, want)
	}
	if strings.Contains(got, "noformat") || strings.Contains(got, "h1.") {
		t.Errorf("the body was not left out:\n%s", got)
	}
}

func TestJiraSettingsErrors(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"issues":[]}`)
	cloud := func(change func(*v1.JiraChannel)) *v1.JiraChannel { return jiraCloudChannel(srv.URL, change).Spec.Jira }
	for _, tc := range []struct {
		name      string
		spec      *v1.JiraChannel
		secrets   map[string]string
		permanent bool
		contains  string
	}{
		{"no settings", nil, jiraSecrets, true, "the channel has no jira settings"},
		{"both credentials", cloud(func(s *v1.JiraChannel) { s.TokenSecretRef = &v1.SecretKeyRef{Name: "jira-pat", Key: "token"} }),
			jiraSecrets, true, "set exactly one of credentialsSecretRef (Jira Cloud) and tokenSecretRef (Jira Data Center)"},
		{"no credentials", cloud(func(s *v1.JiraChannel) { s.CredentialsSecretRef = nil }), jiraSecrets, true, "set exactly one of"},
		{"project key in lowercase", cloud(func(s *v1.JiraChannel) { s.Project = "ops" }), jiraSecrets, true, `the project key "ops" is not a Jira project key`},
		{"JQL in the project key", cloud(func(s *v1.JiraChannel) { s.Project = `OPS" OR project = "X` }), jiraSecrets, true, "is not a Jira project key"},
		{"bad URL", cloud(func(s *v1.JiraChannel) { s.URL = "ftp://jira.example.com" }), jiraSecrets, true, "not an absolute"},
		{"no API token", cloud(nil), map[string]string{"jira/email": jiraEmail}, false, `Secret "jira" key "apiToken"`},
		{"colon in the email", cloud(nil), map[string]string{"jira/email": "a:b@example.com", "jira/apiToken": jiraAPIToken}, true, "characters basic auth cannot carry"},
		{"newline in the API token", cloud(nil), map[string]string{"jira/email": jiraEmail, "jira/apiToken": "a\nb"}, true, "characters basic auth cannot carry"},
		{"newline in the personal access token", jiraDCChannel(srv.URL, nil).Spec.Jira, map[string]string{"jira-pat/token": "a\nb"}, true,
			"the Jira personal access token contains control characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelJira, Jira: tc.spec}), downMessage(), tc.secrets)
			if err == nil || IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("Send = %v (permanent %v), want an error containing %q, permanent %v", err, IsPermanent(err), tc.contains, tc.permanent)
			}
		})
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	k, _ := Lookup(v1.ChannelJira)
	for _, tc := range []struct {
		spec v1.ChannelSpec
		want []v1.SecretKeyRef
	}{
		{jiraCloudChannel("", nil).Spec, []v1.SecretKeyRef{ref("jira", "email"), ref("jira", "apiToken")}},
		{jiraDCChannel("", nil).Spec, []v1.SecretKeyRef{ref("jira-pat", "token")}},
		{v1.ChannelSpec{Kind: v1.ChannelJira}, nil},
	} {
		if got := k.SecretRefs(&tc.spec); !slices.Equal(got, tc.want) {
			t.Errorf("SecretRefs = %v, want %v", got, tc.want)
		}
	}
}

// TestJiraSendsNoNotices: a tracker is sent no failure, maintenance nor
// SLA notice, and never a grouped message nor an acknowledgement.
func TestJiraSendsNoNotices(t *testing.T) {
	j := newFakeJira(t, true)
	ch := jiraCloudChannel(j.URL+"/jira", nil)
	for _, notice := range []monitor.Notice{monitor.NoticeFailure, monitor.NoticeMaintenanceStart, monitor.NoticeSLABreach} {
		m := downMessage()
		m.Notice = notice
		mustSend(t, ch, m, jiraSecrets)
	}
	if reqs := j.takeRequests(); len(reqs) != 0 {
		t.Errorf("%d requests for notices", len(reqs))
	}
	if Groups(v1.ChannelJira) || Acknowledges(v1.ChannelJira) {
		t.Error("jira is grouped or acknowledged")
	}
}
