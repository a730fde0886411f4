// Package selection is how a MaintenanceWindow or a StatusPage chooses
// checks of its namespace (their spec's v1alpha1.CheckSelection): by
// labels, by tags, or by name, any of which selects.
package selection

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Selection is a compiled choice of checks.
type Selection struct {
	selector labels.Selector // nil: none
	tags     []string
	names    []string
}

// New compiles a choice: a label selector ({} selects every check), tags
// (a check with any of them) and names. Its error names spec.selector.
func New(c v1.CheckSelection) (Selection, error) {
	s := Selection{tags: c.Tags, names: c.Checks}
	if c.Selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(c.Selector)
		if err != nil {
			return Selection{}, fmt.Errorf("spec.selector: %w", err)
		}
		s.selector = sel
	}
	return s, nil
}

// Selects reports whether the check is chosen: its labels match the
// selector, it has one of the tags, or it is named.
func (s Selection) Selects(c *v1.Check) bool {
	if s.selector != nil && s.selector.Matches(labels.Set(c.Labels)) {
		return true
	}
	if slices.Contains(s.names, c.Name) {
		return true
	}
	for _, tag := range strings.Fields(c.Spec.Tags) {
		if slices.Contains(s.tags, tag) {
			return true
		}
	}
	return false
}
