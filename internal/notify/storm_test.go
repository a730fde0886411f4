package notify

import (
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// TestGroupedMessage: storm control's one message about many checks says
// how many and where, lists each with when and why, and counts those past
// maxGroupFacts, in every shared rendering.
func TestGroupedMessage(t *testing.T) {
	at := time.Date(2026, 12, 6, 3, 0, 0, 0, time.UTC)
	down := &Message{Check: CheckInfo{Namespace: "team-a", Name: "2 checks", DetailsURL: "https://vigil.example.com/"}, Time: at,
		Group: []GroupedCheck{
			{Name: "backup", At: at, Reason: "timeout"},
			{Name: "reindex", At: at.Add(2 * time.Second), Reason: "fail"},
		}}
	if got := down.headline(); got != "2 checks in team-a are DOWN." {
		t.Errorf("headline %q", got)
	}
	text := down.plainText(chatBodyLimit)
	for _, want := range []string{
		"2 checks in team-a are DOWN.",
		"one message for them all, not one each (storm control)",
		"backup: down at 03:00:00 UTC: success signal did not arrive on time, grace time passed",
		"reindex: down at 03:00:02 UTC: received a failure signal",
		"https://vigil.example.com/",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plain text lacks %q:\n%s", want, text)
		}
	}
	if md := down.markdown(); !strings.Contains(md, "**[2 checks in team-a are DOWN.](https://vigil.example.com/)**") ||
		!strings.Contains(md, "- **backup:** down at 03:00:00 UTC") {
		t.Errorf("markdown:\n%s", md)
	}

	up := &Message{Check: CheckInfo{Namespace: "team-a", Name: "30 checks"}, Up: true, Time: at}
	for i := range 30 {
		up.Group = append(up.Group, GroupedCheck{Name: fmt.Sprintf("job-%02d", i), At: at, Since: at.Add(-90 * time.Second)})
	}
	text = up.plainText(0)
	if !strings.HasPrefix(text, "30 checks in team-a are UP.") || !strings.Contains(text, "job-00: up at 03:00:00 UTC (was down for 1 minute 30 seconds)") {
		t.Errorf("grouped up:\n%s", text)
	}
	if !strings.Contains(text, fmt.Sprintf("job-%02d:", maxGroupFacts-1)) || strings.Contains(text, fmt.Sprintf("job-%02d:", maxGroupFacts)) ||
		!strings.Contains(text, fmt.Sprintf("And: %d more", 30-maxGroupFacts)) {
		t.Errorf("past %d checks, the rest are counted:\n%s", maxGroupFacts, text)
	}
}

func TestGroups(t *testing.T) {
	for kind, want := range map[v1.ChannelKind]bool{
		v1.ChannelWebhook: true, v1.ChannelSlack: true, v1.ChannelEmail: true,
		v1.ChannelPagerDuty: false, v1.ChannelOpsgenie: false, v1.ChannelGroup: false, "no-such-kind": false,
	} {
		if got := Groups(kind); got != want {
			t.Errorf("Groups(%s) = %v, want %v", kind, got, want)
		}
	}
}
