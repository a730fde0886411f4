package checkindex

import "testing"

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
