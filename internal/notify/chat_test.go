package notify

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// chatChannel is a Slack, Teams or Discord channel whose webhook URL (in a
// Secret) points at srv.
func chatChannel(kind v1.ChannelKind) *v1.Channel {
	iw := &v1.IncomingWebhookChannel{URLSecretRef: ref("chat", "url")}
	spec := v1.ChannelSpec{Kind: kind}
	switch kind {
	case v1.ChannelSlack:
		spec.Slack = iw
	case v1.ChannelMSTeams:
		spec.MSTeams = iw
	case v1.ChannelDiscord:
		spec.Discord = &v1.DiscordChannel{IncomingWebhookChannel: *iw}
	}
	return testChannel(spec)
}

const chatToken = "T0001/B0002/XyZsecretTokenValue42"

func chatSecrets(srv *recorder) map[string]string {
	return map[string]string{"chat/url": srv.URL + "/services/" + chatToken}
}

// Slack's incoming-webhook message with legacy attachments.
type slackWireMessage struct {
	Username    string `json:"username"`
	Text        string `json:"text"`
	Attachments []struct {
		Color     string   `json:"color"`
		Fallback  string   `json:"fallback"`
		MrkdwnIn  []string `json:"mrkdwn_in"`
		Title     string   `json:"title"`
		TitleLink string   `json:"title_link"`
		Text      string   `json:"text"`
		Ts        int64    `json:"ts"`
		Fields    []struct {
			Title string `json:"title"`
			Value string `json:"value"`
			Short bool   `json:"short"`
		} `json:"fields"`
	} `json:"attachments"`
}

func TestSlack(t *testing.T) {
	for _, tc := range []struct {
		name      string
		msg       Message
		color     string
		title     string
		text      string
		fallback  string
		lastField string
	}{
		{"down", downMessage(), "danger", "“Nightly backup” is DOWN.",
			"Reason: success signal did not arrive on time, grace time passed.", `The check "Nightly backup" is DOWN.`, "Last Ping Body"},
		{"up", upMessage(), "good", "“Nightly backup” is UP.", "", `The check "Nightly backup" is UP.`, "Last Ping Body"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusOK, "ok")
			mustSend(t, chatChannel(v1.ChannelSlack), tc.msg, chatSecrets(srv))
			req := srv.only(t)
			if req.Method != http.MethodPost || req.Path != "/services/"+chatToken {
				t.Errorf("request %s %s", req.Method, req.Path)
			}
			checkHeader(t, req.Header, "Content-Type", "application/json")
			checkUserAgent(t, req.Header)

			var msg slackWireMessage
			decodeStrict(t, req.Body, &msg)
			if msg.Username != "Vigil" || len(msg.Attachments) != 1 {
				t.Fatalf("message %+v", msg)
			}
			a := msg.Attachments[0]
			if a.Color != tc.color || a.Title != tc.title || a.Text != tc.text || a.Fallback != tc.fallback {
				t.Errorf("attachment color %q title %q text %q fallback %q", a.Color, a.Title, a.Text, a.Fallback)
			}
			if a.TitleLink != tc.msg.Check.DetailsURL || a.Ts != fixedFlip.Unix() || len(a.MrkdwnIn) != 1 || a.MrkdwnIn[0] != "fields" {
				t.Errorf("attachment link %q ts %d mrkdwn_in %v", a.TitleLink, a.Ts, a.MrkdwnIn)
			}
			fields := map[string]string{}
			var order []string
			for _, f := range a.Fields {
				fields[f.Title] = f.Value
				order = append(order, f.Title)
				if long := f.Title == "Description" || f.Title == "Last Ping Body"; f.Short == long {
					t.Errorf("field %q short = %v", f.Title, f.Short)
				}
			}
			wantOrder := "Description Namespace Tags Period Total Pings Last Ping Last Ping Body"
			if got := strings.Join(order, " "); got != wantOrder {
				t.Errorf("fields %q, want %q", got, wantOrder)
			}
			for title, want := range map[string]string{
				"Description": "Backs up the orders database.", "Namespace": "team-a", "Tags": "`prod` `db`",
				"Period": "1 day", "Total Pings": "42", "Last Ping": "Success, 10 minutes ago",
				"Last Ping Body": "```\nbackup done: 3 files\n```",
			} {
				if fields[title] != want {
					t.Errorf("field %q = %q, want %q", title, fields[title], want)
				}
			}
		})
	}
}

func TestSlackEscapingCronAndNoBody(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "ok")
	m := downMessage()
	m.Reason = "fail"
	m.Check.Name = "<b>&co</b>"
	m.Check.Schedule, m.Check.TZ = "*/5 * * * *", "Europe/Riga"
	m.Check.LastPingBody = []byte("has ``` fences")
	m.Check.DetailsURL = ""
	exit := 2
	m.Check.ExitStatus, m.Check.LastPingType = &exit, v1.PingFail
	mustSend(t, chatChannel(v1.ChannelSlack), m, chatSecrets(srv))
	var msg slackWireMessage
	decodeStrict(t, srv.only(t).Body, &msg)
	a := msg.Attachments[0]
	if a.Title != "“&lt;b&gt;&amp;co&lt;/b&gt;” is DOWN." || a.Text != "Reason: received a failure signal." || a.TitleLink != "" {
		t.Errorf("title %q text %q link %q", a.Title, a.Text, a.TitleLink)
	}
	fields := map[string]string{}
	for _, f := range a.Fields {
		fields[f.Title] = f.Value
	}
	if fields["Schedule"] != "\u034f*/5 \u034f* \u034f* \u034f* \u034f*" || fields["Time Zone"] != "Europe/Riga" {
		t.Errorf("schedule %q tz %q", fields["Schedule"], fields["Time Zone"])
	}
	if _, ok := fields["Period"]; ok {
		t.Error("a cron check has a Period field")
	}
	if _, ok := fields["Last Ping Body"]; ok {
		t.Error("a body with ``` is shown")
	}
	if fields["Last Ping"] != "Exit status 2, 10 minutes ago" {
		t.Errorf("Last Ping %q", fields["Last Ping"])
	}
}

// The Microsoft Teams workflow webhook message: one Adaptive Card attachment.
type teamsWireMessage struct {
	Type        string `json:"type"`
	Attachments []struct {
		ContentType string  `json:"contentType"`
		ContentURL  *string `json:"contentUrl"`
		Content     struct {
			Schema       string            `json:"$schema"`
			Type         string            `json:"type"`
			Version      string            `json:"version"`
			FallbackText string            `json:"fallbackText"`
			MSTeams      map[string]string `json:"msteams"`
			Body         []map[string]any  `json:"body"`
			Actions      []struct {
				Type  string `json:"type"`
				Title string `json:"title"`
				URL   string `json:"url"`
			} `json:"actions"`
		} `json:"content"`
	} `json:"attachments"`
}

func TestMSTeams(t *testing.T) {
	for _, tc := range []struct {
		name, heading, color string
		msg                  Message
		reason               bool
	}{
		{"down", "“Nightly backup” is DOWN.", "Attention", downMessage(), true},
		{"up", "“Nightly backup” is UP.", "Good", upMessage(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusAccepted, "")
			mustSend(t, chatChannel(v1.ChannelMSTeams), tc.msg, chatSecrets(srv))
			req := srv.only(t)
			checkHeader(t, req.Header, "Content-Type", "application/json")
			checkUserAgent(t, req.Header)
			var msg teamsWireMessage
			decodeStrict(t, req.Body, &msg)
			if msg.Type != "message" || len(msg.Attachments) != 1 {
				t.Fatalf("message %s", req.Body)
			}
			att := msg.Attachments[0]
			card := att.Content
			if att.ContentType != "application/vnd.microsoft.card.adaptive" || att.ContentURL != nil ||
				card.Type != "AdaptiveCard" || card.Schema != "http://adaptivecards.io/schemas/adaptive-card.json" ||
				card.Version == "" || card.FallbackText != tc.heading {
				t.Errorf("attachment %+v", att)
			}
			types := []string{}
			for _, el := range card.Body {
				typ, _ := el["type"].(string)
				if typ == "" {
					t.Errorf("card element without a type: %v", el)
				}
				types = append(types, typ)
			}
			want := "TextBlock TextBlock FactSet TextBlock CodeBlock"
			if !tc.reason {
				want = "TextBlock FactSet TextBlock CodeBlock"
			}
			if got := strings.Join(types, " "); got != want {
				t.Errorf("card body %q, want %q", got, want)
			}
			if card.Body[0]["text"] != tc.heading || card.Body[0]["color"] != tc.color {
				t.Errorf("heading %v", card.Body[0])
			}
			facts := map[string]string{}
			var factSet []any
			for _, el := range card.Body {
				if el["type"] == "FactSet" {
					factSet, _ = el["facts"].([]any)
				}
			}
			for _, f := range factSet {
				fm := f.(map[string]any)
				title, ok1 := fm["title"].(string)
				value, ok2 := fm["value"].(string)
				if !ok1 || !ok2 || len(fm) != 2 {
					t.Errorf("fact %v needs exactly a title and a value", fm)
				}
				facts[title] = value
			}
			if facts["Period:"] != "1 day" || facts["Last Ping:"] != "Success, 10 minutes ago" || facts["Tags:"] != "prod db" || facts["Namespace:"] != "team-a" {
				t.Errorf("facts %v", facts)
			}
			last := card.Body[len(card.Body)-1]
			if last["codeSnippet"] != "backup done: 3 files" || last["language"] != "PlainText" {
				t.Errorf("code block %v", last)
			}
			if len(card.Actions) != 1 || card.Actions[0].Type != "Action.OpenUrl" || card.Actions[0].URL != tc.msg.Check.DetailsURL {
				t.Errorf("actions %+v", card.Actions)
			}
		})
	}
}

// A check's name, description and reason are text on a Teams card, never
// Markdown: a name that is a link does not become one.
func TestMSTeamsEscapesMarkdown(t *testing.T) {
	m := downMessage()
	m.Check.Name = "[x](https://example.invalid/x)"
	m.Check.Desc = "**urgent** see <https://example.invalid/y>"
	srv := newRecorder(t, http.StatusAccepted, "")
	mustSend(t, chatChannel(v1.ChannelMSTeams), m, chatSecrets(srv))
	var msg teamsWireMessage
	decodeStrict(t, srv.only(t).Body, &msg)
	card := msg.Attachments[0].Content
	heading, _ := card.Body[0]["text"].(string)
	if !strings.Contains(heading, `\[x\](https://example.invalid/x)`) {
		t.Errorf("heading %q: the name is not escaped", heading)
	}
	if card.FallbackText != "“[x](https://example.invalid/x)” is DOWN." {
		t.Errorf("fallback text, plain: %q", card.FallbackText)
	}
	desc := ""
	for _, el := range card.Body {
		if el["type"] != "FactSet" {
			continue
		}
		for _, f := range el["facts"].([]any) {
			if fm := f.(map[string]any); fm["title"] == "Description:" {
				desc, _ = fm["value"].(string)
			}
		}
	}
	if desc != `\*\*urgent\*\* see \<https://example.invalid/y\>` {
		t.Errorf("description %q", desc)
	}
}

// Teams refuses a message over about 28 KB: the description, the
// Channel's own text and the ping body are cut until the JSON fits, and
// what is sent is still a whole card. Every "<" costs 8 bytes once escaped
// for Markdown (a backslash before it) and JSON (both as \u sequences).
func TestMSTeamsPayloadFits(t *testing.T) {
	m := downMessage()
	m.Check.Desc = strings.Repeat("<", 10000)
	m.Text = strings.Repeat("<", 4000)
	m.Check.LastPingBody = []byte(strings.Repeat("<&> ", 50000))
	srv := newRecorder(t, http.StatusAccepted, "")
	mustSend(t, chatChannel(v1.ChannelMSTeams), m, chatSecrets(srv))
	body := srv.only(t).Body
	if len(body) > teamsPayloadMax || !json.Valid(body) {
		t.Fatalf("payload of %d bytes (at most %d), valid JSON %v", len(body), teamsPayloadMax, json.Valid(body))
	}
	var msg teamsWireMessage
	decodeStrict(t, body, &msg)
	card := msg.Attachments[0].Content
	if card.Body[0]["text"] != "“Nightly backup” is DOWN." || card.FallbackText != "“Nightly backup” is DOWN." {
		t.Errorf("heading %v, fallback %q", card.Body[0]["text"], card.FallbackText)
	}
	var desc, code string
	for _, el := range card.Body {
		switch el["type"] {
		case "FactSet":
			for _, f := range el["facts"].([]any) {
				if fm := f.(map[string]any); fm["title"] == "Description:" {
					desc, _ = fm["value"].(string)
				}
			}
		case "CodeBlock":
			code, _ = el["codeSnippet"].(string)
		}
	}
	if !strings.HasPrefix(desc, `\<\<`) || !strings.HasSuffix(desc, "…") {
		t.Errorf("description not cut: %d bytes", len(desc))
	}
	if !strings.HasSuffix(code, "[truncated]") {
		t.Errorf("ping body not cut: …%q", code[max(0, len(code)-20):])
	}
	if len(card.Actions) != 1 {
		t.Errorf("actions %+v: the link to the check was dropped", card.Actions)
	}
}

// Discord's execute-webhook JSON.
type discordWireMessage struct {
	Username        string `json:"username"`
	Content         string `json:"content"`
	AllowedMentions struct {
		Parse []string `json:"parse"`
	} `json:"allowed_mentions"`
	Embeds []struct {
		Title       string `json:"title"`
		URL         string `json:"url"`
		Description string `json:"description"`
		Color       int    `json:"color"`
		Timestamp   string `json:"timestamp"`
		Footer      struct {
			Text string `json:"text"`
		} `json:"footer"`
		Fields []struct {
			Name   string `json:"name"`
			Value  string `json:"value"`
			Inline bool   `json:"inline"`
		} `json:"fields"`
	} `json:"embeds"`
	ThreadName *string `json:"thread_name"`
}

// checkDiscordLimits applies Discord's documented message limits.
func checkDiscordLimits(t *testing.T, msg *discordWireMessage) {
	t.Helper()
	n := utf8.RuneCountInString
	if n(msg.Content) > 2000 || len(msg.Embeds) > 10 {
		t.Errorf("content %d characters, %d embeds", n(msg.Content), len(msg.Embeds))
	}
	for _, e := range msg.Embeds {
		total := n(e.Title) + n(e.Description) + n(e.Footer.Text)
		if n(e.Title) > 256 || n(e.Description) > 4096 || len(e.Fields) > 25 {
			t.Errorf("embed title %d, description %d, %d fields", n(e.Title), n(e.Description), len(e.Fields))
		}
		for _, f := range e.Fields {
			total += n(f.Name) + n(f.Value)
			if n(f.Name) > 256 || n(f.Value) > 1024 || f.Name == "" || f.Value == "" {
				t.Errorf("field %q: %d characters", f.Name, n(f.Value))
			}
		}
		if total > 6000 {
			t.Errorf("embed has %d characters", total)
		}
		if _, err := time.Parse(time.RFC3339, e.Timestamp); err != nil {
			t.Errorf("timestamp %q: %v", e.Timestamp, err)
		}
	}
}

func TestDiscord(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		color         int
		msg           Message
		description   string
	}{
		{"down", "“Nightly backup” is DOWN.", 0xd9534f, downMessage(),
			"Reason: success signal did not arrive on time, grace time passed.\n\nBacks up the orders database."},
		{"up", "“Nightly backup” is UP.", 0x5cb85c, upMessage(), "Backs up the orders database."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusNoContent, "")
			mustSend(t, chatChannel(v1.ChannelDiscord), tc.msg, chatSecrets(srv))
			req := srv.only(t)
			checkHeader(t, req.Header, "Content-Type", "application/json")
			checkUserAgent(t, req.Header)
			var msg discordWireMessage
			decodeStrict(t, req.Body, &msg)
			checkDiscordLimits(t, &msg)
			if msg.Content != tc.content || msg.Username != "Vigil" || msg.AllowedMentions.Parse == nil || len(msg.AllowedMentions.Parse) != 0 {
				t.Errorf("content %q username %q allowed_mentions %v", msg.Content, msg.Username, msg.AllowedMentions.Parse)
			}
			if len(msg.Embeds) != 1 {
				t.Fatalf("%d embeds", len(msg.Embeds))
			}
			e := msg.Embeds[0]
			if e.Title != "Nightly backup" || e.URL != tc.msg.Check.DetailsURL || e.Color != tc.color || e.Description != tc.description ||
				e.Timestamp != "2024-05-01T12:00:00Z" || e.Footer.Text != "Vigil" {
				t.Errorf("embed %+v", e)
			}
			fields := map[string]string{}
			for _, f := range e.Fields {
				fields[f.Name] = f.Value
			}
			if fields["Tags"] != "`prod` `db`" || fields["Period"] != "1 day" || fields["Last Ping"] != "Success, 10 minutes ago" ||
				fields["Last Ping Body"] != "```\nbackup done: 3 files\n```" {
				t.Errorf("fields %v", fields)
			}
		})
	}
}

// A forum or media channel's webhook refuses a message without
// thread_name; a text channel's is sent none.
func TestDiscordThreadName(t *testing.T) {
	for _, tc := range []struct {
		name, threadName string
	}{
		{"forum channel", "Vigil alerts"},
		{"text channel", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newRecorder(t, http.StatusNoContent, "")
			ch := chatChannel(v1.ChannelDiscord)
			ch.Spec.Discord.ThreadName = tc.threadName
			mustSend(t, ch, downMessage(), chatSecrets(srv))
			var msg discordWireMessage
			decodeStrict(t, srv.only(t).Body, &msg)
			switch {
			case tc.threadName == "" && msg.ThreadName != nil:
				t.Errorf("thread_name %q sent for a channel without threadName", *msg.ThreadName)
			case tc.threadName != "" && (msg.ThreadName == nil || *msg.ThreadName != tc.threadName):
				t.Errorf("thread_name %v, want %q", msg.ThreadName, tc.threadName)
			}
			if msg.Content != "“Nightly backup” is DOWN." || len(msg.Embeds) != 1 {
				t.Errorf("content %q, %d embeds", msg.Content, len(msg.Embeds))
			}
		})
	}
}

func TestDiscordEscapesAndTruncates(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "")
	m := downMessage()
	m.Check.Name = "@everyone *urgent*"
	m.Check.Desc = strings.Repeat("long description ", 500)
	m.Check.LastPingBody = []byte(strings.Repeat("x", 5000))
	mustSend(t, chatChannel(v1.ChannelDiscord), m, chatSecrets(srv))
	var msg discordWireMessage
	decodeStrict(t, srv.only(t).Body, &msg)
	checkDiscordLimits(t, &msg)
	if msg.Embeds[0].Title != `@everyone \*urgent\*` {
		t.Errorf("title %q", msg.Embeds[0].Title)
	}
	for _, f := range msg.Embeds[0].Fields {
		if f.Name == "Last Ping Body" && !strings.HasSuffix(f.Value, "[truncated]\n```") {
			t.Errorf("body field not truncated: …%s", f.Value[len(f.Value)-30:])
		}
	}
}

func TestTestMessagesAreMarked(t *testing.T) {
	srv := newRecorder(t, http.StatusOK, "ok")
	m := downMessage()
	m.Test = true
	mustSend(t, chatChannel(v1.ChannelSlack), m, chatSecrets(srv))
	var msg slackWireMessage
	decodeStrict(t, srv.only(t).Body, &msg)
	if got := msg.Attachments[0].Title; got != "[Test] “Nightly backup” is DOWN." {
		t.Errorf("title %q", got)
	}
}

func TestDiscordEscape(t *testing.T) {
	for in, want := range map[string]string{
		"db-backup (nightly)":     "db-backup (nightly)",
		"# big\n- item\nok":       "\\# big\n\\- item\nok",
		"[x](http://e) a_b *c* `": "\\[x\\](http://e) a\\_b \\*c\\* \\`",
		`a\b ~s~ ||sp|| > q <@1>`: `a\\b \~s\~ \|\|sp\|\| \> q \<@1\>`,
	} {
		if got := discordEscape(in); got != want {
			t.Errorf("discordEscape(%q) = %q, want %q", in, got, want)
		}
	}
}
