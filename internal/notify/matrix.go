package notify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelMatrix, matrixKind{}) }

// matrixKind sends an m.room.message event to a Matrix room (Client-Server
// API v3): a PUT to
// <homeserver>/_matrix/client/v3/rooms/<room id>/send/m.room.message/<txn id>
// with Authorization: Bearer <access token> and the content {msgtype
// "m.text", body (plain text), format "org.matrix.custom.html",
// formatted_body, m.mentions {}}. Both bodies carry the title (linked to
// CheckInfo.DetailsURL when set), the reason, the facts and the last ping
// body excerpt; the empty m.mentions says the message mentions no one, so
// "@room" in a check's name notifies nobody. Downs, ups and every notice
// (re-alert, escalation, failure, maintenance) are sent alike, each title
// saying what happened; a room has nothing to resolve, so an up is a
// message of its own.
//
// A room alias (#ops:example.org) is first resolved to the room's id with
// GET /_matrix/client/v3/directory/room/<alias>. The transaction id is
// derived from the notification (chatNotificationKey), so a retried request is
// posted once and every notification is posted.
type matrixKind struct{}

func (matrixKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Matrix == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.Matrix.AccessTokenSecretRef}
}

// matrixContentMax bounds an event's content as sent: the homeserver
// refuses events over 65536 bytes, signatures and references included.
const matrixContentMax = 32 << 10

type matrixMessage struct {
	MsgType       string         `json:"msgtype"`
	Body          string         `json:"body"`
	Format        string         `json:"format"`
	FormattedBody string         `json:"formatted_body"`
	Mentions      matrixMentions `json:"m.mentions"`
}

// matrixMentions is empty: no user and not the room.
type matrixMentions struct{}

func (matrixKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Matrix
	if s == nil {
		return Permanent(errors.New("the channel has no matrix settings"))
	}
	hs, err := parseTarget(s.Homeserver, false)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(s.Room, "!") && !strings.HasPrefix(s.Room, "#") {
		return Permanent(fmt.Errorf("the room %q is neither a room id (!...) nor an alias (#...)", s.Room))
	}
	h := http.Header{}
	if err := d.setBearer(ctx, h, &s.AccessTokenSecretRef, "the Matrix access token"); err != nil {
		return err
	}
	roomID := s.Room
	if strings.HasPrefix(roomID, "#") {
		if roomID, err = d.matrixResolveAlias(ctx, hs, h, s.Room); err != nil {
			return err
		}
	}
	t := chatAPITarget(hs, false, "_matrix/client/v3/rooms", url.PathEscape(roomID),
		"send/m.room.message", url.PathEscape(matrixTxnID(&d)))
	return d.do(ctx, request{method: http.MethodPut, target: t, header: h, json: matrixContent(&d.Message)})
}

// matrixResolveAlias asks the homeserver's room directory for the id of
// the room an alias names.
func (d *Delivery) matrixResolveAlias(ctx context.Context, hs target, h http.Header, alias string) (string, error) {
	var dir struct {
		RoomID string `json:"room_id"`
	}
	t := chatAPITarget(hs, false, "_matrix/client/v3/directory/room", url.PathEscape(alias))
	if err := d.do(ctx, request{method: http.MethodGet, target: t, header: h, into: &dir}); err != nil {
		return "", fmt.Errorf("resolving the room alias %s: %w", alias, err)
	}
	if !strings.HasPrefix(dir.RoomID, "!") {
		return "", fmt.Errorf("resolving the room alias %s: the homeserver answered no room id", alias)
	}
	return dir.RoomID, nil
}

// matrixTxnID is the event's transaction id: the same for every attempt to
// deliver one notification, which the homeserver then posts once.
func matrixTxnID(d *Delivery) string { return "vigil-" + chatNotificationKey(d) }

func matrixContent(m *Message) matrixMessage {
	size := func(c matrixMessage) int {
		b, _ := json.Marshal(c)
		return len(b)
	}
	return chatFitted(m, matrixContentMax, size, func(m *Message, bodyLimit int) matrixMessage {
		return matrixMessage{
			MsgType:       "m.text",
			Body:          m.plainText(bodyLimit),
			Format:        "org.matrix.custom.html",
			FormattedBody: m.htmlText("<br>", bodyLimit),
		}
	})
}
