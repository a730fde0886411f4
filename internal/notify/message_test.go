package notify

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
)

func TestLastPingText(t *testing.T) {
	three, zero := 3, 0
	for _, tc := range []struct {
		typ  v1.PingType
		exit *int
		want string
	}{
		{v1.PingSuccess, nil, "Success, 10 minutes ago"},
		{v1.PingSuccess, &zero, "Success, 10 minutes ago"},
		{v1.PingFail, nil, "Failure, 10 minutes ago"},
		{v1.PingFail, &three, "Exit status 3, 10 minutes ago"},
	} {
		c := downMessage().Check
		c.LastPingType, c.ExitStatus = tc.typ, tc.exit
		if got := c.lastPingText(); got != tc.want {
			t.Errorf("%s/%v: %q, want %q", tc.typ, tc.exit, got, tc.want)
		}
	}
	if got := (&CheckInfo{}).lastPingText(); got != "Never" {
		t.Errorf("never pinged: %q", got)
	}
}

func TestBodyExcerpt(t *testing.T) {
	c := CheckInfo{LastPingBody: []byte("héllo wörld \xff\n\n")}
	if got := c.bodyExcerpt(100); got != "héllo wörld \uFFFD" {
		t.Errorf("excerpt %q", got)
	}
	// Cut on a character boundary: "é" is two bytes.
	if got := c.bodyExcerpt(2); got != "h\n[truncated]" {
		t.Errorf("cut excerpt %q", got)
	}
	if got := (&CheckInfo{LastPingBody: []byte(" \n ")}).bodyExcerpt(100); got != "" {
		t.Errorf("blank body excerpt %q", got)
	}
}

func TestNameFallbacks(t *testing.T) {
	m := Message{Check: CheckInfo{Object: "obj", UUID: "u"}}
	if m.Check.name() != "obj" {
		t.Error("the object's name stands in for an empty name")
	}
	m.Check.Object = ""
	if m.Check.name() != "u" {
		t.Error("the UUID stands in for an empty object name")
	}
	m.Time = time.Time{}
	if !m.flipTime().Equal(fixedNow) || !strings.Contains(m.headline(), "DOWN") {
		t.Errorf("flip time %s headline %q", m.flipTime(), m.headline())
	}
}

// TestStory: headlines, subjects and reasons tell what happened and for
// how long, for flips and for the notices about a check still down.
func TestStory(t *testing.T) {
	down := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	tests := []struct {
		name                  string
		m                     Message
		headline, subject, rs string
	}{
		{"a down", Message{Time: down, Reason: "timeout"},
			"“backup” is DOWN.", "DOWN | backup", "success signal did not arrive on time, grace time passed"},
		{"a down after Vigil's absence says why the grace began late", Message{Time: down, Reason: "timeout",
			Detail: "it fell due while Vigil was away; no ping came in the 1 minute of grace after Vigil was back at 2026-11-28 02:59:00 UTC"},
			"“backup” is DOWN.", "DOWN | backup", "success signal did not arrive on time, grace time passed (it fell due while Vigil was away; " +
				"no ping came in the 1 minute of grace after Vigil was back at 2026-11-28 02:59:00 UTC)"},
		{"an up says how long it was down", Message{Up: true, Time: down.Add(2*time.Hour + 5*time.Minute), Since: down},
			"“backup” is UP (was down for 2 hours 5 minutes).", "UP | backup", ""},
		{"a re-alert says for how long", Message{Time: down.Add(time.Hour), Since: down, Notice: monitor.NoticeRealert, Reason: "fail"},
			"“backup” is still DOWN (for 1 hour).", "STILL DOWN | backup", "received a failure signal"},
		{"an escalation", Message{Time: down.Add(30 * time.Minute), Since: down, Notice: monitor.NoticeEscalation, Reason: "runtime", Detail: "ran longer than 2 hours"},
			"“backup” is still DOWN (for 30 minutes).", "STILL DOWN | backup", "the run ran longer than 2 hours"},
		{"a failure below the threshold", Message{Time: down, Notice: monitor.NoticeFailure, Reason: "short", Detail: "1 of 3 failures in a row"},
			"“backup” had a failed run (1 of 3 failures in a row).", "FAILURE | backup", ""},
		{"a too-short run", Message{Time: down, Reason: "short", Detail: "finished in 3 seconds, expected at least 5 minutes"},
			"“backup” is DOWN.", "DOWN | backup", "the run finished in 3 seconds, expected at least 5 minutes"},
		{"a maintenance window starts", Message{Time: down, Notice: monitor.NoticeMaintenanceStart, Held: "nightly", Until: down.Add(2 * time.Hour)},
			"“backup” is in maintenance (window nightly holds its notifications until 2026-11-28 05:00 UTC).", "MAINTENANCE | backup", ""},
		{"a maintenance window ends", Message{Time: down, Notice: monitor.NoticeMaintenanceEnd, Held: "nightly"},
			"“backup” is out of maintenance (window nightly ended).", "MAINTENANCE ENDED | backup", ""},
		{"an SLA breached", Message{Time: down, Notice: monitor.NoticeSLABreach, Reason: "SuccessRateLow", Detail: "success rate 80% over 7 days, below 95%"},
			"“backup” breached its SLA (success rate 80% over 7 days, below 95%).", "SLA BREACHED | backup", ""},
		{"an SLA met again", Message{Time: down, Notice: monitor.NoticeSLAMet, Detail: "success rate 96% over 7 days"},
			"“backup” meets its SLA again (success rate 96% over 7 days).", "SLA MET | backup", ""},
		{"flapping", Message{Time: down, Notice: monitor.NoticeFlapping,
			Detail: "11 state changes within 1 hour; its notifications are held until it keeps one state for 10 minutes"},
			"“backup” is flapping (11 state changes within 1 hour; its notifications are held until it keeps one state for 10 minutes).",
			"FLAPPING | backup", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.m.Check = CheckInfo{Namespace: "team-a", Object: "backup"}
			if got := tt.m.headline(); got != tt.headline {
				t.Errorf("headline %q, want %q", got, tt.headline)
			}
			if got := emailSubject(&tt.m); got != tt.subject {
				t.Errorf("subject %q, want %q", got, tt.subject)
			}
			if got := tt.m.reasonText(); got != tt.rs {
				t.Errorf("reason %q, want %q", got, tt.rs)
			}
		})
	}
}

// TestFailureNoticeOpensNoIncident: a failed run below a check's threshold
// reaches people, never an incident tracker (the check is up).
func TestFailureNoticeOpensNoIncident(t *testing.T) {
	for _, kind := range []v1.ChannelKind{v1.ChannelPagerDuty, v1.ChannelAlertmanager} {
		ch := &v1.Channel{Spec: v1.ChannelSpec{Kind: kind}} // no settings: sending would fail
		for _, notice := range []monitor.Notice{monitor.NoticeFailure, monitor.NoticeMaintenanceStart, monitor.NoticeMaintenanceEnd, monitor.NoticeSLABreach, monitor.NoticeSLAMet, monitor.NoticeFlapping} {
			err := Send(context.Background(), Delivery{Channel: ch, Message: Message{Notice: notice, Check: CheckInfo{Object: "backup"}}})
			if err != nil {
				t.Errorf("%s, %s: %v, want nothing sent", kind, notice, err)
			}
		}
		if err := Send(context.Background(), Delivery{Channel: ch, Message: Message{Check: CheckInfo{Object: "backup"}}}); err == nil {
			t.Errorf("%s: a down with no settings sent nothing and no error", kind)
		}
	}
}

// TestHeldSays: a notification a maintenance window held says so, in the
// facts every chat and email kind shows.
func TestHeldSays(t *testing.T) {
	m := Message{Time: time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC), Reason: "fail", Held: "nightly-restore",
		Check: CheckInfo{Namespace: "team-a", Object: "backup"}}
	last := m.facts()[len(m.facts())-1]
	if last.Title != "Maintenance" || last.Value != "Held by maintenance window nightly-restore; sent when it ended, since the check is still down." {
		t.Errorf("facts end with %+v", last)
	}
	m.Held = ""
	for _, f := range m.facts() {
		if f.Title == "Maintenance" || f.Title == "Flapping" {
			t.Errorf("a notification nothing held says %+v", f)
		}
	}
	m.Flapped = true
	last = m.facts()[len(m.facts())-1]
	if last.Title != "Flapping" || last.Value != "Held while the check was flapping; sent now that it has kept one state, since it is still down." {
		t.Errorf("held by flapping, the facts end with %+v", last)
	}
}

// TestTemplate: a Channel's own subject and body take the headline's and
// the reason line's places in every kind but the webhook, with the
// webhook's variables; what the template leaves unset stays Vigil's.
func TestTemplate(t *testing.T) {
	exit := 3
	base := Message{Time: time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC), Reason: "fail",
		Check: CheckInfo{Namespace: "team-a", Object: "backup", Name: "Nightly backup", Tags: []string{"db", "prod"},
			ExitStatus: &exit, LastPingBody: []byte("pg_dump: connection refused\n"), DetailsURL: "https://vigil.example/checks/x"}}
	m := base
	m.applyTemplate(&v1.MessageTemplate{Subject: "[$TAG2] $NAME\nis $STATUS", Body: "Exit $EXITSTATUS: $BODY\nSee $DETAILS_URL"})
	if m.Subject != "[prod] Nightly backup is down" {
		t.Errorf("subject %q", m.Subject)
	}
	// $BODY is the body as it came, its line end included (as the webhook's).
	if want := "Exit 3: pg_dump: connection refused\n\nSee https://vigil.example/checks/x"; m.Text != want {
		t.Errorf("text %q, want %q", m.Text, want)
	}
	payloads := map[string]string{
		"email subject": emailSubject(&m),
		"slack":         mustJSON(t, slackPayload(&m)),
		"discord":       mustJSON(t, discordPayload(&m)),
		"msteams":       mustJSON(t, teamsPayload(&m)),
		"ntfy":          ntfyBody(&m),
		"pagerduty":     mustJSON(t, pagerDutyEvent(&m, "key")),
		"alertmanager":  mustJSON(t, alertmanagerAlert(&m, nil)),
	}
	for kind, p := range payloads {
		subject, body := "[prod] Nightly backup is down", "Exit 3: pg_dump: connection refused"
		switch kind { // markdown, escaped
		case "discord":
			subject, body = discordEscape(subject), discordEscape(body)
		case "msteams":
			subject, body = markdownEscape(subject), markdownEscape(body)
		}
		if kind != "ntfy" && !strings.Contains(p, mustJSONText(t, subject)) {
			t.Errorf("%s does not carry the subject: %s", kind, p)
		}
		if kind != "email subject" && !strings.Contains(p, mustJSONText(t, body)) {
			t.Errorf("%s does not carry the body: %s", kind, p)
		}
		if strings.Contains(p, "Reason: received a failure signal") {
			t.Errorf("%s kept Vigil's reason line in place of the template's: %s", kind, p)
		}
	}
	// Only a subject: the reason line stays Vigil's; a test is marked.
	m = base
	m.Test = true
	m.applyTemplate(&v1.MessageTemplate{Subject: "$SUMMARY"})
	if got := emailSubject(&m); got != "[Test] Nightly backup is DOWN" {
		t.Errorf("subject %q", got)
	}
	if got := m.reasonLine(); got != "Reason: received a failure signal." {
		t.Errorf("reason line %q", got)
	}
	// Bounds: a subject of one line within 250 bytes, a body within 4,000.
	m = base
	m.applyTemplate(&v1.MessageTemplate{Subject: strings.Repeat("é", 300), Body: strings.Repeat("$NAME ", 1000)})
	if len(m.Subject) > maxSubject || len(m.Text) > maxText || !utf8.ValidString(m.Subject) {
		t.Errorf("subject %d bytes, text %d bytes", len(m.Subject), len(m.Text))
	}
	// A hostile template (the body a ping sends, six times as long in
	// JSON, a thousand times over: 60 MB) is cut as it expands.
	m = base
	m.Check.LastPingBody = []byte(strings.Repeat("\x01", 10_000))
	m.applyTemplate(&v1.MessageTemplate{Subject: strings.Repeat("$BODY_JSON", 100), Body: strings.Repeat("$BODY_JSON", 1000)})
	if len(m.Subject) != maxSubject || len(m.Text) != maxText {
		t.Errorf("subject %d bytes, text %d bytes; want them cut at %d and %d", len(m.Subject), len(m.Text), maxSubject, maxText)
	}
}

// mustJSONText is s as it appears inside a JSON string.
func mustJSONText(t *testing.T, s string) string {
	q := mustJSON(t, s)
	return q[1 : len(q)-1]
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
