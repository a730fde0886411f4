// Package v1alpha1 contains the API types of the monitoring.vigil.dev group:
// Check (a recurring job that is expected to ping Vigil) and Channel (where
// Vigil sends a notification when a check goes down or comes back up).
//
// +kubebuilder:object:generate=true
// +groupName=monitoring.vigil.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every type in this package.
	GroupVersion = schema.GroupVersion{Group: "monitoring.vigil.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
