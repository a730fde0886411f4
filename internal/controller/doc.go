// Package controller holds Vigil's reconcilers: thin loops that load an
// object, call the domain packages (checks, monitor, coverage, maintenance,
// notify), write its status once (a Check's through package projection,
// every other kind's through statusWrite, deferred from the start: see
// status.go), and requeue at the next instant something can change.
package controller

import "sort"

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
