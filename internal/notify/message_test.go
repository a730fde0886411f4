package notify

import (
	"strings"
	"testing"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute:                "1 minute",
		90 * time.Minute:           "1 hour 30 minutes",
		24 * time.Hour:             "1 day",
		7 * 24 * time.Hour:         "1 week",
		8 * 24 * time.Hour:         "8 days",
		14 * 24 * time.Hour:        "2 weeks",
		26*time.Hour + time.Minute: "1 day 2 hours 1 minute",
		30 * time.Second:           "30 seconds",
	} {
		if got := formatDuration(d); got != want {
			t.Errorf("formatDuration(%s) = %q, want %q", d, got, want)
		}
	}
}

func TestNaturalTime(t *testing.T) {
	ref := fixedNow
	for d, want := range map[time.Duration]string{
		0:                          "now",
		-time.Minute:               "now",
		time.Second:                "1 second ago",
		45 * time.Second:           "45 seconds ago",
		time.Minute:                "1 minute ago",
		10 * time.Minute:           "10 minutes ago",
		3 * time.Hour:              "3 hours ago",
		24 * time.Hour:             "1 day ago",
		50 * time.Hour:             "2 days, 2 hours ago",
		25*time.Hour + time.Minute: "1 day, 1 hour ago",
	} {
		if got := naturalTime(ref.Add(-d), ref); got != want {
			t.Errorf("naturalTime(-%s) = %q, want %q", d, got, want)
		}
	}
}

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
