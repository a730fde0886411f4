package notify

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

func init() { register(v1.ChannelTrello, trelloKind{}) }

// trelloKind tracks a down as a card on a Trello list, through Trello's
// REST API (https://developer.atlassian.com/cloud/trello/rest/). The API
// key and the member's token come from the Secret and travel in the
// Authorization header (OAuth oauth_consumer_key="…", oauth_token="…"),
// never in URLs.
//
// Vigil keeps no state, so it finds its card again by the last line of the
// card's description, `vigil-check: vigil-<uuid>` ("vigil-test-<uuid>" for
// test messages, so a test never touches a real incident): it lists the
// list's open cards and keeps those whose description holds that line.
//
//   - Down: with no card of the check on the list, it adds one at the top:
//     name "“<name>” is DOWN." (the Channel's template subject when set),
//     description the message in Markdown (reason, facts, last ping body,
//     link to the check) and the marker line. With one there (a retry), it
//     comments on it instead.
//   - Re-alert and escalation: a comment on the card ("… is still DOWN (for
//     2 hours)."); with none (archived or moved by hand), a new card.
//   - Up: each card of the check has its marker line turned into
//     `vigil-resolved: …` (the card stays where people put it, but the
//     next down adds a new one) and is then commented on ("… is UP (was
//     down for 2 hours)."). With no card, nothing is sent.
//   - Failure and maintenance notices are not sent (the check is not down).
type trelloKind struct{ tracker }

// TrelloAPIURL is Trello's REST API, used when a channel sets no URL.
const TrelloAPIURL = "https://api.trello.com"

const (
	// trelloTextMax is Trello's limit, in characters, of a card's name, a
	// card's description and a comment.
	trelloTextMax = 16384
)

func (trelloKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Trello == nil {
		return nil
	}
	name := spec.Trello.CredentialsSecretRef.Name
	return []v1.SecretKeyRef{{Name: name, Key: "apiKey"}, {Name: name, Key: "token"}}
}

type trelloCard struct {
	ID   string `json:"id"`
	Desc string `json:"desc"`
}

type trelloNewCard struct {
	IDList string `json:"idList"`
	Name   string `json:"name"`
	Desc   string `json:"desc"`
	Pos    string `json:"pos"`
}

type trelloComment struct {
	Text string `json:"text"`
}

type trelloCardUpdate struct {
	Desc string `json:"desc"`
}

// trelloBoard is the Trello API, for one delivery.
type trelloBoard struct {
	d      *Delivery
	base   target
	header http.Header
}

func (trelloKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Trello
	if s == nil {
		return Permanent(errors.New("the channel has no trello settings"))
	}
	if !isTrelloID(s.ListID) {
		return Permanent(fmt.Errorf("the list id %q is not a Trello id (24 hexadecimal digits)", s.ListID))
	}
	base, err := parseTarget(cmp.Or(s.URL, TrelloAPIURL), false)
	if err != nil {
		return err
	}
	base.u.RawQuery, base.u.Fragment = "", ""
	refs := trelloKind{}.SecretRefs(&d.Channel.Spec)
	key, err := d.secret(ctx, refs[0])
	if err != nil {
		return err
	}
	token, err := d.secret(ctx, refs[1])
	if err != nil {
		return err
	}
	if !trelloCredential(key) || !trelloCredential(token) {
		return Permanent(errors.New("the Trello API key or token holds characters a credential cannot have"))
	}
	h := http.Header{}
	h.Set("Accept", "application/json")
	h.Set("Authorization", `OAuth oauth_consumer_key="`+key+`", oauth_token="`+token+`"`)
	b := &trelloBoard{d: &d, base: base, header: h}

	m := &d.Message
	dedupKey := incidentKey(m)
	marker := trelloMarker("vigil-check", dedupKey)
	cards, err := b.cards(ctx, s.ListID, marker)
	if err != nil {
		return err
	}
	text := m.markdown()
	if m.Up {
		// Marked resolved first, then the comment: a retry after a
		// failure between the two finds no card and sends nothing, where
		// the other order would comment twice.
		for _, c := range cards {
			desc := strings.ReplaceAll(c.Desc, marker, trelloMarker("vigil-resolved", dedupKey))
			if err := b.do(ctx, http.MethodPut, trelloCardUpdate{Desc: desc}, "1", "cards", c.ID); err != nil {
				return err
			}
			if err := b.comment(ctx, c.ID, text); err != nil {
				return err
			}
		}
		return nil
	}
	if len(cards) > 0 {
		return b.comment(ctx, cards[0].ID, text)
	}
	return b.do(ctx, http.MethodPost, trelloNewCard{
		IDList: s.ListID,
		Name:   words.Ellipsize(m.title(), trelloTextMax),
		// Room for the marker, and for it to become the longer
		// vigil-resolved one.
		Desc: words.Ellipsize(text, trelloTextMax-2*len(marker)) + "\n\n" + marker,
		Pos:  "top",
	}, "1", "cards")
}

// trelloMarker is the description's line that ties a card to a check.
func trelloMarker(label, key string) string { return "`" + label + ": " + key + "`" }

// cards returns the open cards of the list whose description holds marker.
func (b *trelloBoard) cards(ctx context.Context, listID, marker string) ([]trelloCard, error) {
	t := b.base
	t.u = t.u.JoinPath("1", "lists", listID, "cards")
	t.u.RawQuery = "fields=id,name,desc"
	var all []trelloCard
	err := b.d.do(ctx, request{method: http.MethodGet, target: t, header: b.header, into: &all})
	if answerWasEmpty(err) {
		// An empty answer (a 204, or a proxy's) lists nothing.
		err, all = nil, nil
	}
	if err != nil {
		return nil, err
	}
	var found []trelloCard
	for _, c := range all {
		if strings.Contains(c.Desc, marker) && isTrelloID(c.ID) {
			found = append(found, c)
		}
	}
	return found, nil
}

func (b *trelloBoard) comment(ctx context.Context, cardID, text string) error {
	return b.do(ctx, http.MethodPost, trelloComment{Text: words.Ellipsize(text, trelloTextMax)}, "1", "cards", cardID, "actions", "comments")
}

// do sends body as JSON to the API path made of elems.
func (b *trelloBoard) do(ctx context.Context, method string, body any, elems ...string) error {
	t := b.base
	t.u = t.u.JoinPath(elems...)
	return b.d.do(ctx, request{method: method, target: t, header: b.header, json: body})
}

// isTrelloID reports whether s is a Trello object id: 24 lowercase
// hexadecimal digits.
func isTrelloID(s string) bool {
	if len(s) != 24 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// trelloCredential reports whether v can go between the quotes of the
// Authorization header: printable ASCII without quotes or backslashes
// (Trello's keys and tokens are letters and digits).
func trelloCredential(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
