package badge

import (
	"strings"
	"testing"
)

func TestCheckLabel(t *testing.T) {
	const u = "869fe06a-a604-4140-b15a-118637c25f3e"
	const other = "5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a"
	for _, tc := range []struct {
		desc, name, slug, object, want string
	}{
		{"the name, as the reference", "foobar", "foo", "foo-869fe06a", "foobar"},
		{"an unnamed API check", "", "", "check-869fe06a", "check"},
		{"an unnamed API check with a slug", "", "nightly", "nightly-869fe06a", "nightly"},
		{"a ping-created check", "db", "db", "db-869fe06a", "db"},
		{"a kubectl check without a name", "", "", "nightly-backup", "nightly-backup"},
		{"an object name that only resembles the suffix", "", "", "job-869fe06b", "job-869fe06b"},
		{"a name that is the UUID", u, "", "backups", "backups"},
		{"a name that is the UUID in capitals without hyphens", strings.ToUpper(strings.ReplaceAll(u, "-", "")), "", "check-869fe06a", "check"},
		{"a name with the object name's UUID digits", "backups 869FE06A", "backups", "backups-869fe06a", "backups"},
		{"a name with the UUID's last digits", "job 118637c25f3e", "", "x", "x"},
		{"a name with another check's UUID", "pings " + other, "", "check-869fe06a", "check"},
		{"an object named with the UUID", "", "", u, "check"},
		{"short hex words", "cafe-f00d beef", "", "x", "cafe-f00d beef"},
		{"eight hex digits of another UUID", "job 5d5f3e70", "", "x", "job 5d5f3e70"},
	} {
		if got := CheckLabel(tc.name, tc.slug, tc.object, u); got != tc.want {
			t.Errorf("%s: CheckLabel(%q, %q, %q) = %q, want %q", tc.desc, tc.name, tc.slug, tc.object, got, tc.want)
		}
	}
}

// FuzzCheckLabel checks the promise a public badge makes: whatever a check
// is called, its label holds no 8 consecutive hex digits of its UUID.
func FuzzCheckLabel(f *testing.F) {
	f.Add("", "", "check-869fe06a", "869fe06a-a604-4140-b15a-118637c25f3e")
	f.Add("869FE06A-A604", "x", "y", "869fe06a-a604-4140-b15a-118637c25f3e")
	f.Add("a", "", "", "")
	f.Fuzz(func(t *testing.T, name, slug, object, uuid string) {
		got := CheckLabel(name, slug, object, uuid)
		digits := hexDigits(uuid)
		if strings.Trim(digits, "0123456789abcdef") != "" {
			return // not a UUID: nothing to hide
		}
		flat := strings.ToLower(strings.ReplaceAll(got, "-", ""))
		for i := 0; i+8 <= len(digits); i++ {
			if strings.Contains(flat, digits[i:i+8]) {
				t.Fatalf("CheckLabel(%q, %q, %q, %q) = %q reveals %s", name, slug, object, uuid, got, digits[i:i+8])
			}
		}
	})
}
