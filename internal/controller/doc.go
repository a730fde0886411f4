// Package controller holds Vigil's reconcilers: thin loops that load an
// object, call the domain packages (monitor, history, notify), patch status
// once, and requeue at the next instant something can change.
package controller

import "sort"

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}
