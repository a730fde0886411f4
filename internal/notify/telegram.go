package notify

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"unicode/utf16"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelTelegram, telegramKind{}) }

// telegramKind sends a message through a Telegram bot (Bot API
// sendMessage): a POST to <url>/bot<token>/sendMessage with chat_id (the
// numeric id, or a public channel's @username), message_thread_id (a forum
// topic, when set), parse_mode "HTML", link previews disabled, and as text
// the title in bold (linked to CheckInfo.DetailsURL when set), the reason,
// one line per fact and the last ping body excerpt in a pre block. Downs,
// ups and every notice (re-alert, escalation, failure, maintenance) are sent
// alike, each title saying what happened; a chat has nothing to resolve, so
// an up is a message of its own.
//
// The token is part of the URL, so errors show only the API's host. A 400
// answer with parameters.migrate_to_chat_id (the group became a
// supergroup) is a permanent error naming the new chat id, to set as the
// Channel's chatID; a 429 answer's parameters.retry_after is honoured.
type telegramKind struct{}

// TelegramAPIURL is the Bot API's base URL, used when a channel sets none.
const TelegramAPIURL = "https://api.telegram.org"

// telegramTextMax bounds a message's text: Telegram takes 4096 characters
// (UTF-16 code units) after entity parsing; a margin stays free.
const telegramTextMax = 4000

func (telegramKind) SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef {
	if spec.Telegram == nil {
		return nil
	}
	return []v1.SecretKeyRef{spec.Telegram.BotTokenSecretRef}
}

type telegramSendMessage struct {
	ChatID             any                        `json:"chat_id"`
	MessageThreadID    int64                      `json:"message_thread_id,omitempty"`
	Text               string                     `json:"text"`
	ParseMode          string                     `json:"parse_mode"`
	LinkPreviewOptions telegramLinkPreviewOptions `json:"link_preview_options"`
}

type telegramLinkPreviewOptions struct {
	IsDisabled bool `json:"is_disabled"`
}

var (
	telegramNumericChat = regexp.MustCompile(`^-?[0-9]{1,20}$`)
	telegramUsername    = regexp.MustCompile(`^@[A-Za-z][A-Za-z0-9_]{3,31}$`)
	// telegramMigrated finds the new chat id in the excerpt of a 400 answer.
	telegramMigrated = regexp.MustCompile(`"migrate_to_chat_id"\s*:\s*(-?[0-9]+)`)
)

func (telegramKind) Send(ctx context.Context, d Delivery) error {
	s := d.Channel.Spec.Telegram
	if s == nil {
		return Permanent(errors.New("the channel has no telegram settings"))
	}
	chatID, err := telegramChatID(s.ChatID)
	if err != nil {
		return err
	}
	base, err := parseTarget(cmp.Or(s.URL, TelegramAPIURL), false)
	if err != nil {
		return err
	}
	token, err := d.secret(ctx, s.BotTokenSecretRef)
	if err != nil {
		return err
	}
	// The URL holds the token: errors show it as a Secret's URL, by host.
	t := chatAPITarget(base, true, "bot"+url.PathEscape(token), "sendMessage")
	body := telegramSendMessage{
		ChatID:             chatID,
		MessageThreadID:    s.MessageThreadID,
		Text:               telegramText(&d.Message),
		ParseMode:          "HTML",
		LinkPreviewOptions: telegramLinkPreviewOptions{IsDisabled: true},
	}
	err = d.do(ctx, request{method: http.MethodPost, target: t, json: body})
	var se *StatusError
	if errors.As(err, &se) && se.Code == http.StatusBadRequest {
		if m := telegramMigrated.FindStringSubmatch(se.Body); m != nil {
			return Permanent(fmt.Errorf("the group chat became the supergroup %s: set the Channel's chatID to %s: %w", m[1], m[1], err))
		}
	}
	return err
}

// telegramChatID is the chat_id to send: a JSON number for a numeric id
// (exactly as written, whatever its size), the @username as a string.
func telegramChatID(id string) (any, error) {
	switch {
	case telegramNumericChat.MatchString(id):
		return json.Number(id), nil
	case telegramUsername.MatchString(id):
		return id, nil
	}
	return nil, Permanent(fmt.Errorf("the chat id %q is neither a number nor a @username", id))
}

// telegramText is the message in Telegram's HTML, within its length limit.
func telegramText(m *Message) string {
	return chatFitted(m, telegramTextMax, telegramTextLen, func(m *Message, bodyLimit int) string {
		return m.htmlText("\n", bodyLimit)
	})
}

var telegramTag = regexp.MustCompile(`<[^>]*>`)

// telegramTextLen is the length Telegram checks: the text without its tags,
// entities decoded, in UTF-16 code units.
func telegramTextLen(s string) int {
	return len(utf16.Encode([]rune(html.UnescapeString(telegramTag.ReplaceAllString(s, "")))))
}
