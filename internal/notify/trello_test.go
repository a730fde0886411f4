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
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

const (
	trelloAPIKey = "trelloApiKeySecret0123456789abcd"
	trelloToken  = "ATTAtrelloTokenSecret0123456789abcdef"
	trelloList   = "5f1e2d3c4b5a69788796a5b4"
)

func init() {
	addHTTPKind(httpKindCase{v1.ChannelTrello, trelloChannel,
		func(string) map[string]string { return trelloSecrets }},
		trelloAPIKey, trelloToken)
}

func trelloChannel(base string) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelTrello, Trello: &v1.TrelloChannel{
		CredentialsSecretRef: v1.LocalSecretRef{Name: "trello"}, ListID: trelloList, URL: base}})
}

var trelloSecrets = map[string]string{"trello/apiKey": trelloAPIKey, "trello/token": trelloToken + "\n"}

// fakeTrello keeps cards and their comments, and records every request.
type fakeTrello struct {
	*httptest.Server
	mu    sync.Mutex
	reqs  []captured
	cards []*fakeCard
}

type fakeCard struct {
	ID, IDList, Name, Desc, Pos string
	Closed                      bool
	Comments                    []string
}

func newFakeTrello(t *testing.T) *fakeTrello {
	f := &fakeTrello{}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeTrello) add(c fakeCard) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	c.ID = fmt.Sprintf("64a1b2c3d4e5f6a7b8c9%04x", len(f.cards)+1)
	f.cards = append(f.cards, &c)
	return c.ID
}

func (f *fakeTrello) card(id string) fakeCard {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cards {
		if c.ID == id {
			return *c
		}
	}
	return fakeCard{}
}

// top is the id of the first card of a list.
func (f *fakeTrello) top(list string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.cards {
		if c.IDList == list {
			return c.ID
		}
	}
	return ""
}

func (f *fakeTrello) takeRequests() []captured {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.reqs
	f.reqs = nil
	return r
}

func (f *fakeTrello) serve(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, captured{r.Method, r.URL.Path, r.URL.RawQuery, r.Host, r.Header.Clone(), b})
	if r.Header.Get("Authorization") != `OAuth oauth_consumer_key="`+trelloAPIKey+`", oauth_token="`+trelloToken+`"` {
		http.Error(w, "invalid key", http.StatusUnauthorized)
		return
	}
	answer := func(v any) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(v)
	}
	find := func(id string) *fakeCard {
		for _, c := range f.cards {
			if c.ID == id {
				return c
			}
		}
		return nil
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && len(parts) == 4 && parts[1] == "lists" && parts[3] == "cards":
		// Open cards in position order, with the fields asked for and
		// the id.
		out := []map[string]any{}
		for _, c := range f.cards {
			if c.IDList == parts[2] && !c.Closed {
				out = append(out, map[string]any{"id": c.ID, "name": c.Name, "desc": c.Desc})
			}
		}
		answer(out)
	case r.Method == http.MethodPost && r.URL.Path == "/1/cards":
		var in struct{ IDList, Name, Desc, Pos string }
		_ = json.Unmarshal(b, &in)
		c := &fakeCard{ID: fmt.Sprintf("64a1b2c3d4e5f6a7b8c9%04x", len(f.cards)+1), IDList: in.IDList, Name: in.Name, Desc: in.Desc, Pos: in.Pos}
		f.cards = append([]*fakeCard{c}, f.cards...) // "top"
		answer(map[string]any{"id": c.ID, "name": c.Name, "desc": c.Desc, "idList": c.IDList, "closed": false})
	case r.Method == http.MethodPost && len(parts) == 5 && parts[3] == "actions" && parts[4] == "comments" && find(parts[2]) != nil:
		var in struct{ Text string }
		_ = json.Unmarshal(b, &in)
		c := find(parts[2])
		c.Comments = append(c.Comments, in.Text)
		answer(map[string]any{"id": "6500000000000000000000aa", "type": "commentCard", "data": map[string]any{"text": in.Text}})
	case r.Method == http.MethodPut && len(parts) == 3 && find(parts[2]) != nil:
		var in struct{ Desc string }
		_ = json.Unmarshal(b, &in)
		c := find(parts[2])
		c.Desc = in.Desc
		answer(map[string]any{"id": c.ID, "desc": c.Desc})
	default:
		http.Error(w, "Cannot "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	}
}

// The documented request bodies.
type (
	trelloWireCard struct {
		IDList string `json:"idList"`
		Name   string `json:"name"`
		Desc   string `json:"desc"`
		Pos    string `json:"pos"`
	}
	trelloWireComment struct {
		Text string `json:"text"`
	}
	trelloWireUpdate struct {
		Desc string `json:"desc"`
	}
)

// checkTrelloRequests asserts the requests in order, and what every one
// carries: the credentials in the Authorization header and never in the
// URL.
func checkTrelloRequests(t *testing.T, step string, got []captured, want ...string) {
	t.Helper()
	var lines []string
	for _, r := range got {
		line := r.Method + " " + r.Path
		if r.RawQuery != "" {
			line += "?" + r.RawQuery
		}
		lines = append(lines, line)
		checkHeader(t, r.Header, "Authorization", `OAuth oauth_consumer_key="`+trelloAPIKey+`", oauth_token="`+trelloToken+`"`)
		checkHeader(t, r.Header, "Accept", "application/json")
		checkUserAgent(t, r.Header)
		wantType := "application/json"
		if r.Method == http.MethodGet {
			wantType = ""
		}
		checkHeader(t, r.Header, "Content-Type", wantType)
		if strings.Contains(r.RawQuery, "key=") || strings.Contains(r.RawQuery, "token=") {
			t.Errorf("%s: credentials in the query %q", step, r.RawQuery)
		}
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("%s: requests\n  %s\nwant\n  %s", step, strings.Join(lines, "\n  "), strings.Join(want, "\n  "))
	}
}

const trelloListCards = "GET /1/lists/" + trelloList + "/cards?fields=id,name,desc"

// TestTrelloCardCommentResolve runs a check's story against a fake Trello:
// a down adds a card, a re-alert comments on it, the up comments and marks
// it resolved, the next down adds a new card, a test message its own.
func TestTrelloCardCommentResolve(t *testing.T) {
	tr := newFakeTrello(t)
	other := tr.add(fakeCard{IDList: trelloList, Name: "Another check", Desc: "x\n\n`vigil-check: vigil-0000`"})
	elsewhere := tr.add(fakeCard{IDList: "5f1e2d3c4b5a69788796ffff", Name: "Same check, another list",
		Desc: "`vigil-check: vigil-" + fixtureUUID + "`"})
	ch := trelloChannel(tr.URL)
	marker := "`vigil-check: vigil-" + fixtureUUID + "`"

	mustSend(t, ch, downMessage(), trelloSecrets)
	reqs := tr.takeRequests()
	checkTrelloRequests(t, "down", reqs, trelloListCards, "POST /1/cards")
	var card trelloWireCard
	decodeStrict(t, reqs[1].Body, &card)
	if card != (trelloWireCard{IDList: trelloList, Name: "“Nightly backup” is DOWN.", Desc: githubDownBody + "\n\n" + marker, Pos: "top"}) {
		t.Errorf("card %+v", card)
	}
	id := tr.top(trelloList)

	realert := downMessage()
	realert.Notice, realert.Since = "escalation", fixedFlip.Add(-3*time.Hour)
	mustSend(t, ch, realert, trelloSecrets)
	reqs = tr.takeRequests()
	checkTrelloRequests(t, "escalation", reqs, trelloListCards, "POST /1/cards/"+id+"/actions/comments")
	var comment trelloWireComment
	decodeStrict(t, reqs[1].Body, &comment)
	if !strings.HasPrefix(comment.Text, "**[“Nightly backup” is still DOWN (for 3 hours).](https://vigil.example.com/checks/"+fixtureUUID+")**\n\nReason: ") {
		t.Errorf("comment %q", comment.Text)
	}

	mustSend(t, ch, upMessage(), trelloSecrets)
	reqs = tr.takeRequests()
	checkTrelloRequests(t, "up", reqs, trelloListCards, "PUT /1/cards/"+id, "POST /1/cards/"+id+"/actions/comments")
	decodeStrict(t, reqs[2].Body, &comment)
	if !strings.HasPrefix(comment.Text, "**[“Nightly backup” is UP.](https://vigil.example.com/checks/"+fixtureUUID+")**\n\n- **Description:**") {
		t.Errorf("up comment %q", comment.Text)
	}
	var update trelloWireUpdate
	decodeStrict(t, reqs[1].Body, &update)
	if update.Desc != githubDownBody+"\n\n`vigil-resolved: vigil-"+fixtureUUID+"`" {
		t.Errorf("resolved description %q", update.Desc)
	}

	// Resolved, the card is no longer the check's: an up finds nothing,
	// the next down adds a new card.
	mustSend(t, ch, upMessage(), trelloSecrets)
	checkTrelloRequests(t, "up again", tr.takeRequests(), trelloListCards)
	mustSend(t, ch, downMessage(), trelloSecrets)
	checkTrelloRequests(t, "down again", tr.takeRequests(), trelloListCards, "POST /1/cards")

	test := downMessage()
	test.Test = true
	mustSend(t, ch, test, trelloSecrets)
	reqs = tr.takeRequests()
	checkTrelloRequests(t, "test", reqs, trelloListCards, "POST /1/cards")
	decodeStrict(t, reqs[1].Body, &card)
	if card.Name != "[Test] “Nightly backup” is DOWN." || !strings.HasSuffix(card.Desc, "\n\n`vigil-check: vigil-test-"+fixtureUUID+"`") {
		t.Errorf("test card %+v", card)
	}

	if c := tr.card(id); len(c.Comments) != 2 || !strings.HasSuffix(c.Desc, "`vigil-resolved: vigil-"+fixtureUUID+"`") {
		t.Errorf("the check's card ends %+v", c)
	}
	for _, untouched := range []string{other, elsewhere} {
		if c := tr.card(untouched); len(c.Comments) != 0 || strings.Contains(c.Desc, "resolved") {
			t.Errorf("card %s was touched: %+v", untouched, c)
		}
	}
}

// TestTrelloLimits: names and descriptions are cut to Trello's 16384
// characters, keeping the marker.
func TestTrelloLimits(t *testing.T) {
	tr := newFakeTrello(t)
	m := downMessage()
	m.Check.Name = strings.Repeat("n", 20000)
	m.Check.Desc = strings.Repeat("ü", 20000)
	mustSend(t, trelloChannel(tr.URL), m, trelloSecrets)
	reqs := tr.takeRequests()
	checkTrelloRequests(t, "down", reqs, trelloListCards, "POST /1/cards")
	var card trelloWireCard
	decodeStrict(t, reqs[1].Body, &card)
	if n := utf8.RuneCountInString(card.Name); n != trelloTextMax {
		t.Errorf("name of %d characters", n)
	}
	if n := utf8.RuneCountInString(card.Desc); n > trelloTextMax || !strings.HasSuffix(card.Desc, "…\n\n`vigil-check: vigil-"+fixtureUUID+"`") {
		t.Errorf("description of %d characters", n)
	}
}

func TestTrelloRateLimit(t *testing.T) {
	srv := newRecorder(t, http.StatusTooManyRequests, `{"error":"API_TOKEN_LIMIT_EXCEEDED","message":"Rate limit exceeded"}`)
	srv.header.Set("Retry-After", "9")
	err := send(t, trelloChannel(srv.URL), downMessage(), trelloSecrets)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusTooManyRequests || se.RetryAfter != 9*time.Second || IsPermanent(err) {
		t.Errorf("Send = %v (%+v), want a retryable 429 with Retry-After 9s", err, se)
	}
}

// TestTrelloDefaultURL: without a URL, requests go to api.trello.com. The
// context is over before the request starts, so nothing leaves the test.
func TestTrelloDefaultURL(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := Send(ctx, Delivery{Channel: trelloChannel(""), Message: downMessage(), Secret: secretMap(trelloSecrets)})
	if want := "trello: GET https://api.trello.com/1/lists/" + trelloList + "/cards: "; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("Send = %v, want an error starting %q", err, want)
	}
}

func TestTrelloSettingsErrors(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "[]")
	good := func() *v1.TrelloChannel { return trelloChannel(srv.URL).Spec.Trello }
	badList := good()
	badList.ListID = "../../boards/x"
	for _, tc := range []struct {
		name      string
		spec      *v1.TrelloChannel
		secrets   map[string]string
		permanent bool
		contains  string
	}{
		{"no settings", nil, trelloSecrets, true, "the channel has no trello settings"},
		{"bad list id", badList, trelloSecrets, true, "is not a Trello id"},
		{"no token", good(), map[string]string{"trello/apiKey": trelloAPIKey}, false, `Secret "trello" key "token"`},
		{"quote in the token", good(), map[string]string{"trello/apiKey": trelloAPIKey, "trello/token": `abc", x="y`}, true, "characters a credential cannot have"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := send(t, testChannel(v1.ChannelSpec{Kind: v1.ChannelTrello, Trello: tc.spec}), downMessage(), tc.secrets)
			if err == nil || IsPermanent(err) != tc.permanent || !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("Send = %v (permanent %v), want an error containing %q, permanent %v", err, IsPermanent(err), tc.contains, tc.permanent)
			}
		})
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	k, _ := Lookup(v1.ChannelTrello)
	spec := trelloChannel("").Spec
	if got := k.SecretRefs(&spec); !slices.Equal(got, []v1.SecretKeyRef{ref("trello", "apiKey"), ref("trello", "token")}) {
		t.Errorf("SecretRefs = %v", got)
	}
}
