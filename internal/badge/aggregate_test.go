package badge

import (
	"iter"
	"slices"
	"testing"

	"github.com/vigil-operator/vigil/internal/monitor"
)

const (
	n = monitor.StatusNew
	u = monitor.StatusUp
	g = monitor.StatusGrace
	d = monitor.StatusDown
	p = monitor.StatusPaused
)

func TestAggregate(t *testing.T) {
	tests := []struct {
		name       string
		statuses   []Status
		threeState bool
		want       Result
	}{
		{"no checks", nil, true, Result{"up", 0, 0, 0}},
		{"no checks, two-state", nil, false, Result{"up", 0, 0, 0}},
		{"new counts as up", []Status{n}, true, Result{"up", 1, 0, 0}},
		{"paused counts as up", []Status{p}, true, Result{"up", 1, 0, 0}},
		{"all up", []Status{u, n, p, u}, true, Result{"up", 4, 0, 0}},
		{"grace is late in three-state", []Status{u, g}, true, Result{"late", 2, 1, 0}},
		{"grace is up in two-state, still counted", []Status{u, g}, false, Result{"up", 2, 1, 0}},
		{"down", []Status{d}, false, Result{"down", 1, 0, 1}},
		{"down wins over late", []Status{g, d}, true, Result{"down", 2, 1, 1}},
		{"down wins when grace comes after", []Status{d, g}, true, Result{"down", 2, 1, 1}},
		{"down, two-state", []Status{g, d, u}, false, Result{"down", 3, 1, 1}},
		{"every check counted", []Status{d, d, g, g, u, n, p}, true, Result{"down", 7, 2, 2}},
		{"unknown status counts as up", []Status{"started", ""}, true, Result{"up", 2, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Aggregate(tt.statuses, tt.threeState); got != tt.want {
				t.Errorf("Aggregate(%v, %v) = %+v, want %+v", tt.statuses, tt.threeState, got, tt.want)
			}
			// Without the early stop, the sequence form is the same.
			if got := AggregateSeq(slices.Values(tt.statuses), tt.threeState, false); got != tt.want {
				t.Errorf("AggregateSeq(%v, %v, false) = %+v, want %+v", tt.statuses, tt.threeState, got, tt.want)
			}
		})
	}
}

// counting yields statuses and records how many were pulled, like a caller
// that computes each check's status on demand.
func counting(statuses []Status, pulled *int) iter.Seq[Status] {
	return func(yield func(Status) bool) {
		for _, s := range statuses {
			*pulled++
			if !yield(s) {
				return
			}
		}
	}
}

func TestAggregateSeqEarlyStop(t *testing.T) {
	tests := []struct {
		name       string
		statuses   []Status
		threeState bool
		want       Result
		pulled     int
	}{
		{"stops at the first down", []Status{d, d}, false, Result{"down", 1, 0, 1}, 1},
		{"counts until the first down", []Status{u, g, d, g, d, u}, true, Result{"down", 3, 1, 1}, 3},
		{"no down, no stop", []Status{u, g, n}, true, Result{"late", 3, 1, 0}, 3},
		{"empty", nil, true, Result{"up", 0, 0, 0}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pulled := 0
			got := AggregateSeq(counting(tt.statuses, &pulled), tt.threeState, true)
			if got != tt.want || pulled != tt.pulled {
				t.Errorf("AggregateSeq = %+v after %d statuses, want %+v after %d", got, pulled, tt.want, tt.pulled)
			}
			// The state is the same as without the early stop.
			if full := Aggregate(tt.statuses, tt.threeState); full.Status != got.Status {
				t.Errorf("early stop changed the state: %q vs %q", got.Status, full.Status)
			}
		})
	}
}

// Request.Aggregate stops early for svg only, and takes the number of states
// from the signature.
func TestRequestAggregate(t *testing.T) {
	statuses := []Status{g, d, d, u}
	tests := []struct {
		path   string
		want   Result
		pulled int
	}{
		{"alice/HLoyq8dX/foo.svg", Result{"down", 2, 1, 1}, 2},
		{"alice/HLoyq8dX/foo.json", Result{"down", 4, 1, 2}, 4},
		{"alice/HLoyq8dX-2/foo.shields", Result{"down", 4, 1, 2}, 4},
		{"alice/6SKpySaJ-2.svg", Result{"down", 2, 1, 1}, 2},
	}
	for _, tt := range tests {
		r, ok := ParsePath(tt.path)
		if !ok {
			t.Fatalf("ParsePath(%q) did not route", tt.path)
		}
		pulled := 0
		if got := r.Aggregate(counting(statuses, &pulled)); got != tt.want || pulled != tt.pulled {
			t.Errorf("%s: Aggregate = %+v after %d, want %+v after %d", tt.path, got, pulled, tt.want, tt.pulled)
		}
	}
	late := []Status{u, g}
	for path, want := range map[string]string{
		"alice/HLoyq8dX/foo.json":   "late",
		"alice/HLoyq8dX-2/foo.json": "up",
		"alice/HLoyq8dX/foo.svg":    "late",
		"alice/HLoyq8dX-2/foo.svg":  "up",
	} {
		r, _ := ParsePath(path)
		if got := r.Aggregate(slices.Values(late)).Status; got != want {
			t.Errorf("%s: state %q, want %q", path, got, want)
		}
	}
}

func TestCheckBadge(t *testing.T) {
	tests := []struct {
		status     Status
		threeState bool
		want       Result
	}{
		{n, false, Result{"up", 1, 0, 0}},
		{n, true, Result{"up", 1, 0, 0}},
		{u, true, Result{"up", 1, 0, 0}},
		{p, true, Result{"up", 1, 0, 0}},
		{g, false, Result{"up", 1, 1, 0}},
		{g, true, Result{"late", 1, 1, 0}},
		{d, false, Result{"down", 1, 0, 1}},
		{d, true, Result{"down", 1, 0, 1}},
		{"started", true, Result{"up", 1, 0, 0}},
	}
	for _, tt := range tests {
		if got := CheckBadge(tt.status, tt.threeState); got != tt.want {
			t.Errorf("CheckBadge(%q, %v) = %+v, want %+v", tt.status, tt.threeState, got, tt.want)
		}
	}
}
