package project_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/vigil-operator/vigil/internal/project"
)

func TestUUID(t *testing.T) {
	// The values are pinned, and were computed independently (Python's
	// uuid.uuid5): a scrape config names them, so they must never change
	// between versions.
	tests := []struct {
		namespace string
		want      string
	}{
		{"default", "fc5793c8-a991-5315-a26c-d25b5ec5c667"},
		{"team-a", "a50852d2-db8f-55b3-917f-10a2ddb5041b"},
		{"demo", "9575e397-9b08-5503-9bc6-7ffb26607e0b"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := project.UUID(tt.namespace)
		if got != tt.want {
			t.Errorf("UUID(%q) = %s, want %s", tt.namespace, got, tt.want)
		}
		u, err := uuid.Parse(got)
		if err != nil || u.Version() != 5 || u.Variant() != uuid.RFC4122 || u.String() != got {
			t.Errorf("UUID(%q) = %s is not a canonical lowercase version 5 UUID (%v)", tt.namespace, got, err)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("UUID(%q) = UUID(%q) = %s", tt.namespace, other, got)
		}
		seen[got] = tt.namespace
	}
}
