package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CronJobDefaults are what a policy gives the Checks it makes for
// CronJobs. A field left out leaves the Check's own value alone (the
// default on a new Check, or what was written on it by hand), and a field
// the policy stops setting goes back to its default; an annotation on a
// CronJob wins over the policy for that CronJob (docs/cronjobs.md).
type CronJobDefaults struct {
	// Grace is how long after a scheduled run the check waits for it
	// before going down ("10m"; 1m to 8760h, as a Check's grace). Default
	// one hour.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8760h')",message="grace must be between 1m and 8760h (365 days)"
	Grace *metav1.Duration `json:"grace,omitempty"`

	// Channels are the names of the Channels (in the CronJob's namespace)
	// the checks notify; a single "*" selects every Channel of the
	// namespace.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!('*' in self) || size(self) == 1",message="\"*\" (all channels) cannot be combined with channel names"
	Channels []string `json:"channels,omitempty"`

	// Tags are the checks' tags, space-separated.
	// +optional
	// +kubebuilder:validation:MaxLength=500
	Tags string `json:"tags,omitempty"`

	// MaxSuspended raises an alert when a CronJob stays suspended longer
	// than this ("24h"; 1m to 8784h): its check, paused while the CronJob
	// is suspended, goes down once with a failure that says so. Unset: a
	// suspended CronJob's check stays paused for as long as it is.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8784h')",message="maxSuspended must be between 1m and 8784h (366 days)"
	MaxSuspended *metav1.Duration `json:"maxSuspended,omitempty"`

	// AlertOnOverlap makes a run that starts while an earlier run of the
	// same CronJob still runs (concurrencyPolicy Allow) a failure of the
	// check, once per run. Unset, overlapping runs show in the ping log
	// under their own run ids and alert nothing.
	// +optional
	AlertOnOverlap bool `json:"alertOnOverlap,omitempty"`

	// The alert policy of the checks (docs/alerting.md).
	AlertPolicy `json:",inline"`
}

// CronJobPolicySpec covers CronJobs of the policy's namespace: each one it
// selects gets a Check, without an annotation.
type CronJobPolicySpec struct {
	// Selector selects the namespace's CronJobs by label. Left out (or
	// {}), the policy covers every CronJob of the namespace.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	CronJobDefaults `json:",inline"`
}

// ClusterCronJobPolicySpec covers CronJobs in the namespaces it selects,
// for a cluster's administrator. A namespace's own CronJobPolicy wins over
// it.
type ClusterCronJobPolicySpec struct {
	// NamespaceSelector selects namespaces by label; {} selects every
	// namespace.
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// Selector selects CronJobs in those namespaces by label. Left out (or
	// {}), every CronJob of theirs.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	CronJobDefaults `json:",inline"`
}

// CronJobPolicyStatus is what a policy covers.
type CronJobPolicyStatus struct {
	// ObservedGeneration is the spec generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (the policy is read and applied), and Conflicting
	// while a CronJob it selects is also selected by another policy of the
	// same level.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// CronJobs is how many CronJobs this policy gives a Check.
	// +optional
	CronJobs int32 `json:"cronJobs"`

	// Conflicts names CronJobs (namespace/name for a cluster policy) that
	// another policy of the same level also selects, with the policy that
	// applies: the first of them by name. At most 20.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	Conflicts []string `json:"conflicts,omitempty"`
}

// Condition type and reasons of the policies.
const (
	// ConditionConflicting is True on a policy while a CronJob it selects
	// is also selected by another policy of its level.
	ConditionConflicting = "Conflicting"
	// ReasonPolicyApplied: the policy is read and its Checks follow it.
	ReasonPolicyApplied = "PolicyApplied"
	// ReasonSelectedTwice: a CronJob is selected by two policies of one
	// level; the first by name applies.
	ReasonSelectedTwice = "SelectedTwice"
	// ReasonNoConflict: no CronJob the policy selects is selected by
	// another of its level.
	ReasonNoConflict = "NoConflict"
)

// CronJobPolicy gives every CronJob of its namespace it selects a Check
// (with its defaults), without annotating each one. A CronJob annotated
// monitoring.vigil.dev/check: "false" is left out.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cjp,categories=vigil
// +kubebuilder:printcolumn:name="CronJobs",type=integer,JSONPath=`.status.cronJobs`,description="CronJobs this policy gives a Check"
// +kubebuilder:printcolumn:name="Conflicting",type=string,JSONPath=`.status.conditions[?(@.type=="Conflicting")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CronJobPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec CronJobPolicySpec `json:"spec,omitempty"`
	// +optional
	Status CronJobPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CronJobPolicyList is a list of CronJobPolicies.
type CronJobPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CronJobPolicy `json:"items"`
}

// ClusterCronJobPolicy gives every CronJob it selects, in the namespaces
// it selects, a Check, for namespaces that write no CronJobPolicy of their
// own. It is the cluster administrator's: the manager applies it under its
// own RBAC.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ccjp,categories=vigil
// +kubebuilder:printcolumn:name="CronJobs",type=integer,JSONPath=`.status.cronJobs`,description="CronJobs this policy gives a Check"
// +kubebuilder:printcolumn:name="Conflicting",type=string,JSONPath=`.status.conditions[?(@.type=="Conflicting")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ClusterCronJobPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ClusterCronJobPolicySpec `json:"spec"`
	// +optional
	Status CronJobPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterCronJobPolicyList is a list of ClusterCronJobPolicies.
type ClusterCronJobPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterCronJobPolicy `json:"items"`
}
