package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StatusPageSpec publishes a read-only page of the Checks it selects: each
// one's name, state and 90-day uptime, and nothing else (never a UUID, a
// ping URL, a slug or a ping's body). The page's address is unguessable,
// as a badge's; status.url says it. Delete the StatusPage to unpublish
// it, and create it again for a new address.
type StatusPageSpec struct {
	// Title heads the page.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	Title string `json:"title"`

	// Description is a paragraph under the title.
	// +optional
	// +kubebuilder:validation:MaxLength=1000
	Description string `json:"description,omitempty"`

	// CheckSelection: the Checks the page shows.
	CheckSelection `json:",inline"`
}

// StatusPageStatus is the page as the manager serves it.
type StatusPageStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (the page is served).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL is the page's address; add .json or .rss for the same page as
	// JSON or as an RSS feed of its checks' state changes.
	// +optional
	URL string `json:"url,omitempty"`

	// Checks is how many Checks the page shows.
	// +optional
	Checks int32 `json:"checks"`
}

// StatusPage publishes the state and uptime of the Checks it selects on a
// public, read-only page at an unguessable address.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=sp,categories=vigil
// +kubebuilder:printcolumn:name="Title",type=string,JSONPath=`.spec.title`
// +kubebuilder:printcolumn:name="Checks",type=integer,JSONPath=`.status.checks`
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StatusPage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StatusPageSpec   `json:"spec"`
	Status StatusPageStatus `json:"status,omitempty"`
}

// StatusPageList is a list of StatusPages.
// +kubebuilder:object:root=true
type StatusPageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StatusPage `json:"items"`
}

// ReasonPublished: the status page is served at status.url.
const ReasonPublished = "Published"
