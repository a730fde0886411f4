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
//     goes down.
func FuzzEvents(f *testing.F) {
	f.Add([]byte{3, 10, 1, 0, 5, 0, 9, 200, 2, 1, 0, 0, 5, 30, 1})
	f.Add([]byte{0x81, 5, 2, 1, 7, 0, 3, 20, 2, 4, 1, 0, 5, 255, 0, 6, 1, 0, 0, 0, 1})
	f.Add([]byte{0x40, 3, 2, 0, 0, 1, 1, 4, 0, 2, 255, 2, 8, 2, 0, 3, 2, 1})
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
			default:
				ev = monitor.Event{Kind: monitor.EventTick, At: now}
			}
			checkWriters(t, cfg, fs, ev)
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
			if flip != nil {
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
			checkTime(t, cfg, fs, now)
		}
	})
}

// checkWriters checks that each writer changes only the fields it owns.
func checkWriters(t *testing.T, cfg monitor.Config, f monitor.Facts, ev monitor.Event) {
	t.Helper()
	got, _ := cfg.RecordPing(f, monitor.Ping{Kind: ev.Ping, At: ev.At, RID: ev.RID})
	got.LastPing, got.LastPingFailed, got.LastStart, got.LastStartRID, got.LastDuration = f.LastPing, f.LastPingFailed, f.LastStart, f.LastStartRID, f.LastDuration
	if got != f {
		t.Fatalf("RecordPing changed non-ping fields")
	}
	got = cfg.Pause(f, ev.At)
	got.PausedAt = f.PausedAt
	if got != f {
		t.Fatalf("Pause changed other fields")
	}
	got, _ = cfg.Resume(f, ev.At)
	got.ResumedAt = f.ResumedAt
	if got != f {
		t.Fatalf("Resume changed other fields")
	}
	got, _ = cfg.Observe(f, ev.At)
	got.State, got.StateSince = f.State, f.StateSince
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
		if s := cfg.Status(f, next); s == st {
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
