package monitor_test

import (
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/words"
)

// back is Vigil coming back at until from an absence that began at from.
func back(from, until time.Duration) monitor.Event {
	return monitor.Event{Kind: monitor.EventReturn, AwayFrom: at(from), At: at(until)}
}

// absentDetail is the flip's detail for a down at the end of a fresh grace
// given at the return at off.
func absentDetail(c monitor.Config, off time.Duration) string {
	return "it fell due while Vigil was away; no ping came in the " + words.Duration(c.Grace) +
		" of grace after Vigil was back at " + at(off).UTC().Format("2006-01-02 15:04:05 UTC")
}

// TestAbsence covers Vigil's own absence: a failed run that time alone
// would count, falling while Vigil was away, is given a fresh grace from
// its return; anything else is judged as before.
func TestAbsence(t *testing.T) {
	three := simple
	three.FailureThreshold = 3
	long := simple
	long.MaxRuntime = 2 * h
	down := func(off time.Duration, from monitor.Status, detail string) monitor.Flip {
		return monitor.Flip{At: at(off), From: from, To: monitor.StatusDown, Reason: monitor.ReasonTimeout, Detail: detail}
	}
	tests := []struct {
		name     string
		cfg      monitor.Config
		events   []monitor.Event
		flips    []monitor.Flip
		status   monitor.Status
		reprieve time.Duration // the Reprieve fact at the end, from t0 (0: none)
		// next and deadline: NextPing and Deadline at the end, from t0
		// (0: none).
		next, deadline time.Duration
	}{
		{
			name:   "a deadline that fell while away: no down at the return, grace from it",
			cfg:    simple,
			events: []monitor.Event{success(0), back(65*m, 80*m)},
			status: monitor.StatusGrace, reprieve: 80 * m, next: 80 * m, deadline: 90 * m,
		},
		{
			name:   "no ping in the fresh grace: down at its end, saying why",
			cfg:    simple,
			events: []monitor.Event{success(0), back(65*m, 80*m), tick(90 * m)},
			flips:  []monitor.Flip{down(90*m, monitor.StatusGrace, absentDetail(simple, 80*m))},
			status: monitor.StatusDown, reprieve: 80 * m,
		},
		{
			name:   "a ping in the fresh grace: never down, and the reprieve is moot",
			cfg:    simple,
			events: []monitor.Event{success(0), back(65*m, 80*m), success(85 * m), tick(150 * m)},
			status: monitor.StatusGrace, reprieve: 80 * m, next: 145 * m, deadline: 155 * m,
		},
		{
			name:   "the next deadline after the fresh grace's ping is the usual one",
			cfg:    simple,
			events: []monitor.Event{success(0), back(65*m, 80*m), success(85 * m), tick(155 * m)},
			flips:  []monitor.Flip{down(155*m, monitor.StatusUp, "")},
			status: monitor.StatusDown, reprieve: 80 * m,
		},
		{
			name:   "a deadline before the absence was the job's: down at it, nothing changes at the return",
			cfg:    simple,
			events: []monitor.Event{success(0), tick(70 * m), back(75*m, 80*m), tick(3 * h)},
			flips:  []monitor.Flip{down(70*m, monitor.StatusUp, "")},
			status: monitor.StatusDown,
		},
		{
			name:   "a deadline after the return is judged as usual",
			cfg:    simple,
			events: []monitor.Event{success(0), back(30*m, 40*m), tick(70 * m)},
			flips:  []monitor.Flip{down(70*m, monitor.StatusUp, "")},
			status: monitor.StatusDown,
		},
		{
			name:   "a deadline at the very instant of the return is reprieved",
			cfg:    simple,
			events: []monitor.Event{success(0), back(65*m, 70*m)},
			status: monitor.StatusGrace, reprieve: 70 * m, next: 70 * m, deadline: 80 * m,
		},
		{
			name:   "a failed check stays down: the absence excuses time, not a fail",
			cfg:    simple,
			events: []monitor.Event{success(0), fail(30 * m), back(65*m, 80*m)},
			flips:  []monitor.Flip{{At: at(30 * m), From: monitor.StatusUp, To: monitor.StatusDown, Reason: monitor.ReasonFail}},
			status: monitor.StatusDown,
		},
		{
			name:   "a new check has nothing to excuse",
			cfg:    simple,
			events: []monitor.Event{tick(0), back(65*m, 80*m)},
			status: monitor.StatusNew,
		},
		{
			name:   "a second absence over the fresh grace's end reprieves again",
			cfg:    simple,
			events: []monitor.Event{success(0), back(65*m, 80*m), back(85*m, 100*m), tick(110 * m)},
			flips:  []monitor.Flip{down(110*m, monitor.StatusGrace, absentDetail(simple, 100*m))},
			status: monitor.StatusDown, reprieve: 100 * m,
		},
		{
			name:   "a run that would have overrun while away gets the fresh grace",
			cfg:    simple,
			events: []monitor.Event{start(m), back(5*m, 20*m), tick(29 * m)},
			status: monitor.StatusNew, reprieve: 20 * m, next: m, deadline: 30 * m,
		},
		{
			name:   "a run that would have overrun while away is down, a timeout, at the fresh grace's end",
			cfg:    simple,
			events: []monitor.Event{start(m), back(5*m, 20*m), tick(30 * m)},
			flips:  []monitor.Flip{down(30*m, monitor.StatusNew, absentDetail(simple, 20*m))},
			status: monitor.StatusDown, reprieve: 20 * m,
		},
		{
			name:   "a run past its max runtime while away ends in the fresh grace",
			cfg:    long,
			events: []monitor.Event{success(0), start(50 * m), back(160*m, 180*m), success(185 * m)},
			status: monitor.StatusUp, reprieve: 180 * m, next: 245 * m, deadline: 255 * m,
		},
		{
			name:   "a run past its max runtime while away and still silent is down as a timeout",
			cfg:    long,
			events: []monitor.Event{success(0), start(50 * m), back(160*m, 180*m), tick(190 * m)},
			flips:  []monitor.Flip{down(190*m, monitor.StatusUp, absentDetail(long, 180*m))},
			status: monitor.StatusDown, reprieve: 180 * m,
		},
		{
			name: "threshold 3: the runs missed while away count as none; the fresh grace's miss counts one",
			cfg:  three,
			// Deadlines at 70, 130 and 190 min fell while away.
			events: []monitor.Event{success(0), back(65*m, 200*m), tick(210 * m)},
			status: monitor.StatusUp, reprieve: 200 * m, next: 260 * m, deadline: 330 * m,
		},
		{
			name:   "threshold 3: down two runs after the fresh grace, not at it",
			cfg:    three,
			events: []monitor.Event{success(0), back(65*m, 200*m), tick(210 * m), tick(270 * m), tick(330 * m)},
			flips:  []monitor.Flip{down(330*m, monitor.StatusUp, "")},
			status: monitor.StatusDown, reprieve: 200 * m,
		},
		{
			name:   "a pause and a resume after the return make the reprieve moot",
			cfg:    simple,
			events: []monitor.Event{success(0), back(65*m, 80*m), pause(82 * m), resume(84 * m), tick(5 * h)},
			status: monitor.StatusNew, reprieve: 80 * m,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, flips := observed(t, tt.cfg, tt.events...)
			if len(flips) != len(tt.flips) {
				t.Fatalf("flips %+v, want %+v", flips, tt.flips)
			}
			for i := range flips {
				if flips[i] != tt.flips[i] {
					t.Errorf("flip %d = %+v, want %+v", i, flips[i], tt.flips[i])
				}
			}
			now := tt.events[len(tt.events)-1].At
			if st := tt.cfg.Status(f, now); st != tt.status {
				t.Errorf("status %s, want %s", st, tt.status)
			}
			want := time.Time{}
			if tt.reprieve != 0 {
				want = at(tt.reprieve)
			}
			if !f.Reprieve.Equal(want) {
				t.Errorf("Reprieve %s, want %s", optTime(f.Reprieve, !f.Reprieve.IsZero()), optTime(want, !want.IsZero()))
			}
			for _, c := range []struct {
				name string
				want time.Duration
				got  func(monitor.Facts) (time.Time, bool)
			}{{"NextPing", tt.next, tt.cfg.NextPing}, {"Deadline", tt.deadline, tt.cfg.Deadline}} {
				got, ok := c.got(f)
				if tt.status == monitor.StatusDown {
					continue
				}
				if want, wantOK := at(c.want), c.want != 0; ok != wantOK || (ok && !got.Equal(want)) {
					t.Errorf("%s %s, want %s", c.name, optTime(got, ok), optTime(want, wantOK))
				}
			}
		})
	}
}

// TestAbsentIsIdempotent: telling the same absence twice (a return whose
// first pass failed half-way) changes nothing more.
func TestAbsentIsIdempotent(t *testing.T) {
	f, _ := observed(t, simple, success(0))
	once := simple.Absent(f, at(65*m), at(80*m))
	if twice := simple.Absent(once, at(65*m), at(80*m)); twice != once {
		t.Errorf("second Absent changed the facts: %+v, want %+v", twice, once)
	}
	if later := simple.Absent(once, at(65*m), at(81*m)); !later.Reprieve.Equal(at(80 * m)) {
		t.Errorf("a longer account of the same absence moved the reprieve to %s; the fresh grace's end, 90 min, is after it",
			later.Reprieve)
	}
}
