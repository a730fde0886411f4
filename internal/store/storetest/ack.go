package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// ackTest is the contract of an acknowledged down (ack.go): it stops the
// down's re-alerts and escalation, and nothing else; it is kept across a
// restart; it ends with the down, so the next down re-alerts again; and a
// check that is not down cannot be acknowledged.
func ackTest(ctx context.Context, t *testing.T, dsn string) {
	tg := simple("acked", "ops")
	tg.Config.Timeout, tg.Config.Grace = 24*time.Hour, time.Hour
	tg.Realert = 10 * time.Minute
	tg.Escalation = store.Escalation{After: 30 * time.Minute, Channels: []string{"lead"}}
	s, err := store.Open(ctx, dsn, store.Options{})
	must(t, err)
	defer func() { _ = s.Close() }()
	observe := func(at time.Time) {
		t.Helper()
		_, err := s.Observe(ctx, []store.Target{tg}, at)
		must(t, err)
	}

	if _, err := s.Acknowledge(ctx, tg, "API key hcw_aaaaaaaa", t0, nil); !errors.Is(err, store.ErrNotDown) {
		t.Fatalf("acknowledging a new check: %v, want ErrNotDown", err)
	}
	_, err = s.RecordPing(ctx, tg, ping(monitor.PingFail, t0))
	must(t, err)
	observe(t0.Add(10 * time.Minute))
	if got := drain(t, s); !slices.Equal(got, []string{"down to ops", "realert to ops"}) {
		t.Fatalf("before the acknowledgement: %v", got)
	}

	// ops and lead carry acknowledgements to their incidents; ops was
	// told of the down, lead (the escalation, not yet due) was not.
	c, err := s.Acknowledge(ctx, tg, "API key hcw_aaaaaaaa", t0.Add(12*time.Minute), []string{"ops", "lead"})
	must(t, err)
	if ack, ok := c.Acknowledged(); !ok || ack.By != "API key hcw_aaaaaaaa" || !ack.At.Equal(t0.Add(12*time.Minute)) {
		t.Fatalf("acknowledged: %+v, %v", ack, ok)
	}
	if !c.NextChange.IsZero() {
		t.Fatalf("next change %s after the acknowledgement; a down acknowledged has no notice due", c.NextChange)
	}
	// A second acknowledgement keeps the first.
	c, err = s.Acknowledge(ctx, tg, "someone else", t0.Add(13*time.Minute), []string{"ops", "lead"})
	must(t, err)
	if ack, _ := c.Acknowledged(); ack.By != "API key hcw_aaaaaaaa" {
		t.Fatalf("a second acknowledgement replaced the first: %+v", ack)
	}
	// The history keeps it, sent to nobody.
	notes, err := s.Notifications(ctx, tg.UID, 10)
	must(t, err)
	if len(notes) == 0 || notes[0].Notice != monitor.NoticeAck || notes[0].Detail != "API key hcw_aaaaaaaa" ||
		len(notes[0].Deliveries) != 1 || notes[0].Deliveries[0].Channel != "ops" {
		t.Fatalf("newest notification %+v, want the acknowledgement, queued for ops alone", notes[0])
	}
	if got := drain(t, s); !slices.Equal(got, []string{"ack to ops"}) {
		t.Fatalf("the acknowledgement told %v", got)
	}

	// Across a restart, past the re-alert interval and the escalation's
	// delay: nothing.
	must(t, s.Close())
	s, err = store.Open(ctx, dsn, store.Options{})
	must(t, err)
	observe(t0.Add(2 * time.Hour))
	if got := drain(t, s); len(got) != 0 {
		t.Fatalf("an acknowledged down still notified: %v", got)
	}

	// The up is told as ever; the next down is a new one: re-alerted.
	_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(3*time.Hour)))
	must(t, err)
	c, _, err = s.Check(ctx, tg.UID)
	must(t, err)
	if _, ok := c.Acknowledged(); ok {
		t.Fatal("an up check is still acknowledged")
	}
	_, err = s.RecordPing(ctx, tg, ping(monitor.PingFail, t0.Add(4*time.Hour)))
	must(t, err)
	observe(t0.Add(4*time.Hour + 10*time.Minute))
	if got := drain(t, s); !slices.Equal(got, []string{"up to ops", "down to ops", "realert to ops"}) {
		t.Fatalf("after the up and a new down: %v", got)
	}
}
