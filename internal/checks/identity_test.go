package checks

import (
	"strings"
	"testing"
)

// The reference's documented vectors (behaviour notes, section 4.2).
func TestUniqueKey(t *testing.T) {
	for uuid, want := range map[string]string{
		"803f680d-e89b-492b-82ef-2be7b774a92d": "124f983e0e3dcaeba921cfcef46efd084576e783",
		"31365bce-8da9-4729-8ff3-aaa71d56b712": "a6c7b0a8a66bed0df66abfdab3c77736861703ee",
		"07c2f548-9850-4b27-af5d-6c9dc157ec02": "f1bc441d0a2c1a3bf7bb4d031fd3ead3ab48ecb0",
	} {
		if got := UniqueKey(uuid); got != want {
			t.Errorf("UniqueKey(%s) = %s, want %s", uuid, got, want)
		}
	}
}

func TestBadgeKey(t *testing.T) {
	a := BadgeKey("803f680d-e89b-492b-82ef-2be7b774a92d")
	if len(a) != 36 || a[8] != '-' || a[13] != '-' {
		t.Errorf("BadgeKey = %q, want a UUID-shaped key", a)
	}
	if a == BadgeKey("31365bce-8da9-4729-8ff3-aaa71d56b712") {
		t.Error("different checks must get different badge keys")
	}
	if a != BadgeKey("803f680d-e89b-492b-82ef-2be7b774a92d") {
		t.Error("the badge key must be stable")
	}
	if strings.Contains(a, "803f680d") {
		t.Error("the badge key must not reveal the UUID")
	}
}

func TestObjectName(t *testing.T) {
	const id = "5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a"
	for base, want := range map[string]string{
		"nightly-backup":        "nightly-backup-5d5f3e70",
		"db_dump":               "db-dump-5d5f3e70",
		"":                      "check-5d5f3e70",
		"--x--":                 "x-5d5f3e70",
		"Weird Name!":           "weird-name-5d5f3e70",
		"Café crème":            "cafe-creme-5d5f3e70",
		strings.Repeat("a", 70): strings.Repeat("a", 50) + "-5d5f3e70",
	} {
		if got := ObjectName(base, id); got != want {
			t.Errorf("ObjectName(%q) = %q, want %q", base, got, want)
		}
	}
}
