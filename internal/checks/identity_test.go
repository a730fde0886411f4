package checks

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
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

func TestOldest(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.Unix(sec, 0) }
	items := []v1.Check{
		{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: at(20)}, Spec: v1.CheckSpec{Tags: "x"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", CreationTimestamp: at(10)}},
		{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: at(10)}, Spec: v1.CheckSpec{Tags: "x"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "d", CreationTimestamp: at(30)}, Spec: v1.CheckSpec{Tags: "y"}},
	}
	tagged := func(tag string) func(*v1.Check) bool { return func(c *v1.Check) bool { return c.Spec.Tags == tag } }
	for _, tt := range []struct {
		match func(*v1.Check) bool
		want  string
	}{{nil, "a"}, {tagged("x"), "a"}, {tagged("y"), "d"}, {tagged("z"), ""}} {
		got := Oldest(items, tt.match)
		switch {
		case tt.want == "" && got != nil:
			t.Errorf("got %s, want none", got.Name)
		case tt.want != "" && (got == nil || got.Name != tt.want):
			t.Errorf("got %v, want %s", got, tt.want)
		}
	}
	// The same order as SortOldestFirst.
	sorted := append([]v1.Check(nil), items...)
	SortOldestFirst(sorted)
	if sorted[0].Name != Oldest(items, nil).Name {
		t.Errorf("SortOldestFirst starts with %s, Oldest says %s", sorted[0].Name, Oldest(items, nil).Name)
	}
}
