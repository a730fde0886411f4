package monitor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
)

const us = time.Microsecond

// TestRecordPing covers the ping path's part (reference 8.5): which facts a
// ping sets, run pairing by rid, ignored pings, and the ordering of instants.
func TestRecordPing(t *testing.T) {
	manual := simple
	manual.ManualResume = true
	pausedManual := monitor.Facts{LastPing: at(0), PausedAt: at(m)}
	tests := []struct {
		name string
		cfg  monitor.Config
		f    monitor.Facts
		p    monitor.Ping
		want monitor.Facts
		res  monitor.PingResult
	}{
		{
			name: "start sets the run",
			cfg:  simple, f: monitor.Facts{LastPing: at(0)},
			p:    monitor.Ping{Kind: monitor.PingStart, At: at(m), RID: "a"},
			want: monitor.Facts{LastPing: at(0), LastStart: at(m), LastStartRID: "a"},
			res:  monitor.PingResult{Kind: monitor.PingStart, At: at(m)},
		},
		{
			name: "start replaces an outstanding run",
			cfg:  simple, f: monitor.Facts{LastStart: at(0), LastStartRID: "a"},
			p:    monitor.Ping{Kind: monitor.PingStart, At: at(m), RID: "b"},
			want: monitor.Facts{LastStart: at(m), LastStartRID: "b"},
			res:  monitor.PingResult{Kind: monitor.PingStart, At: at(m)},
		},
		{
			name: "success without a run clears the last duration",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), LastDuration: 5 * m},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(h)},
			want: monitor.Facts{LastPing: at(h)},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(h)},
		},
		{
			name: "success with the run's rid ends it with a duration",
			cfg:  simple, f: monitor.Facts{LastStart: at(0), LastStartRID: "a"},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(2 * m), RID: "a"},
			want: monitor.Facts{LastPing: at(2 * m), LastDuration: 2 * m},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(2 * m), Duration: 2 * m, HasDuration: true},
		},
		{
			name: "success and start both without a rid pair",
			cfg:  simple, f: monitor.Facts{LastStart: at(0)},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(3 * m)},
			want: monitor.Facts{LastPing: at(3 * m), LastDuration: 3 * m},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(3 * m), Duration: 3 * m, HasDuration: true},
		},
		{
			name: "a run of zero length has a duration",
			cfg:  simple, f: monitor.Facts{LastStart: at(0)},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(0)},
			want: monitor.Facts{LastPing: at(0)},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(0), HasDuration: true},
		},
		{
			name: "success with another rid keeps the run",
			cfg:  simple, f: monitor.Facts{LastStart: at(0), LastStartRID: "a"},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(2 * m), RID: "b"},
			want: monitor.Facts{LastPing: at(2 * m), LastStart: at(0), LastStartRID: "a"},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(2 * m)},
		},
		{
			name: "success without a rid ends a run that had one, without a duration",
			cfg:  simple, f: monitor.Facts{LastStart: at(0), LastStartRID: "a"},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(2 * m)},
			want: monitor.Facts{LastPing: at(2 * m)},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(2 * m)},
		},
		{
			name: "success with a rid does not pair with a run without one",
			cfg:  simple, f: monitor.Facts{LastStart: at(0)},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(2 * m), RID: "a"},
			want: monitor.Facts{LastPing: at(2 * m), LastStart: at(0)},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(2 * m)},
		},
		{
			name: "fail with the run's rid ends it with a duration",
			cfg:  simple, f: monitor.Facts{LastStart: at(0), LastStartRID: "a"},
			p:    monitor.Ping{Kind: monitor.PingFail, At: at(4 * m), RID: "a"},
			want: monitor.Facts{LastPing: at(4 * m), LastPingFailed: true, LastDuration: 4 * m, Failures: 1},
			res:  monitor.PingResult{Kind: monitor.PingFail, At: at(4 * m), Duration: 4 * m, HasDuration: true},
		},
		{
			name: "fail with another rid ends the run without a duration",
			cfg:  simple, f: monitor.Facts{LastStart: at(0), LastStartRID: "a"},
			p:    monitor.Ping{Kind: monitor.PingFail, At: at(4 * m), RID: "b"},
			want: monitor.Facts{LastPing: at(4 * m), LastPingFailed: true, Failures: 1},
			res:  monitor.PingResult{Kind: monitor.PingFail, At: at(4 * m)},
		},
		{
			name: "success after a fail",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), LastPingFailed: true},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(m)},
			want: monitor.Facts{LastPing: at(m)},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(m)},
		},
		{
			name: "log changes nothing",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), LastStart: at(m)},
			p:    monitor.Ping{Kind: monitor.PingLog, At: at(2 * m)},
			want: monitor.Facts{LastPing: at(0), LastStart: at(m)},
			res:  monitor.PingResult{Kind: monitor.PingLog, At: at(2 * m)},
		},
		{
			name: "ign changes nothing",
			cfg:  simple, f: monitor.Facts{LastPing: at(0)},
			p:    monitor.Ping{Kind: monitor.PingIgnored, At: at(2 * m)},
			want: monitor.Facts{LastPing: at(0)},
			res:  monitor.PingResult{Kind: monitor.PingIgnored, At: at(2 * m)},
		},
		{
			name: "an unknown kind is ignored",
			cfg:  simple, f: monitor.Facts{LastPing: at(0)},
			p:    monitor.Ping{Kind: "bogus", At: at(2 * m)},
			want: monitor.Facts{LastPing: at(0)},
			res:  monitor.PingResult{Kind: monitor.PingIgnored, At: at(2 * m)},
		},
		{
			name: "paused with manual resume: a fail is ign",
			cfg:  manual, f: pausedManual,
			p:    monitor.Ping{Kind: monitor.PingFail, At: at(2 * m)},
			want: pausedManual,
			res:  monitor.PingResult{Kind: monitor.PingIgnored, At: at(2 * m)},
		},
		{
			name: "paused with manual resume: a success is ign",
			cfg:  manual, f: pausedManual,
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(2 * m)},
			want: pausedManual,
			res:  monitor.PingResult{Kind: monitor.PingIgnored, At: at(2 * m)},
		},
		{
			name: "paused with manual resume: a start is ign",
			cfg:  manual, f: pausedManual,
			p:    monitor.Ping{Kind: monitor.PingStart, At: at(2 * m)},
			want: pausedManual,
			res:  monitor.PingResult{Kind: monitor.PingIgnored, At: at(2 * m)},
		},
		{
			name: "paused with manual resume: a log is ign",
			cfg:  manual, f: pausedManual,
			p:    monitor.Ping{Kind: monitor.PingLog, At: at(2 * m)},
			want: pausedManual,
			res:  monitor.PingResult{Kind: monitor.PingIgnored, At: at(2 * m)},
		},
		{
			name: "manual resume, not paused: counted",
			cfg:  manual, f: monitor.Facts{LastPing: at(0)},
			p:    monitor.Ping{Kind: monitor.PingFail, At: at(2 * m)},
			want: monitor.Facts{LastPing: at(2 * m), LastPingFailed: true, Failures: 1},
			res:  monitor.PingResult{Kind: monitor.PingFail, At: at(2 * m)},
		},
		{
			name: "manual resume, paused but down by an overrun run: counted",
			cfg:  manual, f: monitor.Facts{LastPing: at(0), PausedAt: at(m), LastStart: at(2 * m)},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(h)},
			want: monitor.Facts{LastPing: at(h), PausedAt: at(m), LastDuration: h - 2*m},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(h), Duration: h - 2*m, HasDuration: true},
		},
		{
			name: "paused without manual resume: a start keeps it paused",
			cfg:  simple, f: pausedManual,
			p:    monitor.Ping{Kind: monitor.PingStart, At: at(2 * m)},
			want: monitor.Facts{LastPing: at(0), PausedAt: at(m), LastStart: at(2 * m)},
			res:  monitor.PingResult{Kind: monitor.PingStart, At: at(2 * m)},
		},
		{
			name: "a run started before a pause is cleared without a duration",
			cfg:  simple, f: monitor.Facts{LastStart: at(0), PausedAt: at(m), ResumedAt: at(2 * m)},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(3 * m)},
			want: monitor.Facts{LastPing: at(3 * m), PausedAt: at(m), ResumedAt: at(2 * m)},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(3 * m)},
		},
		{
			name: "a ping stamped before the pause it follows is moved just after it",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), PausedAt: at(m)},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(m - time.Millisecond)},
			want: monitor.Facts{LastPing: at(m + us), PausedAt: at(m)},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(m + us)},
		},
		{
			name: "a start stamped at the resume is moved just after it",
			cfg:  simple, f: monitor.Facts{PausedAt: at(0), ResumedAt: at(m)},
			p:    monitor.Ping{Kind: monitor.PingStart, At: at(m)},
			want: monitor.Facts{PausedAt: at(0), ResumedAt: at(m), LastStart: at(m + us)},
			res:  monitor.PingResult{Kind: monitor.PingStart, At: at(m + us)},
		},
		{
			name: "a ping stamped before the last ping is moved to it",
			cfg:  simple, f: monitor.Facts{LastPing: at(m), LastPingFailed: true},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(m - time.Millisecond)},
			want: monitor.Facts{LastPing: at(m)},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(m)},
		},
		{
			name: "a success stamped before a recorded down began is moved to it",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), State: monitor.StatusDown, StateSince: at(70 * m)},
			p:    monitor.Ping{Kind: monitor.PingSuccess, At: at(70*m - time.Millisecond)},
			want: monitor.Facts{LastPing: at(70 * m), State: monitor.StatusDown, StateSince: at(70 * m)},
			res:  monitor.PingResult{Kind: monitor.PingSuccess, At: at(70 * m)},
		},
		{
			name: "a start stamped before a recorded down began is not moved",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), State: monitor.StatusDown, StateSince: at(70 * m)},
			p:    monitor.Ping{Kind: monitor.PingStart, At: at(70*m - time.Millisecond)},
			want: monitor.Facts{LastPing: at(0), LastStart: at(70*m - time.Millisecond), State: monitor.StatusDown, StateSince: at(70 * m)},
			res:  monitor.PingResult{Kind: monitor.PingStart, At: at(70*m - time.Millisecond)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, res := tt.cfg.RecordPing(tt.f, tt.p)
			if got != tt.want {
				t.Errorf("facts:\n got %+v\nwant %+v", got, tt.want)
			}
			if res != tt.res {
				t.Errorf("result:\n got %+v\nwant %+v", res, tt.res)
			}
		})
	}
}

// TestRunPairing replays the reference's example (6.1): start(a, t0),
// start(b, t0+1m), success(a, t0+2m), success(b, t0+6m). The second start
// replaces the outstanding run, so success(a) does not end it and has no
// duration here; success(b) ends it after 300 s. (The ping log computes its
// own per-entry durations from the log, where success(a) shows 120 s.)
func TestRunPairing(t *testing.T) {
	var f monitor.Facts
	var res []monitor.PingResult
	for _, p := range []monitor.Ping{
		{Kind: monitor.PingStart, At: at(0), RID: "a"},
		{Kind: monitor.PingStart, At: at(m), RID: "b"},
		{Kind: monitor.PingSuccess, At: at(2 * m), RID: "a"},
		{Kind: monitor.PingSuccess, At: at(6 * m), RID: "b"},
	} {
		var r monitor.PingResult
		f, r = simple.RecordPing(f, p)
		res = append(res, r)
	}
	if res[2].HasDuration {
		t.Errorf("success(a) has duration %s, want none", res[2].Duration)
	}
	if f.Started() {
		t.Errorf("a run is still outstanding after success(b)")
	}
	if !res[3].HasDuration || res[3].Duration != 300*time.Second {
		t.Errorf("success(b) duration = %s (%v), want 300s", res[3].Duration, res[3].HasDuration)
	}
	if f.LastDuration != 300*time.Second {
		t.Errorf("LastDuration = %s, want 300s", f.LastDuration)
	}
	// Between the two successes the run b was still outstanding.
	mid := monitor.Facts{}
	for _, r := range []monitor.Ping{
		{Kind: monitor.PingStart, At: at(0), RID: "a"},
		{Kind: monitor.PingStart, At: at(m), RID: "b"},
		{Kind: monitor.PingSuccess, At: at(2 * m), RID: "a"},
	} {
		mid, _ = simple.RecordPing(mid, r)
	}
	if !mid.Started() || mid.LastStartRID != "b" || !mid.LastStart.Equal(at(m)) {
		t.Errorf("after success(a): started %v, run %q at %s; want run b at +1m", mid.Started(), mid.LastStartRID, mid.LastStart)
	}
}

// TestPauseResume covers the API's part (reference 4.9, 4.10).
func TestPauseResume(t *testing.T) {
	tests := []struct {
		name    string
		op      string // "pause" or "resume"
		f       monitor.Facts
		at      time.Time
		want    monitor.Facts
		wantErr error
		status  monitor.Status // after, at at
	}{
		{
			name: "pause an up check", op: "pause",
			f: monitor.Facts{LastPing: at(0)}, at: at(m),
			want: monitor.Facts{LastPing: at(0), PausedAt: at(m)}, status: monitor.StatusPaused,
		},
		{
			name: "pause a new check", op: "pause",
			f: monitor.Facts{}, at: at(m),
			want: monitor.Facts{PausedAt: at(m)}, status: monitor.StatusPaused,
		},
		{
			name: "pause a down check", op: "pause",
			f: monitor.Facts{LastPing: at(0), LastPingFailed: true, State: monitor.StatusDown, StateSince: at(0)}, at: at(m),
			want: monitor.Facts{LastPing: at(0), LastPingFailed: true, State: monitor.StatusDown, StateSince: at(0), PausedAt: at(m)}, status: monitor.StatusPaused,
		},
		{
			name: "pause a paused check: no-op", op: "pause",
			f: monitor.Facts{LastPing: at(0), PausedAt: at(m)}, at: at(h),
			want: monitor.Facts{LastPing: at(0), PausedAt: at(m)}, status: monitor.StatusPaused,
		},
		{
			name: "pause with a clock behind the last ping: at the last ping", op: "pause",
			f: monitor.Facts{LastPing: at(m)}, at: at(m - time.Millisecond),
			want: monitor.Facts{LastPing: at(m), PausedAt: at(m)}, status: monitor.StatusPaused,
		},
		{
			name: "pause with a clock behind the recorded state: at the state", op: "pause",
			f: monitor.Facts{LastPing: at(0), State: monitor.StatusDown, StateSince: at(70 * m)}, at: at(69 * m),
			want: monitor.Facts{LastPing: at(0), State: monitor.StatusDown, StateSince: at(70 * m), PausedAt: at(70 * m)}, status: monitor.StatusPaused,
		},
		{
			name: "pause at the instant of the last resume: just after it", op: "pause",
			f: monitor.Facts{PausedAt: at(0), ResumedAt: at(m)}, at: at(m),
			want: monitor.Facts{PausedAt: at(m + us), ResumedAt: at(m)}, status: monitor.StatusPaused,
		},
		{
			name: "pause a paused check whose run overran: paused again", op: "pause",
			f: monitor.Facts{LastPing: at(0), PausedAt: at(m), LastStart: at(2 * m)}, at: at(h),
			want: monitor.Facts{LastPing: at(0), PausedAt: at(h), LastStart: at(2 * m)}, status: monitor.StatusPaused,
		},
		{
			name: "resume a paused check", op: "resume",
			f: monitor.Facts{LastPing: at(0), LastDuration: m, PausedAt: at(m)}, at: at(h),
			want: monitor.Facts{LastPing: at(0), LastDuration: m, PausedAt: at(m), ResumedAt: at(h)}, status: monitor.StatusNew,
		},
		{
			name: "resume a paused check that started", op: "resume",
			f: monitor.Facts{PausedAt: at(m), LastStart: at(2 * m)}, at: at(3 * m),
			want: monitor.Facts{PausedAt: at(m), LastStart: at(2 * m), ResumedAt: at(3 * m)}, status: monitor.StatusNew,
		},
		{
			name: "resume with a clock behind the pause: at the pause", op: "resume",
			f: monitor.Facts{PausedAt: at(m)}, at: at(m - time.Millisecond),
			want: monitor.Facts{PausedAt: at(m), ResumedAt: at(m)}, status: monitor.StatusNew,
		},
		{
			name: "resume an up check: ErrNotPaused", op: "resume",
			f: monitor.Facts{LastPing: at(0)}, at: at(m),
			want: monitor.Facts{LastPing: at(0)}, wantErr: monitor.ErrNotPaused, status: monitor.StatusUp,
		},
		{
			name: "resume a new check: ErrNotPaused", op: "resume",
			f: monitor.Facts{}, at: at(m),
			want: monitor.Facts{}, wantErr: monitor.ErrNotPaused, status: monitor.StatusNew,
		},
		{
			name: "resume a resumed check: ErrNotPaused", op: "resume",
			f: monitor.Facts{PausedAt: at(0), ResumedAt: at(m)}, at: at(h),
			want: monitor.Facts{PausedAt: at(0), ResumedAt: at(m)}, wantErr: monitor.ErrNotPaused, status: monitor.StatusNew,
		},
		{
			name: "resume a paused check pinged since: ErrNotPaused", op: "resume",
			f: monitor.Facts{PausedAt: at(0), LastPing: at(m)}, at: at(2 * m),
			want: monitor.Facts{PausedAt: at(0), LastPing: at(m)}, wantErr: monitor.ErrNotPaused, status: monitor.StatusUp,
		},
		{
			name: "resume a paused check whose run overran: ErrNotPaused (it reads down)", op: "resume",
			f: monitor.Facts{PausedAt: at(0), LastStart: at(m)}, at: at(h),
			want: monitor.Facts{PausedAt: at(0), LastStart: at(m)}, wantErr: monitor.ErrNotPaused, status: monitor.StatusDown,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got monitor.Facts
			var err error
			if tt.op == "pause" {
				got = simple.Pause(tt.f, tt.at)
			} else {
				got, err = simple.Resume(tt.f, tt.at)
			}
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("error = %v, want %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("facts:\n got %+v\nwant %+v", got, tt.want)
			}
			if s := simple.Status(got, tt.at); s != tt.status {
				t.Errorf("status after = %s, want %s", s, tt.status)
			}
			if tt.op == "pause" && got.Started() {
				t.Errorf("started after a pause")
			}
			if tt.op == "resume" && err == nil && (got.Started() || !got.DisplayedLastPing().IsZero()) {
				t.Errorf("after a resume: started %v, last ping %s; want neither", got.Started(), got.DisplayedLastPing())
			}
		})
	}
	if monitor.ErrNotPaused.Error() != "check is not paused" {
		t.Errorf("ErrNotPaused = %q", monitor.ErrNotPaused)
	}
}

// TestObserve covers the reconciler's part: what it records and which
// changes are flips.
func TestObserve(t *testing.T) {
	tests := []struct {
		name      string
		cfg       monitor.Config
		f         monitor.Facts
		now       time.Time
		state     monitor.Status
		since     time.Time
		flip      *monitor.Flip
		wantFacts *monitor.Facts // when set, Observe must return exactly these facts
	}{
		{
			name: "first observation of a new check",
			cfg:  simple, f: monitor.Facts{}, now: at(m),
			state: monitor.StatusNew, since: at(m),
		},
		{
			name: "new check observed again keeps its instant",
			cfg:  simple, f: monitor.Facts{State: monitor.StatusNew, StateSince: at(0)}, now: at(h),
			state: monitor.StatusNew, since: at(0),
		},
		{
			name: "new→up is not a flip",
			cfg:  simple, f: monitor.Facts{LastPing: at(m), State: monitor.StatusNew, StateSince: at(0)}, now: at(m),
			state: monitor.StatusUp, since: at(m),
		},
		{
			name: "up→grace is not a flip; grace began at the due time",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), State: monitor.StatusUp, StateSince: at(0)}, now: at(65 * m),
			state: monitor.StatusGrace, since: at(h),
		},
		{
			name: "up→down observed three days late: flip at the deadline",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), State: monitor.StatusUp, StateSince: at(0)}, now: at(3 * d),
			state: monitor.StatusDown, since: at(70 * m),
			flip: &monitor.Flip{At: at(70 * m), From: monitor.StatusUp, To: monitor.StatusDown, Reason: monitor.ReasonTimeout},
		},
		{
			name: "up→down by a fail: flip at the fail",
			cfg:  simple, f: monitor.Facts{LastPing: at(10 * m), LastPingFailed: true, State: monitor.StatusUp, StateSince: at(0)}, now: at(11 * m),
			state: monitor.StatusDown, since: at(10 * m),
			flip: &monitor.Flip{At: at(10 * m), From: monitor.StatusUp, To: monitor.StatusDown, Reason: monitor.ReasonFail},
		},
		{
			name: "a fail, then a run that overran: flip at the fail",
			cfg:  simple, f: monitor.Facts{LastPing: at(10 * m), LastPingFailed: true, LastStart: at(20 * m), State: monitor.StatusUp, StateSince: at(0)}, now: at(h),
			state: monitor.StatusDown, since: at(10 * m),
			flip: &monitor.Flip{At: at(10 * m), From: monitor.StatusUp, To: monitor.StatusDown, Reason: monitor.ReasonFail},
		},
		{
			name: "down→up: flip at the ping",
			cfg:  simple, f: monitor.Facts{LastPing: at(5 * h), State: monitor.StatusDown, StateSince: at(70 * m)}, now: at(5*h + m),
			state: monitor.StatusUp, since: at(5 * h),
			flip: &monitor.Flip{At: at(5 * h), From: monitor.StatusDown, To: monitor.StatusUp},
		},
		{
			name: "down→grace (the ping was already late when observed): an up flip",
			cfg:  simple, f: monitor.Facts{LastPing: at(5 * h), State: monitor.StatusDown, StateSince: at(70 * m)}, now: at(6*h + m),
			state: monitor.StatusGrace, since: at(6 * h),
			flip: &monitor.Flip{At: at(5 * h), From: monitor.StatusDown, To: monitor.StatusGrace},
		},
		{
			name: "down→down by a later fail keeps the first instant",
			cfg:  simple, f: monitor.Facts{LastPing: at(5 * h), LastPingFailed: true, State: monitor.StatusDown, StateSince: at(70 * m)}, now: at(6 * h),
			state: monitor.StatusDown, since: at(70 * m),
		},
		{
			name: "up→paused is not a flip",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), PausedAt: at(m), State: monitor.StatusUp, StateSince: at(0)}, now: at(2 * m),
			state: monitor.StatusPaused, since: at(m),
		},
		{
			name: "down→paused is not a flip",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), LastPingFailed: true, PausedAt: at(m), State: monitor.StatusDown, StateSince: at(0)}, now: at(2 * m),
			state: monitor.StatusPaused, since: at(m),
		},
		{
			name: "paused→new (resume) is not a flip",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), PausedAt: at(m), ResumedAt: at(2 * m), State: monitor.StatusPaused, StateSince: at(m)}, now: at(3 * m),
			state: monitor.StatusNew, since: at(2 * m),
		},
		{
			name: "recorded down, pause missed, then a success: paused→up, no flip",
			cfg:  simple, f: monitor.Facts{LastPing: at(2 * h), PausedAt: at(h), State: monitor.StatusDown, StateSince: at(10 * m)}, now: at(2 * h),
			state: monitor.StatusUp, since: at(2 * h),
		},
		{
			name: "recorded down, pause and resume missed, then a success: new→up, no flip",
			cfg:  simple, f: monitor.Facts{LastPing: at(2 * h), PausedAt: at(h), ResumedAt: at(h + m), State: monitor.StatusDown, StateSince: at(10 * m)}, now: at(2 * h),
			state: monitor.StatusUp, since: at(2 * h),
		},
		{
			name: "recorded up, pause missed, then a fail: paused→down flip",
			cfg:  simple, f: monitor.Facts{LastPing: at(2 * h), LastPingFailed: true, PausedAt: at(h), State: monitor.StatusUp, StateSince: at(0)}, now: at(2 * h),
			state: monitor.StatusDown, since: at(2 * h),
			flip: &monitor.Flip{At: at(2 * h), From: monitor.StatusPaused, To: monitor.StatusDown, Reason: monitor.ReasonFail},
		},
		{
			name: "never observed, paused: recorded paused",
			cfg:  simple, f: monitor.Facts{PausedAt: at(m)}, now: at(2 * m),
			state: monitor.StatusPaused, since: at(m),
		},
		{
			name: "a settled record is returned unchanged",
			cfg:  simple, f: monitor.Facts{LastPing: at(0), PausedAt: at(m), State: monitor.StatusPaused, StateSince: at(m)}, now: at(h),
			state: monitor.StatusPaused, since: at(m),
			wantFacts: &monitor.Facts{LastPing: at(0), PausedAt: at(m), State: monitor.StatusPaused, StateSince: at(m)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, flip := tt.cfg.Observe(tt.f, tt.now)
			if got.State != tt.state || !got.StateSince.Equal(tt.since) {
				t.Errorf("recorded %s since %s, want %s since %s", got.State, got.StateSince, tt.state, tt.since)
			}
			switch {
			case (flip == nil) != (tt.flip == nil):
				t.Errorf("flip = %+v, want %+v", flip, tt.flip)
			case flip != nil && *flip != *tt.flip:
				t.Errorf("flip = %+v, want %+v", *flip, *tt.flip)
			}
			if tt.wantFacts != nil && got != *tt.wantFacts {
				t.Errorf("facts:\n got %+v\nwant %+v", got, *tt.wantFacts)
			}
			// Observe writes only the reconciler's fields and the missed
			// runs it counts.
			back := got
			back.State, back.StateSince = tt.f.State, tt.f.StateSince
			back.Failures, back.MissedAt = tt.f.Failures, tt.f.MissedAt
			if back != tt.f {
				t.Errorf("Observe changed other fields:\n got %+v\nwant %+v", back, tt.f)
			}
		})
	}
}

func TestFlipUp(t *testing.T) {
	for _, tt := range []struct {
		to   monitor.Status
		want bool
	}{
		{monitor.StatusDown, false},
		{monitor.StatusUp, true},
		{monitor.StatusGrace, true},
	} {
		if got := (monitor.Flip{To: tt.to}).Up(); got != tt.want {
			t.Errorf("Flip{To: %s}.Up() = %v, want %v", tt.to, got, tt.want)
		}
	}
}

func TestPingKindForExitStatus(t *testing.T) {
	for _, tt := range []struct {
		status int
		want   monitor.PingKind
		ok     bool
	}{
		{0, monitor.PingSuccess, true},
		{1, monitor.PingFail, true},
		{7, monitor.PingFail, true},
		{255, monitor.PingFail, true},
		{256, "", false},
		{-1, "", false},
		{1 << 40, "", false},
	} {
		got, ok := monitor.PingKindForExitStatus(tt.status)
		if got != tt.want || ok != tt.ok {
			t.Errorf("PingKindForExitStatus(%d) = %q, %v; want %q, %v", tt.status, got, ok, tt.want, tt.ok)
		}
	}
}

func TestApplyErrors(t *testing.T) {
	f := monitor.Facts{LastPing: at(0)}
	for _, tt := range []struct {
		name string
		ev   monitor.Event
		is   error
	}{
		{"exit status 256", exit(256, m), monitor.ErrInvalidExitStatus},
		{"exit status -1", exit(-1, m), monitor.ErrInvalidExitStatus},
		{"resume, not paused", resume(m), monitor.ErrNotPaused},
		{"unknown event kind", monitor.Event{Kind: "explode", At: at(m)}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, flip, err := simple.Apply(f, tt.ev)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("error %v is not %v", err, tt.is)
			}
			if got != f || flip != nil {
				t.Errorf("changed facts or flipped on error: %+v, %+v", got, flip)
			}
		})
	}
}
