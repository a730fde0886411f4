package notify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelGitHub, gitHubKind{}) }

// gitHubKind tracks a down as a GitHub issue, through the REST API
// (https://docs.github.com/en/rest/issues), with a token from the Secret
// (Authorization: Bearer, API version 2022-11-28).
//
// Vigil keeps no state, so it finds its issue again by a hidden line in the
// issue's body, <!-- vigil-check: vigil-<uuid> --> ("vigil-test-<uuid>" for
// test messages, so a test never touches a real incident): it lists the
// repository's open issues, newest first (the 1,000 newest; first only those
// with the channel's first label, when it has labels, then, if none has the
// line, all of them: GitHub drops the labels of a new issue when the token's
// user has no push access), and keeps the issues, not
// pull requests, whose body holds that line. The list is not filtered by
// creator: that needs the token's login, an extra request (GET /user) that
// a GitHub App's installation token cannot even make; the marker alone
// tells Vigil's issues apart, and the label keeps the pages short.
//
//   - Down: with no open issue of the check, it opens one: title "“<name>”
//     is DOWN." (the Channel's template subject when set), body the message
//     in Markdown (reason, facts, last ping body, link to the check) and the
//     hidden line, labels the channel's. With one open (a retry, or a down
//     after someone reopened it), it comments on it instead.
//   - Re-alert and escalation: a comment on the open issue ("… is still
//     DOWN (for 2 hours)."); with none open (closed by hand), a new issue.
//   - Up: each open issue of the check is closed (state_reason
//     "completed") and then commented on; with none open, nothing is sent.
//   - Failure and maintenance notices are not sent (the check is not down).
//
// GitHub's rate-limit answers (403 or 429, with Retry-After, or whose
// message says "rate limit") are retryable, after Retry-After or at least
// a minute, as GitHub asks; any other 403 (a token without access) is
// permanent.
type gitHubKind struct{ tracker }

// GitHubAPIURL is GitHub's REST API, used when a channel sets no URL.
const GitHubAPIURL = "https://api.github.com"

// Limits of the issues API, and how far Vigil looks for its issue.
const (
	// githubTitleMax and githubBodyMax are GitHub's limits, in characters,
	// of an issue's title and of an issue's or a comment's body.
	githubTitleMax = 256
	githubBodyMax  = 65536
	// githubPerPage is the largest page the list endpoint serves, and
	// githubSmallPage the size of the pages when those are too large to
	// read (it divides githubPerPage).
	githubPerPage   = 100
	githubSmallPage = 20
	// githubMaxPages bounds the search for the open issue of a check, in
	// pages of githubPerPage: the 1,000 newest open issues (with the
	// channel's first label).
	githubMaxPages = 10
	// githubRateLimitWait is how long GitHub asks clients to wait after a
	// rate-limit answer without Retry-After: "at least one minute".
	githubRateLimitWait = time.Minute
)

func (gitHubKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.GitHub == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.GitHub.TokenSecretRef}
}

// githubRepo is a repository's issues API, for one delivery.
type githubRepo struct {
	d *Delivery
	// issues is <base>/repos/{owner}/{repo}/issues.
	issues target
	header http.Header
}

// githubIssue is what Vigil reads of a listed issue.
type githubIssue struct {
	Number int     `json:"number"`
	Body   *string `json:"body"`
	// PullRequest is set on pull requests, which the list also returns.
	PullRequest json.RawMessage `json:"pull_request"`
}

type githubNewIssue struct {
	Title  string   `json:"title"`
	Body   string   `json:"body"`
	Labels []string `json:"labels,omitempty"`
}

type githubComment struct {
	Body string `json:"body"`
}

type githubIssueUpdate struct {
	State       string `json:"state"`
	StateReason string `json:"state_reason"`
}

func (gitHubKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.GitHub
	if s == nil {
		return Permanent(errors.New("the channel has no github settings"))
	}
	owner, name, ok := splitRepository(s.Repository)
	if !ok {
		return Permanent(fmt.Errorf("the repository %q is not owner/name", s.Repository))
	}
	base, err := parseTarget(cmp.Or(s.URL, GitHubAPIURL), false)
	if err != nil {
		return err
	}
	h := http.Header{}
	h.Set("Accept", "application/vnd.github+json")
	h.Set("X-GitHub-Api-Version", "2022-11-28")
	if err := d.setBearer(ctx, h, &s.TokenSecretRef, "the GitHub token"); err != nil {
		return err
	}
	base.u = base.u.JoinPath("repos", owner, name, "issues")
	base.u.RawQuery, base.u.Fragment = "", ""
	repo := &githubRepo{d: &d, issues: base, header: h}

	m := &d.Message
	marker := githubMarker(incidentKey(m))
	label := ""
	if len(s.Labels) > 0 && !strings.Contains(s.Labels[0], ",") {
		// The list filter takes a comma-separated list: a label with a
		// comma in its name cannot be one of its items.
		label = s.Labels[0]
	}
	open, err := repo.openIssues(ctx, marker, label)
	if err == nil && len(open) == 0 && label != "" {
		// GitHub silently drops the labels of an issue opened by a token
		// whose user has no push access to the repository: look again
		// among all the open issues, or such a channel would open an
		// issue at every down and never close one.
		open, err = repo.openIssues(ctx, marker, "")
	}
	if err != nil {
		return err
	}
	text := m.markdown()
	if m.Up {
		// Closed first, then the comment: a retry after a failure
		// between the two finds the issue closed and sends nothing, where
		// the other order would comment twice.
		for _, n := range open {
			if err := repo.close(ctx, n); err != nil {
				return err
			}
			if err := repo.comment(ctx, n, text); err != nil {
				return err
			}
		}
		return nil
	}
	if len(open) > 0 {
		return repo.comment(ctx, open[0], text)
	}
	return repo.create(ctx, githubNewIssue{
		Title:  words.Ellipsize(m.title(), githubTitleMax),
		Body:   words.Ellipsize(text, githubBodyMax-len(marker)-2) + "\n\n" + marker,
		Labels: s.Labels,
	})
}

// splitRepository splits "owner/name", refusing the names that would
// change the API path ("." and "..").
func splitRepository(r string) (owner, name string, ok bool) {
	owner, name, ok = strings.Cut(r, "/")
	valid := func(s string) bool { return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/?#%\\") }
	return owner, name, ok && valid(owner) && valid(name)
}

// githubMarker is the hidden line that ties an issue to a check.
func githubMarker(key string) string { return "<!-- vigil-check: " + key + " -->" }

// openIssues returns the numbers of the open issues (not pull requests)
// whose body holds marker, newest first, looking at the issues with label
// (any, when empty): at most githubMaxPages pages of githubPerPage.
//
// A page of 100 issues with long bodies can be larger than the answer
// d.do reads (maxAnswer); the search then goes on from the same place in
// pages of githubSmallPage.
func (r *githubRepo) openIssues(ctx context.Context, marker, label string) ([]int, error) {
	var found []int
	perPage := githubPerPage
	for seen := 0; seen < githubMaxPages*githubPerPage; seen += perPage {
		q := url.Values{"state": {"open"}, "per_page": {strconv.Itoa(perPage)}, "page": {strconv.Itoa(seen/perPage + 1)}}
		if label != "" {
			q.Set("labels", label)
		}
		t := r.issues
		u := *t.u
		u.RawQuery = q.Encode()
		t.u = &u
		var issues []githubIssue
		err := r.d.do(ctx, request{method: http.MethodGet, target: t, header: r.header, into: &issues})
		switch {
		case answerWasEmpty(err):
			// An empty answer (a 204, or a proxy's) lists nothing.
			err, issues = nil, nil
		case answerTooLarge(err) && perPage > githubSmallPage:
			// seen is a multiple of both page sizes: the smaller pages
			// start where the larger one did.
			seen -= githubSmallPage
			perPage = githubSmallPage
			continue
		}
		if err != nil {
			return nil, githubRetryable(err)
		}
		for _, is := range issues {
			if is.PullRequest == nil && is.Body != nil && strings.Contains(*is.Body, marker) {
				found = append(found, is.Number)
			}
		}
		if len(issues) < perPage {
			break
		}
	}
	return found, nil
}

func (r *githubRepo) create(ctx context.Context, is githubNewIssue) error {
	return githubRetryable(r.d.do(ctx, request{method: http.MethodPost, target: r.issues, header: r.header, json: is}))
}

func (r *githubRepo) comment(ctx context.Context, number int, text string) error {
	t := r.issue(number, "comments")
	return githubRetryable(r.d.do(ctx, request{method: http.MethodPost, target: t, header: r.header,
		json: githubComment{Body: words.Ellipsize(text, githubBodyMax)}}))
}

func (r *githubRepo) close(ctx context.Context, number int) error {
	t := r.issue(number)
	return githubRetryable(r.d.do(ctx, request{method: http.MethodPatch, target: t, header: r.header,
		json: githubIssueUpdate{State: "closed", StateReason: "completed"}}))
}

// issue is the URL of issue number, or of one of its collections.
func (r *githubRepo) issue(number int, sub ...string) target {
	t := r.issues
	t.u = t.u.JoinPath(append([]string{strconv.Itoa(number)}, sub...)...)
	return t
}

// githubRetryable makes GitHub's rate-limit answers retryable. GitHub
// answers a primary or a secondary rate limit with 403 or 429: with
// Retry-After, or with x-ratelimit-remaining 0 and x-ratelimit-reset, or
// with neither (then clients should wait at least a minute), and always
// with a message that says "rate limit" ("API rate limit exceeded for …",
// "You have exceeded a secondary rate limit …"). d.do makes every 403
// permanent and cannot show the x-ratelimit headers, so a 403 with
// Retry-After or that message is made retryable here, and a rate limit
// without Retry-After waits githubRateLimitWait. Any other 403 (a token
// without access to the repository) stays permanent.
func githubRetryable(err error) error {
	var se *StatusError
	if err == nil || !errors.As(err, &se) || (se.Code != http.StatusForbidden && se.Code != http.StatusTooManyRequests) {
		return err
	}
	body := strings.ToLower(se.Body)
	limited := se.RetryAfter > 0 || strings.Contains(body, "rate limit") || strings.Contains(body, "abuse detection")
	if se.Code == http.StatusForbidden && !limited {
		return err
	}
	if se.RetryAfter == 0 {
		se.RetryAfter = githubRateLimitWait
	}
	// se, unwrapped from Permanent: d.do's form of a retryable answer.
	return se
}

// answerWasEmpty reports whether err is d.do's failure to read a 2xx
// answer that had no body at all (a 204). Only the text tells it from a
// connection closed before any answer, which is io.EOF too.
func answerWasEmpty(err error) bool {
	return errors.Is(err, io.EOF) && isReadingAnswer(err)
}

// answerNotJSON reports whether err is d.do's failure to read a 2xx
// answer that is not the JSON expected (or was cut short): the request
// itself succeeded.
func answerNotJSON(err error) bool {
	return !errors.Is(err, io.EOF) && isReadingAnswer(err)
}

// answerTooLarge reports whether err is d.do's failure to read a 2xx
// answer that was cut at maxAnswer bytes.
func answerTooLarge(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) && isReadingAnswer(err)
}

// isReadingAnswer reports whether err is d.do's failure to read the body of
// a 2xx answer, which d.do words "<method> <target>: reading the answer:
// <cause>".
func isReadingAnswer(err error) bool {
	var se *StatusError
	return err != nil && !errors.As(err, &se) && strings.Contains(err.Error(), ": reading the answer: ")
}
