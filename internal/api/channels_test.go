package api

import (
	"slices"
	"testing"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/notify"
)

// Every kind the API shows is the reference's name for it, so clients that
// switch on kind (the Terraform provider's data source) find it; the
// reference's list is its /api/v3/channels/ documentation's.
func TestAPIKindsAreTheReferences(t *testing.T) {
	reference := []string{"apprise", "call", "discord", "email", "github", "googlechat", "gotify", "group",
		"matrix", "mattermost", "msteamsw", "ntfy", "opsgenie", "pagertree", "pd", "po", "pushbullet",
		"rocketchat", "shell", "signal", "slack", "sms", "spike", "telegram", "trello", "victorops",
		"webhook", "whatsapp", "zulip"}
	// Vigil's own kinds, which the reference has not: each shown as itself.
	own := []v1.ChannelKind{v1.ChannelAlertmanager, v1.ChannelJira, v1.ChannelSNS}
	for _, k := range notify.Kinds() {
		name := apiKind(k)
		if slices.Contains(own, k) {
			if name != string(k) {
				t.Errorf("apiKind(%s) = %q", k, name)
			}
			continue
		}
		if !slices.Contains(reference, name) {
			t.Errorf("apiKind(%s) = %q, which is not one of the reference's kinds", k, name)
		}
	}
	for k, want := range map[v1.ChannelKind]string{v1.ChannelPushover: "po", v1.ChannelPagerDuty: "pd",
		v1.ChannelMSTeams: "msteamsw", v1.ChannelTelegram: "telegram", v1.ChannelSMS: "sms"} {
		if got := apiKind(k); got != want {
			t.Errorf("apiKind(%s) = %q, want %q", k, got, want)
		}
	}
}
