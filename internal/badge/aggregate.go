package badge

import (
	"iter"
	"slices"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Status is a check's status as computed at read time (v2/v3 semantics,
// never "started"): the monitor's.
type Status = monitor.Status

// Badge states, the Status of a [Result].
const (
	StateUp   = "up"
	StateLate = "late"
	StateDown = "down"
)

// Result is an aggregated badge: its state and the counts the JSON format
// reports.
type Result struct {
	// Status is "up", "late" or "down".
	Status string
	// Total is the number of checks counted.
	Total int
	// Grace is the number of counted checks in their grace period (also in
	// two-state mode, where they do not make the badge late).
	Grace int
	// Down is the number of counted checks that are down.
	Down int
}

// Aggregate computes a badge from the statuses of all matching checks, as
// the reference does for the json and shields formats: every check is
// counted; any "down" check makes the badge "down"; a "grace" check makes it
// "late" only when threeState is true and no check is down; "new",
// "paused", "up" (and any unknown status) count as up. Zero checks are "up"
// with total 0.
//
// The reference's SVG badge stops at the first down check, so its counts
// can be lower; SVG shows only the state, which is the same. Use
// [Request.Aggregate] or [AggregateSeq] to reproduce the early stop.
func Aggregate(statuses []Status, threeState bool) Result {
	return AggregateSeq(slices.Values(statuses), threeState, false)
}

// AggregateSeq is [Aggregate] over a sequence that is pulled lazily. When
// stopAtFirstDown is true (the reference does this for the svg format) it
// stops pulling after the first down check, so Total, Grace and Down count
// only the checks seen up to and including it; Status is unaffected.
func AggregateSeq(statuses iter.Seq[Status], threeState, stopAtFirstDown bool) Result {
	res := Result{Status: StateUp}
	for s := range statuses {
		res.Total++
		switch s {
		case monitor.StatusDown:
			res.Down++
			res.Status = StateDown
			if stopAtFirstDown {
				return res
			}
		case monitor.StatusGrace:
			res.Grace++
			if threeState && res.Status == StateUp {
				res.Status = StateLate
			}
		}
	}
	return res
}

// CheckBadge computes the badge of a single check (the /b/ URLs): "down"
// when the check is down, "late" when it is in its grace period and
// threeState is true, "up" otherwise. Total is 1; Grace is 1 when the check
// is in its grace period even in two-state mode; Down is 1 when it is down.
func CheckBadge(status Status, threeState bool) Result {
	res := Result{Status: StateUp, Total: 1}
	switch status {
	case monitor.StatusDown:
		res.Status, res.Down = StateDown, 1
	case monitor.StatusGrace:
		res.Grace = 1
		if threeState {
			res.Status = StateLate
		}
	}
	return res
}
