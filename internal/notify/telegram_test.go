package notify

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

const telegramToken = "123456789:AAtelegramBotTokenSecret42"

func init() {
	addHTTPKind(httpKindCase{v1.ChannelTelegram, telegramChannel, telegramSecrets}, telegramToken, "AAtelegramBotTokenSecret42")
}

func telegramChannel(base string) *v1.Channel {
	return testChannel(v1.ChannelSpec{Kind: v1.ChannelTelegram, Telegram: &v1.TelegramChannel{
		BotTokenSecretRef: ref("tg", "token"), ChatID: "-1001234567890", URL: base}})
}

func telegramSecrets(string) map[string]string { return map[string]string{"tg/token": telegramToken} }

// The Bot API's sendMessage parameters that Vigil sends.
type telegramWireMessage struct {
	ChatID             json.RawMessage `json:"chat_id"`
	MessageThreadID    int64           `json:"message_thread_id"`
	Text               string          `json:"text"`
	ParseMode          string          `json:"parse_mode"`
	LinkPreviewOptions struct {
		IsDisabled bool `json:"is_disabled"`
	} `json:"link_preview_options"`
}

func TestTelegram(t *testing.T) {
	link := `<a href="https://vigil.example.com/checks/` + fixtureUUID + `">`
	facts := "\n\n<b>Description:</b> Backs up the orders database.\n<b>Namespace:</b> team-a\n<b>Tags:</b> <code>prod db</code>" +
		"\n<b>Period:</b> 1 day\n<b>Total Pings:</b> 42\n<b>Last Ping:</b> Success, 10 minutes ago" +
		"\n\n<b>Last ping body:</b>\n<pre>backup done: 3 files</pre>"
	for _, tc := range []struct {
		name string
		msg  Message
		text string
	}{
		{"down", downMessage(), "<b>" + link + "“Nightly backup” is DOWN.</a></b>\n" +
			"Reason: success signal did not arrive on time, grace time passed." + facts},
		{"up", upMessage(), "<b>" + link + "“Nightly backup” is UP.</a></b>" + facts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusOK, `{"ok":true,"result":{"message_id":1}}`)
			mustSend(t, telegramChannel(srv.URL), tc.msg, telegramSecrets(srv.URL))
			req := srv.only(t)
			if req.Method != http.MethodPost || req.Path != "/bot"+telegramToken+"/sendMessage" || req.RawQuery != "" {
				t.Errorf("request %s %s?%s", req.Method, req.Path, req.RawQuery)
			}
			checkHeader(t, req.Header, "Content-Type", "application/json")
			checkUserAgent(t, req.Header)
			var msg telegramWireMessage
			decodeStrict(t, req.Body, &msg)
			if string(msg.ChatID) != "-1001234567890" || msg.ParseMode != "HTML" || !msg.LinkPreviewOptions.IsDisabled || msg.MessageThreadID != 0 {
				t.Errorf("chat_id %s parse_mode %q link_preview_options %+v message_thread_id %d",
					msg.ChatID, msg.ParseMode, msg.LinkPreviewOptions, msg.MessageThreadID)
			}
			if msg.Text != tc.text {
				t.Errorf("text:\n%s\nwant:\n%s", msg.Text, tc.text)
			}
			if strings.Contains(string(req.Body), "message_thread_id") {
				t.Errorf("a chat without a topic gets message_thread_id: %s", req.Body)
			}
		})
	}
}

func TestTelegramChatAndTopic(t *testing.T) {
	for _, tc := range []struct {
		chatID, wantChatID string
		thread             int64
	}{
		{"123456789", `123456789`, 0},
		{"-1001234567890", `-1001234567890`, 42},
		{"@vigil_alerts", `"@vigil_alerts"`, 0},
	} {
		srv := newRecorder(t, http.StatusOK, `{"ok":true}`)
		ch := telegramChannel(srv.URL)
		ch.Spec.Telegram.ChatID, ch.Spec.Telegram.MessageThreadID = tc.chatID, tc.thread
		mustSend(t, ch, downMessage(), telegramSecrets(srv.URL))
		var msg telegramWireMessage
		decodeStrict(t, srv.only(t).Body, &msg)
		if string(msg.ChatID) != tc.wantChatID || msg.MessageThreadID != tc.thread {
			t.Errorf("chat %q thread %d: sent chat_id %s message_thread_id %d", tc.chatID, tc.thread, msg.ChatID, msg.MessageThreadID)
		}
	}
	for _, bad := range []string{"", "chat", "@abc", "12a", "@ab-cd"} {
		srv := newRecorder(t, http.StatusOK, `{"ok":true}`)
		ch := telegramChannel(srv.URL)
		ch.Spec.Telegram.ChatID = bad
		if err := send(t, ch, downMessage(), telegramSecrets(srv.URL)); err == nil || !IsPermanent(err) {
			t.Errorf("chat id %q: Send = %v, want a permanent error", bad, err)
		}
		if n := len(srv.requests()); n != 0 {
			t.Errorf("chat id %q: %d requests sent", bad, n)
		}
	}
}

// The token is in the URL's path: errors show the API's host only.
func TestTelegramErrorsHideTheToken(t *testing.T) {
	srv := echoServer(t, http.StatusUnauthorized, nil)
	err := send(t, telegramChannel(srv.URL), downMessage(), telegramSecrets(srv.URL))
	want := "telegram: POST " + srv.URL + ": HTTP 401 Unauthorized: "
	if err == nil || !strings.HasPrefix(err.Error(), want) || !IsPermanent(err) {
		t.Fatalf("error %v, want a permanent error starting %q", err, want)
	}
	if strings.Contains(err.Error(), "AAtelegramBotTokenSecret42") {
		t.Errorf("error shows the token: %v", err)
	}
}

func TestTelegramDefaultsToTheBotAPI(t *testing.T) {
	ch := telegramChannel("")
	var asked []string
	refused := errors.New("not now")
	err := Send(t.Context(), Delivery{Channel: ch, Message: downMessage(), Secret: secretMap(telegramSecrets("")),
		Gate: func(endpoint string) error { asked = append(asked, endpoint); return refused }})
	if !errors.Is(err, refused) || len(asked) != 1 || asked[0] != "api.telegram.org:443" {
		t.Errorf("Send = %v, gate asked for %v, want api.telegram.org:443", err, asked)
	}
}

func TestTelegramRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header string
		body   string
		want   time.Duration
	}{
		{"retry_after in the body", "", `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 17","parameters":{"retry_after":17}}`, 17 * time.Second},
		{"Retry-After header", "5", `{"ok":false,"error_code":429,"description":"Too Many Requests"}`, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusTooManyRequests, tc.body)
			if tc.header != "" {
				srv.header.Set("Retry-After", tc.header)
			}
			err := send(t, telegramChannel(srv.URL), downMessage(), telegramSecrets(srv.URL))
			var se *StatusError
			if !errors.As(err, &se) || se.RetryAfter != tc.want || IsPermanent(err) {
				t.Errorf("Send = %v (StatusError %+v), want a retryable error retrying after %s", err, se, tc.want)
			}
		})
	}
}

// A group that became a supergroup has a new id: the error names it.
func TestTelegramMigratedGroup(t *testing.T) {
	srv := newRecorder(t, http.StatusBadRequest, `{"ok":false,"error_code":400,"description":"Bad Request: group chat was upgraded to a supergroup chat","parameters":{"migrate_to_chat_id":-1009876543210}}`)
	err := send(t, telegramChannel(srv.URL), downMessage(), telegramSecrets(srv.URL))
	if err == nil || !IsPermanent(err) || !strings.Contains(err.Error(), "set the Channel's chatID to -1009876543210") {
		t.Fatalf("Send = %v, want a permanent error naming the new chat id", err)
	}
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest {
		t.Errorf("the StatusError is lost: %v", err)
	}
	checkNoCredentials(t, err)

	// Any other 400 is only that.
	srv2 := newRecorder(t, http.StatusBadRequest, `{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}`)
	err = send(t, telegramChannel(srv2.URL), downMessage(), telegramSecrets(srv2.URL))
	if err == nil || !IsPermanent(err) || strings.Contains(err.Error(), "chatID") || !strings.Contains(err.Error(), "chat not found") {
		t.Errorf("Send = %v", err)
	}
}

// Escaped text and long parts stay within Telegram's 4096 characters after
// entity parsing.
func TestTelegramTextLimit(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, `{"ok":true}`)
	m := downMessage()
	m.Check.Name = "<script>&"
	m.Check.Desc = strings.Repeat("<&>ü😀 ", 2000)
	m.Text = strings.Repeat("ä", 4000)
	m.Subject = strings.Repeat("S", 250)
	m.Check.LastPingBody = []byte(strings.Repeat("<b>x</b>\n", 200))
	mustSend(t, telegramChannel(srv.URL), m, telegramSecrets(srv.URL))
	var msg telegramWireMessage
	decodeStrict(t, srv.only(t).Body, &msg)
	if n := telegramTextLen(msg.Text); n > 4096 || n < 1000 {
		t.Errorf("text is %d characters after entity parsing", n)
	}
	for _, want := range []string{strings.Repeat("S", 250), "<b>Namespace:</b> team-a", "&lt;&amp;&gt;ü😀", "…", "<pre>&lt;b&gt;x&lt;/b&gt;"} {
		if !strings.Contains(msg.Text, want) {
			t.Errorf("text lacks %q", want)
		}
	}
	if strings.Contains(msg.Text, "<script>") {
		t.Error("the check's name is not escaped")
	}
}

func TestTelegramTextLen(t *testing.T) {
	for in, want := range map[string]int{
		"plain":                            5,
		"<b>bold</b> &amp; <code>x</code>": 8,
		"&lt;b&gt;":                        3,
		"😀":                                2, // one character, two UTF-16 code units
		`<a href="https://e.com/?a=1&amp;b=2">link</a>`: 4,
	} {
		if got := telegramTextLen(in); got != want {
			t.Errorf("telegramTextLen(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestTelegramSettings(t *testing.T) {
	checkSettingsAndSecretRefs(t, telegramChannel(""), ref("tg", "token"))
}
