package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

// runTests are the contract of the runs the statistics read: every store
// opened with a run limit of 32 pings.
func runTests(ctx context.Context) map[string]func(t *testing.T, s *store.Store) {
	return map[string]func(t *testing.T, s *store.Store){
		"a success or fail ping ends a run, timed from its start, and nothing else does": func(t *testing.T, s *store.Store) {
			tg := simple("r1")
			rid := func(p store.Ping, id string) store.Ping { p.RID = id; return p }
			for _, p := range []store.Ping{
				ping(monitor.PingStart, t0),
				ping(monitor.PingLog, t0.Add(time.Second)),
				ping(monitor.PingSuccess, t0.Add(3*time.Second)), // a run of 3 s
				ping(monitor.PingFail, t0.Add(time.Minute)),      // a failed run, untimed
				ping(monitor.PingIgnored, t0.Add(2*time.Minute)), // not a run
				rid(ping(monitor.PingStart, t0.Add(3*time.Minute)), "a"),
				rid(ping(monitor.PingStart, t0.Add(3*time.Minute+time.Second)), "b"),
				rid(ping(monitor.PingSuccess, t0.Add(3*time.Minute+5*time.Second)), "b"), // b: 4 s
			} {
				_, err := s.RecordPing(ctx, tg, p)
				must(t, err)
			}
			h, err := s.History(ctx, tg.UID, t0)
			must(t, err)
			if len(h.Runs) != 3 {
				t.Fatalf("runs = %+v", h.Runs)
			}
			want := []store.Run{
				{N: 3, Ended: t0.Add(3 * time.Second), Duration: 3 * time.Second, HasDuration: true},
				{N: 4, Ended: t0.Add(time.Minute), Failed: true},
				{N: 8, Ended: t0.Add(3*time.Minute + 5*time.Second), Duration: 4 * time.Second, HasDuration: true},
			}
			for i := range want {
				if h.Runs[i] != want[i] {
					t.Errorf("run %d = %+v, want %+v", i, h.Runs[i], want[i])
				}
			}
			c, _, err := s.Check(ctx, tg.UID)
			must(t, err)
			if want := (store.RunCounts{Succeeded: 2, Failed: 1, LastSuccess: t0.Add(3*time.Minute + 5*time.Second)}); c.RunCounts != want {
				t.Errorf("counts = %+v, want %+v", c.RunCounts, want)
			}
			if later, err := s.History(ctx, tg.UID, t0.Add(time.Minute+time.Microsecond)); err != nil || len(later.Runs) != 1 {
				t.Errorf("runs since after the second: %+v, %v", later.Runs, err)
			}
		},
		"a check keeps the runs of its last pings, up to the limit, after its log lets them go, and loses them when forgotten": func(t *testing.T, s *store.Store) {
			tg := simple("r2")
			tg.PingLogLimit = 20
			for i := range 100 {
				_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0.Add(time.Duration(i)*time.Second)))
				must(t, err)
			}
			h, err := s.History(ctx, tg.UID, t0)
			must(t, err)
			// Trimmed every 16 pings to the runs of the last 32.
			if n := len(h.Runs); n < 32 || n > 32+16 || h.Runs[n-1].N != 100 {
				t.Fatalf("kept %d runs, the newest %+v", n, h.Runs[n-1])
			}
			// The row says how far back the runs are whole: the newest run
			// let go ended a second before the oldest held.
			c, _, err := s.Check(ctx, tg.UID)
			must(t, err)
			if want := h.Runs[0].Ended.Add(-time.Second); !c.RunCounts.Dropped.Equal(want) {
				t.Errorf("dropped = %v, want %v (the oldest held: %+v)", c.RunCounts.Dropped, want, h.Runs[0])
			}
			must(t, s.Forget(ctx, tg.UID))
			if h, err := s.History(ctx, tg.UID, t0); err != nil || len(h.Runs) != 0 {
				t.Errorf("after Forget: %+v, %v", h, err)
			}
		},
		"pings recorded at once trim the log, the runs and the bodies as pings one at a time do": func(t *testing.T, s *store.Store) {
			// The trims of a batch's pings happen once, at the end of its
			// transaction: many pings to a few checks, sent together so
			// that the writer batches them.
			const perCheck = 150
			checks := []store.Target{simple("t1"), simple("t2"), simple("t3")}
			// at holds each ping's time by its serial number. A ping that
			// comes after a later one is logged at that one's time, so the
			// log's times are those of the latest ping so far.
			at := make([][perCheck + 1]time.Time, len(checks))
			var mu sync.Mutex
			start := make(chan struct{})
			errs := make(chan error, perCheck*len(checks))
			// t3's log is longer than the runs kept (32 pings): its runs are
			// let go with their pings, not moved.
			limits := []int{20, 20, 50}
			for c := range checks {
				checks[c].PingLogLimit = limits[c]
				checks[c].Config.Timeout = 24 * time.Hour // no deadline missed meanwhile
				for i := range perCheck {
					p := ping(monitor.PingSuccess, t0.Add(time.Duration(i*len(checks)+c)*time.Second))
					p.Body = []byte(fmt.Sprintf("%040d", i)) // 25 of them fit the budget of 1000 bytes
					go func() {
						<-start
						rec, err := s.RecordPing(ctx, checks[c], p)
						if err == nil {
							mu.Lock()
							at[c][rec.N] = p.At
							mu.Unlock()
						}
						errs <- err
					}()
				}
			}
			close(start)
			for range perCheck * len(checks) {
				must(t, <-errs)
			}
			if st := s.Stats(); st.Writes <= st.Commits {
				t.Fatalf("%d writes in %d transactions: no batch to test", st.Writes, st.Commits)
			}
			for c := range checks {
				for n := 2; n <= perCheck; n++ {
					at[c][n] = later(at[c][n], at[c][n-1])
				}
			}
			for c, tg := range checks {
				pings, err := s.Pings(ctx, tg.UID, 1000)
				must(t, err)
				limit := limits[c]
				if len(pings) < limit || len(pings) >= limit+16 || pings[0].N != perCheck {
					t.Fatalf("%s: the log holds %d pings, the newest %d; want the newest %d, give or take a trim", tg.Name, len(pings), pings[0].N, limit)
				}
				var bytes int
				for i, p := range pings { // newest first
					bytes += p.BodySize
					if p.BodyDropped && i > 0 && !pings[i-1].BodyDropped && p.N > pings[i-1].N {
						t.Errorf("%s: ping %d lost its body before ping %d", tg.Name, p.N, pings[i-1].N)
					}
					if i > 0 && pings[i-1].BodyDropped && !p.BodyDropped {
						t.Errorf("%s: ping %d keeps its body, the newer %d does not", tg.Name, p.N, pings[i-1].N)
					}
				}
				if want := min(len(pings), 25) * 40; bytes != want || pings[0].BodyDropped {
					t.Errorf("%s: %d body bytes kept, want %d; the newest dropped: %v", tg.Name, bytes, want, pings[0].BodyDropped)
				}
				h, err := s.History(ctx, tg.UID, t0)
				must(t, err)
				if n, kept := len(h.Runs), max(limit, 32); n < kept || n > kept+16 || h.Runs[n-1].N != perCheck {
					t.Fatalf("%s: kept %d runs, the newest %+v", tg.Name, n, h.Runs[n-1])
				}
				for _, r := range h.Runs {
					if !r.Ended.Equal(at[c][r.N]) {
						t.Errorf("%s: run %d ended %v, want %v", tg.Name, r.N, r.Ended, at[c][r.N])
					}
				}
				// The newest run let go is the one before the oldest held.
				dropped := at[c][h.Runs[0].N-1]
				row, _, err := s.Check(ctx, tg.UID)
				must(t, err)
				if !row.RunCounts.Dropped.Equal(dropped) || row.RunCounts.Succeeded != perCheck {
					t.Errorf("%s: counts %+v, want %d runs and the newest let go at %v", tg.Name, row.RunCounts, perCheck, dropped)
				}
			}
		},
		"runs keep their durations when the log lets their pings go, and each run is read once": func(t *testing.T, s *store.Store) {
			tg := simple("r7")
			tg.PingLogLimit = 20
			for i := range 30 {
				at := t0.Add(time.Duration(i) * time.Minute)
				_, err := s.RecordPing(ctx, tg, ping(monitor.PingStart, at))
				must(t, err)
				_, err = s.RecordPing(ctx, tg, ping(monitor.PingSuccess, at.Add(2*time.Second)))
				must(t, err)
			}
			h, err := s.History(ctx, tg.UID, t0)
			must(t, err)
			// The runs of the last 32 pings at least (16 runs), trimmed
			// every 16 pings (8 runs); the log holds 20 to 36 pings.
			if n := len(h.Runs); n < 16 || n > 24 || h.Runs[n-1].N != 60 {
				t.Fatalf("%d runs, the newest %+v", n, h.Runs[n-1])
			}
			for i, r := range h.Runs {
				if !r.HasDuration || r.Duration != 2*time.Second || (i > 0 && r.N != h.Runs[i-1].N+2) {
					t.Errorf("run %d: %+v", i, r)
				}
			}
		},
		"missed deadlines are the down flips for lack of a ping, and a project's histories are its own": func(t *testing.T, s *store.Store) {
			a, b, other := simple("r3"), simple("r4"), simple("r5")
			other.Namespace = "team-b"
			for _, tg := range []store.Target{a, b, other} {
				_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
				must(t, err)
			}
			// a misses its deadline (t0 + 1 min + 1 min grace).
			_, err := s.Observe(ctx, []store.Target{a}, t0.Add(10*time.Minute))
			must(t, err)
			// b fails: a down, but not a miss.
			_, err = s.RecordPing(ctx, b, ping(monitor.PingFail, t0.Add(time.Minute)))
			must(t, err)
			all, err := s.HistoriesIn(ctx, "team-a", t0)
			must(t, err)
			if len(all) != 2 {
				t.Fatalf("team-a's histories: %+v", all)
			}
			if h := all[a.UID]; len(h.Runs) != 1 || len(h.Missed) != 1 || !h.Missed[0].Equal(t0.Add(2*time.Minute)) {
				t.Errorf("a: %+v", h)
			}
			if h := all[b.UID]; len(h.Runs) != 2 || len(h.Missed) != 0 || !h.Runs[1].Failed {
				t.Errorf("b: %+v", h)
			}
			observed, err := s.ChecksIn(ctx, "team-a")
			must(t, err)
			if got := observed.Of(a.UID).RunCounts; got.Missed != 1 || got.Succeeded != 1 || got.Failed != 0 {
				t.Errorf("a's counts: %+v", got)
			}
			if got := observed.Of(b.UID).RunCounts; got.Missed != 0 || got.Failed != 1 || !got.LastSuccess.Equal(t0) {
				t.Errorf("b's counts: %+v", got)
			}
			if later, err := s.HistoriesIn(ctx, "team-a", t0.Add(3*time.Minute)); err != nil || len(later) != 0 {
				t.Errorf("since after everything: %+v, %v", later, err)
			}
		},
		"a deadline missed inside a maintenance window is neither a miss nor counted": func(t *testing.T, s *store.Store) {
			tg := simple("r6")
			tg.Maintenance = windows(t, "upgrade", time.Minute, time.Hour)
			_, err := s.RecordPing(ctx, tg, ping(monitor.PingSuccess, t0))
			must(t, err)
			rec, err := s.Observe(ctx, []store.Target{tg}, t0.Add(10*time.Minute))
			must(t, err)
			if fl := rec[tg.UID]; fl == nil || fl.Held != "upgrade" {
				t.Fatalf("flip %+v, want a down held by upgrade", fl)
			}
			h, err := s.History(ctx, tg.UID, t0)
			must(t, err)
			c, _, err := s.Check(ctx, tg.UID)
			must(t, err)
			if len(h.Missed) != 0 || c.RunCounts.Missed != 0 {
				t.Errorf("a held down counted as missed: history %+v, counts %+v", h.Missed, c.RunCounts)
			}
			if c.Facts.State != monitor.StatusDown {
				t.Errorf("state %v, want down (held, not told)", c.Facts.State)
			}
		},
	}
}

// later is the later of two instants.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
