package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CheckSelection chooses Checks of the object's namespace by their labels,
// their tags or their names: a Check any of the three selects is chosen.
// MaintenanceWindows and StatusPages choose their Checks with it.
// +kubebuilder:validation:XValidation:rule="has(self.selector) || (has(self.tags) && size(self.tags) > 0) || (has(self.checks) && size(self.checks) > 0)",message="select checks with at least one of selector, tags and checks (selector: {} selects every check of the namespace)"
type CheckSelection struct {
	// Selector selects Checks of the namespace by their labels; {} selects
	// every Check.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Tags selects Checks that have any of these tags (spec.tags).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=100
	// +kubebuilder:validation:items:Pattern=`^\S+$`
	Tags []string `json:"tags,omitempty"`

	// Checks selects Checks of the namespace by name.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	Checks []string `json:"checks,omitempty"`
}
