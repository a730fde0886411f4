package store

import (
	"testing"
	"time"
)

// A read of a UUID's owner that found none must not undo a claim this
// replica remembered while the read ran: pings would then answer as if no
// project owned the UUID, and another project's older check naming it
// would take them.
func TestOwnerReadNeverUndoesANewerClaim(t *testing.T) {
	const uuid = "5d5f3e70-1111-4222-8333-000000000001"
	t0 := time.Now()
	for _, tc := range []struct {
		name      string
		claimAt   time.Duration // when the claim was remembered, from t0
		readBegan time.Duration // when the read that found no owner began
		want      string
	}{
		{"the claim came while the read ran", 2 * time.Millisecond, time.Millisecond, "victim"},
		{"the read began after the claim", time.Millisecond, 2 * time.Millisecond, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c ownerCache
			c.remember(uuid, "victim", t0.Add(tc.claimAt))
			c.rememberRead(uuid, "", t0.Add(tc.readBegan))
			if got, ok := c.recall(uuid, t0.Add(3*time.Millisecond)); !ok || got != tc.want {
				t.Errorf("owner = %q (%v), want %q", got, ok, tc.want)
			}
		})
	}
	var c ownerCache
	c.rememberRead(uuid, "team-a", t0)
	if got, ok := c.recall(uuid, t0.Add(time.Second)); !ok || got != "team-a" {
		t.Errorf("a read with nothing remembered before: %q (%v)", got, ok)
	}
}
