package monitor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// FuzzEvents replays arbitrary event sequences and checks the invariants the
// controller, the ping path and the API rely on:
//
//   - each writer changes only its own fields;
//   - observing twice at the same instant changes nothing and flips nothing;
//   - flips alternate down, up, down, … (a pause or resume starts the
//     sequence again: the next flip is a down) and never go back in time;
//   - the status is constant from now until NextChange and differs at it,
//     and never changes when there is no NextChange;
//   - the deadline, when there is one and the check is not down, is where it
//     goes down;
//   - with an alert policy, the failure count stays within its threshold,
//     and never drops without a success, a pause or a resume.
//
// The first byte also chooses the alert policy: thresholds of 1 to 4, a
// maximum and a minimum run time.
func FuzzEvents(f *testing.F) {
	f.Add([]byte{3, 10, 1, 0, 5, 0, 9, 200, 2, 1, 0, 0, 5, 30, 1})
	f.Add([]byte{0x81, 5, 2, 1, 7, 0, 3, 20, 2, 4, 1, 0, 5, 255, 0, 6, 1, 0, 0, 0, 1})
	f.Add([]byte{0x40, 3, 2, 0, 0, 1, 1, 4, 0, 2, 255, 2, 8, 2, 0, 3, 2, 1})
	f.Add([]byte{0x01, 5, 1, 0, 0, 0, 0x70, 90, 61, 0x70, 5, 0, 0x70, 60, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 3 {
			return
		}
		cfg := monitor.Config{
			Timeout:      time.Duration(1+data[1]%20) * 10 * m,
			Grace:        time.Duration(data[2]%7) * 5 * m,
			ManualResume: data[0]&0x80 != 0,
		}
		if data[0]&0x40 != 0 {
			cfg.Schedule = every{origin: t0.Add(7 * time.Second), period: cfg.Timeout}
		}
		cfg.FailureThreshold = 1 + int(data[0]&0x3)
		cfg.RecoveryThreshold = 1 + int(data[0]>>2&0x3)
		if data[0]&0x10 != 0 {
			cfg.MaxRuntime = time.Duration(1+data[1]%5) * 10 * m
		}
		if data[0]&0x20 != 0 {
			cfg.MinRuntime = 5 * m
		}
		var fs monitor.Facts
		now := t0
		var last *monitor.Flip // since the last pause or resume
		var lastAt time.Time
		for data = data[3:]; len(data) >= 3; data = data[3:] {
			// Instants move forward by 0..255 minutes, with odd seconds and
			// nanoseconds so boundaries are hit from both sides.
			now = now.Add(time.Duration(data[1])*m + time.Duration(data[0]&0x0f)*time.Second*7/3)
			rid := [...]string{"", "a", "b"}[int(data[2])%3]
			var ev monitor.Event
			switch data[0] >> 4 % 8 {
			case 0:
				ev = monitor.Event{Kind: monitor.EventPing, Ping: monitor.PingSuccess, At: now, RID: rid}
			case 1:
				ev = monitor.Event{Kind: monitor.EventPing, Ping: monitor.PingFail, At: now, RID: rid}
			case 2:
				ev = monitor.Event{Kind: monitor.EventPing, Ping: monitor.PingStart, At: now, RID: rid}
			case 3:
				ev = monitor.Event{Kind: monitor.EventPing, Ping: monitor.PingLog, At: now}
			case 4:
				ev = monitor.Event{Kind: monitor.EventExitStatus, ExitStatus: int(data[2]), At: now, RID: rid}
			case 5:
				ev = monitor.Event{Kind: monitor.EventPause, At: now}
			case 6:
				ev = monitor.Event{Kind: monitor.EventResume, At: now}
			case 7:
				if data[2]&1 == 0 {
					ev = monitor.Event{Kind: monitor.EventTick, At: now}
					break
				}
				// Vigil back from an absence of up to 2 h 7 min.
				ev = monitor.Event{Kind: monitor.EventReturn, At: now, AwayFrom: now.Add(-time.Duration(data[2]>>1) * m)}
			}
			// As the store does, time is observed before the event: a
			// deadline missed before a ping is the down it was. A return
			// is told before anything is observed.
			var early *monitor.Flip
			if ev.Kind != monitor.EventReturn {
				fs, early = cfg.Observe(fs, now)
			}
			seen := func(flip *monitor.Flip) {
				if flip == nil {
					return
				}
				if last == nil && flip.Up() {
					t.Fatalf("first flip is up: %+v", flip)
				}
				if last != nil && last.Up() == flip.Up() {
					t.Fatalf("flips do not alternate: %+v then %+v", last, flip)
				}
				if flip.At.Before(lastAt) {
					t.Fatalf("flip goes back in time: %+v after one at %s", flip, lastAt)
				}
				// A flip can be a few microseconds after now: an instant moved
				// to order a ping after the pause it follows.
				if flip.At.After(now.Add(time.Millisecond)) {
					t.Fatalf("flip %+v after now %s", flip, now)
				}
				last, lastAt = flip, flip.At
			}
			seen(early)
			checkWriters(t, cfg, fs, ev)
			before, _ := cfg.Failures(fs, now)
			next, flip, err := cfg.Apply(fs, ev)
			if err != nil {
				if !errors.Is(err, monitor.ErrNotPaused) {
					t.Fatalf("Apply(%+v): %v", ev, err)
				}
				if next != fs || flip != nil {
					t.Fatalf("error changed facts")
				}
				continue
			}
			if ev.Kind == monitor.EventPause || ev.Kind == monitor.EventResume {
				last = nil
			}
			fs = next
			if again, flip2 := cfg.Observe(fs, now); again != fs || flip2 != nil {
				t.Fatalf("second Observe at %s: %+v, %+v", now, again, flip2)
			}
			seen(flip)
			checkTime(t, cfg, fs, now)
			checkCounts(t, cfg, fs, ev, before, now)
		}
	})
}

// checkCounts checks the alert policy's failure count after an event.
func checkCounts(t *testing.T, cfg monitor.Config, f monitor.Facts, ev monitor.Event, before int, now time.Time) {
	t.Helper()
	count, threshold := cfg.Failures(f, now)
	if count < 0 || count > max(threshold, monitor.MaxThreshold) {
		t.Fatalf("failure count %d, threshold %d", count, threshold)
	}
	if cfg.Status(f, now) != monitor.StatusDown && count >= threshold {
		t.Fatalf("%d of %d failures and not down; facts %+v", count, threshold, f)
	}
	// A return forgives the runs missed while Vigil was away that nobody
	// had counted yet.
	ends := ev.Kind == monitor.EventPause || ev.Kind == monitor.EventResume || ev.Kind == monitor.EventReturn ||
		(ev.Kind == monitor.EventPing && ev.Ping == monitor.PingSuccess) ||
		(ev.Kind == monitor.EventExitStatus && ev.ExitStatus == 0)
	if count < before && !ends {
		t.Fatalf("failure count fell from %d to %d at a %+v; facts %+v", before, count, ev, f)
	}
}

// checkWriters checks that each writer changes only the fields it owns.
func checkWriters(t *testing.T, cfg monitor.Config, f monitor.Facts, ev monitor.Event) {
	t.Helper()
	counts := func(g *monitor.Facts) {
		g.Failures, g.FailReason, g.FailDetail, g.Successes, g.MissedAt = f.Failures, f.FailReason, f.FailDetail, f.Successes, f.MissedAt
	}
	got, _ := cfg.RecordPing(f, monitor.Ping{Kind: ev.Ping, At: ev.At, RID: ev.RID})
	got.LastPing, got.LastPingFailed, got.LastStart, got.LastStartRID, got.LastDuration = f.LastPing, f.LastPingFailed, f.LastStart, f.LastStartRID, f.LastDuration
	counts(&got)
	if got != f {
		t.Fatalf("RecordPing changed non-ping fields")
	}
	got = cfg.Pause(f, ev.At)
	got.PausedAt = f.PausedAt
	counts(&got)
	if got != f {
		t.Fatalf("Pause changed other fields")
	}
	got, _ = cfg.Resume(f, ev.At)
	got.ResumedAt = f.ResumedAt
	counts(&got)
	if got != f {
		t.Fatalf("Resume changed other fields")
	}
	got = cfg.Absent(f, ev.AwayFrom, ev.At)
	got.Reprieve = f.Reprieve
	if got != f {
		t.Fatalf("Absent changed other fields")
	}
	got, _ = cfg.Observe(f, ev.At)
	got.State, got.StateSince = f.State, f.StateSince
	if got.FailReason != f.FailReason || got.Successes != f.Successes {
		t.Fatalf("Observe changed the recovery streak or a fail's reason")
	}
	counts(&got)
	if got != f {
		t.Fatalf("Observe changed other fields")
	}
}

// checkTime checks Status against NextChange and Deadline.
func checkTime(t *testing.T, cfg monitor.Config, f monitor.Facts, now time.Time) {
	t.Helper()
	st := cfg.Status(f, now)
	next, ok := cfg.NextChange(f, now)
	if !ok {
		if later := cfg.Status(f, now.Add(1000*d)); later != st {
			t.Fatalf("no NextChange at %s but %s → %s; facts %+v", now, st, later, f)
		}
	} else {
		if !next.After(now) {
			t.Fatalf("NextChange %s not after now %s", next, now)
		}
		if s := cfg.Status(f, next.Add(-ns)); s != st {
			t.Fatalf("status changes before NextChange %s: %s → %s; facts %+v", next, st, s, f)
		}
		// At NextChange the status changes, or a missed run is counted.
		n0, _ := cfg.Failures(f, next.Add(-ns))
		n1, _ := cfg.Failures(f, next)
		if s := cfg.Status(f, next); s == st && n0 == n1 {
			t.Fatalf("status unchanged (%s) at NextChange %s; facts %+v", s, next, f)
		}
	}
	if dl, ok := cfg.Deadline(f); ok && st != monitor.StatusDown {
		if s := cfg.Status(f, dl); s != monitor.StatusDown {
			t.Fatalf("status at the deadline %s is %s; facts %+v", dl, s, f)
		}
		if s := cfg.Status(f, dl.Add(-ns)); s == monitor.StatusDown {
			t.Fatalf("down before the deadline %s; facts %+v", dl, f)
		}
	}
}
