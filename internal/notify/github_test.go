package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

const githubToken = "ghp_githubSecretToken0123456789abcdef"

func init() {
	addHTTPKind(httpKindCase{v1.ChannelGitHub,
		func(base string) *v1.Channel { return githubChannel(base, "vigil") },
		func(string) map[string]string { return map[string]string{"gh/token": githubToken} }},
		githubToken)
}

func githubChannel(base string, labels ...string) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelGitHub, GitHub: &v1.GitHubChannel{
		Repository: "acme/ops", TokenSecretRef: ref("gh", "token"), Labels: labels, URL: base}})
}

var githubSecrets = map[string]string{"gh/token": githubToken + "\n"}

// fakeGitHub is a GitHub Enterprise Server (<url>/api/v3) that keeps the
// issues of one repository, acme/ops, and records every request.
type fakeGitHub struct {
	*httptest.Server
	t      *testing.T
	mu     sync.Mutex
	reqs   []captured
	issues []*fakeIssue // issue n is issues[n-1]
	// dropLabels: the token's user has no push access, so GitHub drops
	// the labels of the issues it opens, silently.
	dropLabels bool
}

type fakeIssue struct {
	Number             int
	Title, Body        string
	Labels             []string
	State, StateReason string
	PullRequest        bool
	Comments           []string
}

const fakeGitHubIssues = "/api/v3/repos/acme/ops/issues"

func newFakeGitHub(t *testing.T) *fakeGitHub {
	f := &fakeGitHub{t: t}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

// add stores an issue as GitHub would have it, and returns its number.
func (f *fakeGitHub) add(is fakeIssue) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	is.Number = len(f.issues) + 1
	if is.State == "" {
		is.State = "open"
	}
	f.issues = append(f.issues, &is)
	return is.Number
}

func (f *fakeGitHub) issue(n int) fakeIssue {
	f.mu.Lock()
	defer f.mu.Unlock()
	return *f.issues[n-1]
}

// takeRequests returns the requests received since the last call.
func (f *fakeGitHub) takeRequests() []captured {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reqs
	f.reqs = nil
	return r
}

func (f *fakeGitHub) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, captured{r.Method, r.URL.Path, r.URL.RawQuery, r.Host, r.Header.Clone(), b})
	if r.Header.Get("Authorization") != "Bearer "+githubToken {
		http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, fakeGitHubIssues)
	if !ok {
		http.NotFound(w, r)
		return
	}
	answer := func(status int, v any) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	switch {
	case rest == "" && r.Method == http.MethodGet:
		answer(http.StatusOK, f.list(r))
	case rest == "" && r.Method == http.MethodPost:
		var in struct {
			Title  string   `json:"title"`
			Body   string   `json:"body"`
			Labels []string `json:"labels"`
		}
		if json.Unmarshal(b, &in) != nil || in.Title == "" {
			answer(http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
			return
		}
		is := &fakeIssue{Number: len(f.issues) + 1, Title: in.Title, Body: in.Body, Labels: in.Labels, State: "open"}
		if f.dropLabels {
			is.Labels = nil
		}
		f.issues = append(f.issues, is)
		answer(http.StatusCreated, f.wire(is))
	default:
		n, err := strconv.Atoi(parts[0])
		if err != nil || n < 1 || n > len(f.issues) {
			http.NotFound(w, r)
			return
		}
		is := f.issues[n-1]
		switch {
		case len(parts) == 2 && parts[1] == "comments" && r.Method == http.MethodPost:
			var in struct {
				Body string `json:"body"`
			}
			_ = json.Unmarshal(b, &in)
			is.Comments = append(is.Comments, in.Body)
			answer(http.StatusCreated, map[string]any{"id": 1000 + len(is.Comments), "body": in.Body})
		case len(parts) == 1 && r.Method == http.MethodPatch:
			var in struct {
				State       string `json:"state"`
				StateReason string `json:"state_reason"`
			}
			_ = json.Unmarshal(b, &in)
			is.State, is.StateReason = in.State, in.StateReason
			answer(http.StatusOK, f.wire(is))
		default:
			http.NotFound(w, r)
		}
	}
}

// list serves GET /issues as GitHub does: newest first, filtered by state
// and labels, paginated; pull requests included.
func (f *fakeGitHub) list(r *http.Request) []map[string]any {
	q := r.URL.Query()
	perPage, _ := strconv.Atoi(q.Get("per_page"))
	page, _ := strconv.Atoi(q.Get("page"))
	perPage, page = cmpOr(perPage, 30), cmpOr(page, 1)
	var out []map[string]any
	for i := len(f.issues) - 1; i >= 0; i-- {
		is := f.issues[i]
		if is.State != cmpOr(q.Get("state"), "open") {
			continue
		}
		if l := q.Get("labels"); l != "" && !slices.Contains(is.Labels, l) {
			continue
		}
		out = append(out, f.wire(is))
	}
	lo, hi := min((page-1)*perPage, len(out)), min(page*perPage, len(out))
	return out[lo:hi]
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// wire is an issue as the API shows it, with some of the many fields
// Vigil does not read.
func (f *fakeGitHub) wire(is *fakeIssue) map[string]any {
	labels := []map[string]any{}
	for _, l := range is.Labels {
		labels = append(labels, map[string]any{"name": l, "color": "ededed"})
	}
	m := map[string]any{
		"id": 9000 + is.Number, "number": is.Number, "title": is.Title, "body": is.Body,
		"state": is.State, "state_reason": nil, "labels": labels,
		"user":     map[string]any{"login": "vigil-bot[bot]", "type": "Bot"},
		"html_url": fmt.Sprintf("https://github.example.com/acme/ops/issues/%d", is.Number),
	}
	if is.PullRequest {
		m["pull_request"] = map[string]any{"url": "https://github.example.com/api/v3/repos/acme/ops/pulls/1"}
	}
	return m
}

// The documented request bodies.
type (
	githubWireNewIssue struct {
		Title  string   `json:"title"`
		Body   string   `json:"body"`
		Labels []string `json:"labels"`
	}
	githubWireComment struct {
		Body string `json:"body"`
	}
	githubWireUpdate struct {
		State       string `json:"state"`
		StateReason string `json:"state_reason"`
	}
)

// checkGitHubRequests asserts the requests' method, path and query in
// order, and the headers every request to the API carries.
func checkGitHubRequests(t *testing.T, step string, got []captured, want ...string) {
	t.Helper()
	var lines []string
	for _, r := range got {
		line := r.Method + " " + r.Path
		if r.RawQuery != "" {
			line += "?" + r.RawQuery
		}
		lines = append(lines, line)
		checkHeader(t, r.Header, "Authorization", "Bearer "+githubToken)
		checkHeader(t, r.Header, "Accept", "application/vnd.github+json")
		checkHeader(t, r.Header, "X-GitHub-Api-Version", "2022-11-28")
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
	githubListVigil = "GET " + fakeGitHubIssues + "?labels=vigil&page=1&per_page=100&state=open"
	// githubListAll follows githubListVigil when it finds nothing.
	githubListAll  = "GET " + fakeGitHubIssues + "?page=1&per_page=100&state=open"
	githubDownBody = "**[“Nightly backup” is DOWN.](https://vigil.example.com/checks/" + fixtureUUID + ")**\n\n" +
		"Reason: success signal did not arrive on time, grace time passed.\n\n" +
		"- **Description:** Backs up the orders database.\n- **Namespace:** team-a\n- **Tags:** `prod db`\n" +
		"- **Period:** 1 day\n- **Total Pings:** 42\n- **Last Ping:** Success, 10 minutes ago\n\n" +
		"**Last ping body:**\n```\nbackup done: 3 files\n```"
)

// TestGitHubOpenCommentClose runs a check's whole story against a fake
// GitHub: a down opens an issue, a second down and a re-alert comment on it,
// the up comments and closes it, a test message opens its own.
func TestGitHubOpenCommentClose(t *testing.T) {
	gh := newFakeGitHub(t)
	other := gh.add(fakeIssue{Title: "Another check", Body: "x\n\n<!-- vigil-check: vigil-0000 -->", Labels: []string{"vigil"}})
	gh.add(fakeIssue{Title: "A pull request quoting the marker", Body: githubMarker("vigil-" + fixtureUUID),
		Labels: []string{"vigil"}, PullRequest: true})
	ch := githubChannel(gh.URL+"/api/v3/", "vigil", "on-call")
	marker := "<!-- vigil-check: vigil-" + fixtureUUID + " -->"

	// Down: nothing open for the check, so an issue is opened.
	mustSend(t, ch, downMessage(), githubSecrets)
	reqs := gh.takeRequests()
	checkGitHubRequests(t, "down", reqs, githubListVigil, githubListAll, "POST "+fakeGitHubIssues)
	var created githubWireNewIssue
	decodeStrict(t, reqs[2].Body, &created)
	if created.Title != "“Nightly backup” is DOWN." || created.Body != githubDownBody+"\n\n"+marker ||
		!slices.Equal(created.Labels, []string{"vigil", "on-call"}) {
		t.Errorf("created %+v", created)
	}
	const issue = 3

	// The same down again (a retry after a lost answer): a comment.
	mustSend(t, ch, downMessage(), githubSecrets)
	reqs = gh.takeRequests()
	checkGitHubRequests(t, "down again", reqs, githubListVigil, fmt.Sprintf("POST %s/%d/comments", fakeGitHubIssues, issue))
	var comment githubWireComment
	decodeStrict(t, reqs[1].Body, &comment)
	if comment.Body != githubDownBody {
		t.Errorf("comment %q", comment.Body)
	}

	// A re-alert: a comment that says how long.
	mustSend(t, ch, realertMessage(), githubSecrets)
	reqs = gh.takeRequests()
	checkGitHubRequests(t, "re-alert", reqs, githubListVigil, fmt.Sprintf("POST %s/%d/comments", fakeGitHubIssues, issue))
	decodeStrict(t, reqs[1].Body, &comment)
	if !strings.HasPrefix(comment.Body, "**[“Nightly backup” is still DOWN (for 2 hours).](https://vigil.example.com/checks/") ||
		!strings.Contains(comment.Body, "- **Namespace:** team-a\n") {
		t.Errorf("re-alert comment %q", comment.Body)
	}

	// Up: the issue is closed as completed, then commented on.
	mustSend(t, ch, upMessage(), githubSecrets)
	reqs = gh.takeRequests()
	checkGitHubRequests(t, "up", reqs, githubListVigil,
		fmt.Sprintf("PATCH %s/%d", fakeGitHubIssues, issue), fmt.Sprintf("POST %s/%d/comments", fakeGitHubIssues, issue))
	decodeStrict(t, reqs[2].Body, &comment)
	if !strings.HasPrefix(comment.Body, "**[“Nightly backup” is UP.](https://vigil.example.com/checks/"+fixtureUUID+")**\n\n- **Description:**") {
		t.Errorf("up comment %q", comment.Body)
	}
	var update githubWireUpdate
	decodeStrict(t, reqs[1].Body, &update)
	if update != (githubWireUpdate{State: "closed", StateReason: "completed"}) {
		t.Errorf("update %+v", update)
	}

	// Another up: nothing open, nothing sent but the look.
	mustSend(t, ch, upMessage(), githubSecrets)
	checkGitHubRequests(t, "up again", gh.takeRequests(), githubListVigil, githubListAll)

	// A test message opens an issue of its own.
	test := downMessage()
	test.Test = true
	mustSend(t, ch, test, githubSecrets)
	reqs = gh.takeRequests()
	checkGitHubRequests(t, "test", reqs, githubListVigil, githubListAll, "POST "+fakeGitHubIssues)
	decodeStrict(t, reqs[2].Body, &created)
	if created.Title != "[Test] “Nightly backup” is DOWN." ||
		!strings.HasSuffix(created.Body, "\n\n<!-- vigil-check: vigil-test-"+fixtureUUID+" -->") {
		t.Errorf("test issue %+v", created)
	}

	if is := gh.issue(issue); is.State != "closed" || is.StateReason != "completed" || len(is.Comments) != 3 {
		t.Errorf("the check's issue ends %+v", is)
	}
	if is := gh.issue(other); is.State != "open" || len(is.Comments) != 0 {
		t.Errorf("another check's issue was touched: %+v", is)
	}
	if is := gh.issue(4); is.State != "open" || !strings.HasPrefix(is.Title, "[Test] ") {
		t.Errorf("the test issue %+v", is)
	}
}

// TestGitHubLabelsDropped: GitHub drops the labels of the issues a token
// without push access opens; the issue is still found, commented on and
// closed, and no second one is opened.
func TestGitHubLabelsDropped(t *testing.T) {
	gh := newFakeGitHub(t)
	gh.dropLabels = true
	ch := githubChannel(gh.URL+"/api/v3", "vigil")
	mustSend(t, ch, downMessage(), githubSecrets)
	checkGitHubRequests(t, "down", gh.takeRequests(), githubListVigil, githubListAll, "POST "+fakeGitHubIssues)
	mustSend(t, ch, realertMessage(), githubSecrets)
	checkGitHubRequests(t, "re-alert", gh.takeRequests(), githubListVigil, githubListAll,
		fmt.Sprintf("POST %s/1/comments", fakeGitHubIssues))
	mustSend(t, ch, upMessage(), githubSecrets)
	checkGitHubRequests(t, "up", gh.takeRequests(), githubListVigil, githubListAll,
		fmt.Sprintf("PATCH %s/1", fakeGitHubIssues), fmt.Sprintf("POST %s/1/comments", fakeGitHubIssues))
	if is := gh.issue(1); is.State != "closed" || len(is.Comments) != 2 || len(gh.issues) != 1 {
		t.Errorf("%d issues; the first %s with %d comments", len(gh.issues), is.State, len(is.Comments))
	}
}

// realertMessage is the fixture's check, still down two hours later.
func realertMessage() Message {
	m := downMessage()
	m.Notice, m.Since = "realert", fixedFlip.Add(-2*time.Hour)
	return m
}

// TestGitHubFindsTheIssueOnLaterPages: the issue is looked for page after
// page, up to githubMaxPages; past them, a down opens a new one.
func TestGitHubFindsTheIssueOnLaterPages(t *testing.T) {
	list := func(page int, labels string) string {
		return fmt.Sprintf("GET %s?%spage=%d&per_page=100&state=open", fakeGitHubIssues, labels, page)
	}
	t.Run("second page", func(t *testing.T) {
		gh := newFakeGitHub(t)
		mine := gh.add(fakeIssue{Title: "mine", Body: "text\n\n" + githubMarker("vigil-"+fixtureUUID), Labels: []string{"vigil"}})
		for i := range 150 {
			gh.add(fakeIssue{Title: "other", Body: githubMarker(fmt.Sprintf("vigil-%d", i)), Labels: []string{"vigil"}})
		}
		mustSend(t, githubChannel(gh.URL+"/api/v3", "vigil"), upMessage(), githubSecrets)
		checkGitHubRequests(t, "up", gh.takeRequests(), list(1, "labels=vigil&"), list(2, "labels=vigil&"),
			fmt.Sprintf("PATCH %s/%d", fakeGitHubIssues, mine), fmt.Sprintf("POST %s/%d/comments", fakeGitHubIssues, mine))
	})
	t.Run("bounded", func(t *testing.T) {
		gh := newFakeGitHub(t)
		gh.add(fakeIssue{Title: "mine, too old to be found", Body: githubMarker("vigil-" + fixtureUUID)})
		for range githubMaxPages * githubPerPage {
			gh.add(fakeIssue{Title: "unlabelled"})
		}
		mustSend(t, githubChannel(gh.URL+"/api/v3"), downMessage(), githubSecrets)
		var want []string
		for p := 1; p <= githubMaxPages; p++ {
			want = append(want, list(p, ""))
		}
		checkGitHubRequests(t, "down", gh.takeRequests(), append(want, "POST "+fakeGitHubIssues)...)
	})
	t.Run("pages too large to read", func(t *testing.T) {
		gh := newFakeGitHub(t)
		mine := gh.add(fakeIssue{Title: "mine", Body: githubMarker("vigil-" + fixtureUUID)})
		for range 129 {
			gh.add(fakeIssue{Title: "long", Body: strings.Repeat("log line\n", 1500)})
		}
		mustSend(t, githubChannel(gh.URL+"/api/v3"), realertMessage(), githubSecrets)
		want := []string{list(1, "")}
		for p := 1; p <= 7; p++ {
			want = append(want, fmt.Sprintf("GET %s?page=%d&per_page=20&state=open", fakeGitHubIssues, p))
		}
		checkGitHubRequests(t, "re-alert", gh.takeRequests(), append(want, fmt.Sprintf("POST %s/%d/comments", fakeGitHubIssues, mine))...)
	})
	t.Run("up closes every open issue of the check", func(t *testing.T) {
		gh := newFakeGitHub(t)
		a := gh.add(fakeIssue{Title: "a", Body: githubMarker("vigil-" + fixtureUUID), Labels: []string{"vigil"}})
		b := gh.add(fakeIssue{Title: "b", Body: githubMarker("vigil-" + fixtureUUID), Labels: []string{"vigil"}})
		mustSend(t, githubChannel(gh.URL+"/api/v3", "vigil"), upMessage(), githubSecrets)
		checkGitHubRequests(t, "up", gh.takeRequests(), githubListVigil,
			fmt.Sprintf("PATCH %s/%d", fakeGitHubIssues, b), fmt.Sprintf("POST %s/%d/comments", fakeGitHubIssues, b),
			fmt.Sprintf("PATCH %s/%d", fakeGitHubIssues, a), fmt.Sprintf("POST %s/%d/comments", fakeGitHubIssues, a))
		if gh.issue(a).State != "closed" || gh.issue(b).State != "closed" {
			t.Errorf("issues %+v %+v", gh.issue(a), gh.issue(b))
		}
	})
	t.Run("label with a comma is no filter", func(t *testing.T) {
		gh := newFakeGitHub(t)
		mustSend(t, githubChannel(gh.URL+"/api/v3", "ops,alerts", "vigil"), downMessage(), githubSecrets)
		checkGitHubRequests(t, "down", gh.takeRequests(), list(1, ""), "POST "+fakeGitHubIssues)
	})
}

// TestGitHubDefaultURL: without a URL, requests go to api.github.com. The
// context is over before the request starts, so nothing leaves the test.
func TestGitHubDefaultURL(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := Send(ctx, Delivery{Channel: githubChannel(""), Message: downMessage(), Secret: secretMap(githubSecrets)})
	if want := "github: GET https://api.github.com/repos/acme/ops/issues: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Send = %v, want an error starting %q", err, want)
	}
}

// TestGitHubRateLimits: GitHub's primary and secondary rate limits (403 or
// 429) are retryable after Retry-After or a minute; other 403s are not.
func TestGitHubRateLimits(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		header     map[string]string
		body       string
		permanent  bool
		retryAfter time.Duration
	}{
		{"429 with Retry-After", 429, map[string]string{"Retry-After": "17"}, `{"message":"Too Many Requests"}`, false, 17 * time.Second},
		{"secondary, 403 with Retry-After", 403, map[string]string{"Retry-After": "30"},
			`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`,
			false, 30 * time.Second},
		{"secondary, 403 without headers", 403, nil,
			`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}`, false, time.Minute},
		{"primary, 403 with x-ratelimit-reset", 403,
			map[string]string{"X-Ratelimit-Remaining": "0", "X-Ratelimit-Reset": strconv.FormatInt(fixedNow.Add(20*time.Minute).Unix(), 10)},
			`{"message":"API rate limit exceeded for installation ID 1234.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`,
			false, time.Minute},
		{"429 without Retry-After", 429, nil, `{"message":"API rate limit exceeded"}`, false, time.Minute},
		{"403 without access", 403, nil, `{"message":"Resource not accessible by integration"}`, true, 0},
		{"404", 404, nil, `{"message":"Not Found"}`, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, tc.status, tc.body)
			for k, v := range tc.header {
				srv.header.Set(k, v)
			}
			err := send(t, githubChannel(srv.URL, "vigil"), downMessage(), githubSecrets)
			var se *StatusError
			if !errors.As(err, &se) || se.Code != tc.status {
				t.Fatalf("Send = %v, want a StatusError %d", err, tc.status)
			}
			if IsPermanent(err) != tc.permanent || se.RetryAfter != tc.retryAfter {
				t.Errorf("permanent %v retry-after %s, want %v %s: %v", IsPermanent(err), se.RetryAfter, tc.permanent, tc.retryAfter, err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests after a refusal", n)
			}
		})
	}
}

// TestGitHubLimits: the title and the body are cut to GitHub's limits, and
// the marker survives the cut.
func TestGitHubLimits(t *testing.T) {
	gh := newFakeGitHub(t)
	m := downMessage()
	m.Check.Name = strings.Repeat("é", 300)
	m.Check.Desc = strings.Repeat("d", 70000)
	mustSend(t, githubChannel(gh.URL+"/api/v3"), m, githubSecrets)
	reqs := gh.takeRequests()
	checkGitHubRequests(t, "down", reqs, "GET "+fakeGitHubIssues+"?page=1&per_page=100&state=open", "POST "+fakeGitHubIssues)
	var created githubWireNewIssue
	decodeStrict(t, reqs[1].Body, &created)
	if n := utf8.RuneCountInString(created.Title); n != githubTitleMax || !strings.HasSuffix(created.Title, "…") {
		t.Errorf("title of %d characters: %q", n, created.Title)
	}
	if n := utf8.RuneCountInString(created.Body); n > githubBodyMax ||
		!strings.HasSuffix(created.Body, "…\n\n<!-- vigil-check: vigil-"+fixtureUUID+" -->") {
		t.Errorf("body of %d characters ends %q", n, created.Body[len(created.Body)-80:])
	}
	if created.Labels != nil {
		t.Errorf("labels %v, want none", created.Labels)
	}
}

func TestGitHubSettingsErrors(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "[]")
	for _, tc := range []struct {
		name     string
		spec     *v1.GitHubChannel
		secrets  map[string]string
		contains string
	}{
		{"no settings", nil, githubSecrets, "the channel has no github settings"},
		{"no owner", &v1.GitHubChannel{Repository: "ops", TokenSecretRef: ref("gh", "token"), URL: srv.URL}, githubSecrets, `"ops" is not owner/name`},
		{"dot dot", &v1.GitHubChannel{Repository: "../ops", TokenSecretRef: ref("gh", "token"), URL: srv.URL}, githubSecrets, "not owner/name"},
		{"bad URL", &v1.GitHubChannel{Repository: "acme/ops", TokenSecretRef: ref("gh", "token"), URL: "ftp://x"}, githubSecrets, "not an absolute"},
		{"token with a newline inside", &v1.GitHubChannel{Repository: "acme/ops", TokenSecretRef: ref("gh", "token"), URL: srv.URL},
			map[string]string{"gh/token": "ghp_a\nb"}, "control characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelGitHub, GitHub: tc.spec}), downMessage(), tc.secrets)
			if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("Send = %v, want a permanent error containing %q", err, tc.contains)
			}
		})
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	k, _ := Lookup(v1.ChannelGitHub)
	spec := githubChannel("").Spec
	if got := k.SecretRefs(&spec); !slices.Equal(got, []v1.SecretKeyRef{ref("gh", "token")}) {
		t.Errorf("SecretRefs = %v", got)
	}
}

// TestGitHubEmptyAnswerIsNoIssue: a 2xx list without a body lists nothing
// (and a down opens an issue), but a connection closed before any answer is
// a retryable error, not an empty list.
func TestGitHubEmptyAnswerIsNoIssue(t *testing.T) {
	srv := newRecorder(t, http.StatusNoContent, "")
	mustSend(t, githubChannel(srv.URL), downMessage(), githubSecrets)
	if reqs := srv.requests(); len(reqs) != 2 || reqs[1].Method != http.MethodPost {
		t.Errorf("requests %+v", reqs)
	}
	closing := closingServer(t)
	err := send(t, githubChannel(closing.URL), downMessage(), githubSecrets)
	if err == nil || IsPermanent(err) || !errors.Is(err, io.EOF) {
		t.Errorf("Send = %v, want a retryable EOF", err)
	}
	if n := closing.hits(); n != 1 {
		t.Errorf("%d requests, want only the list", n)
	}
}

// closingServer closes every connection without answering.
type closingSrv struct {
	*httptest.Server
	n atomic.Int32
}

func closingServer(t *testing.T) *closingSrv {
	s := &closingSrv{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.n.Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.Close()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *closingSrv) hits() int { return int(s.n.Load()) }
