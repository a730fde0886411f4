// Package v1alpha1 contains the API types of the monitoring.vigil.dev group:
// Check (a recurring job that is expected to ping Vigil) and Channel (where
// Vigil sends a notification when a check goes down or comes back up). What
// happens to checks (pings, flips, deliveries) lives in Vigil's ping store,
// not in the Kubernetes API.
//
// +kubebuilder:object:generate=true
// +groupName=monitoring.vigil.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the group and version of every type in this package.
var GroupVersion = schema.GroupVersion{Group: "monitoring.vigil.dev", Version: "v1alpha1"}

var schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

// AddToScheme adds the types of this package to a runtime.Scheme.
var AddToScheme = schemeBuilder.AddToScheme

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Check{}, &CheckList{},
		&Channel{}, &ChannelList{},
		&MaintenanceWindow{}, &MaintenanceWindowList{},
		&StatusPage{}, &StatusPageList{},
		&CronJobPolicy{}, &CronJobPolicyList{},
		&ClusterCronJobPolicy{}, &ClusterCronJobPolicyList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
