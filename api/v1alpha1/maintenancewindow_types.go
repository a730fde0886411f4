package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaintenanceWindowSpec says which Checks of the namespace a window covers
// and when. While it is active their pings and flips are recorded as ever,
// but their notifications are held; when it ends, each Channel is told
// once what changed while it was held (a check still down is announced
// then). A window is one-off (from, to) or recurring (schedule, duration,
// tz).
// +kubebuilder:validation:XValidation:rule="has(self.from) == has(self.to)",message="set from and to together (a one-off window)"
// +kubebuilder:validation:XValidation:rule="has(self.schedule) == has(self.duration)",message="set schedule and duration together (a recurring window)"
// +kubebuilder:validation:XValidation:rule="has(self.from) != has(self.schedule)",message="set either from and to (a one-off window) or schedule and duration (a recurring window)"
// +kubebuilder:validation:XValidation:rule="!has(self.from) || !has(self.to) || self.from < self.to",message="to must be after from"
type MaintenanceWindowSpec struct {
	// CheckSelection: the Checks the window covers.
	CheckSelection `json:",inline"`

	// From is when a one-off window starts.
	// +optional
	From *metav1.Time `json:"from,omitempty"`

	// To is when a one-off window ends.
	// +optional
	To *metav1.Time `json:"to,omitempty"`

	// Schedule makes the window recurring: it starts at each instant of
	// this five-field cron expression or systemd OnCalendar expression,
	// read in tz, and lasts for duration.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="schedule must not be blank"
	Schedule *string `json:"schedule,omitempty"`

	// Duration is how long each instance of a recurring window lasts, such
	// as "2h" or "30m" (1m to 744h, 31 days).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('744h')",message="duration must be between 1m and 744h (31 days)"
	Duration *metav1.Duration `json:"duration,omitempty"`

	// TZ is the IANA time-zone name the schedule is read in.
	// +optional
	// +kubebuilder:default=UTC
	TZ TimeZone `json:"tz,omitempty"`
}

// Zone is the time zone the schedule is read in: spec.tz, or
// DefaultTimeZone.
func (s *MaintenanceWindowSpec) Zone() TimeZone {
	if s.TZ == "" {
		return DefaultTimeZone
	}
	return s.TZ
}

// MaintenanceWindowStatus is the window as the manager reads it.
type MaintenanceWindowStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (the window is understood and in force).
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Active is true while the window holds its checks' notifications.
	// +optional
	Active bool `json:"active"`

	// ActiveUntil is when the active window ends.
	// +optional
	ActiveUntil *metav1.Time `json:"activeUntil,omitempty"`

	// NextStart is when the window starts next (after the active one, if
	// one is); unset when it never will again.
	// +optional
	NextStart *metav1.Time `json:"nextStart,omitempty"`

	// Checks is how many Checks of the namespace the window covers.
	// +optional
	Checks int32 `json:"checks"`
}

// MaintenanceWindow holds the notifications of the Checks it selects while
// it is active: planned maintenance, a nightly restore, or a snooze.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mw,categories=vigil
// +kubebuilder:printcolumn:name="Active",type=boolean,JSONPath=`.status.active`
// +kubebuilder:printcolumn:name="Until",type=string,format=date-time,JSONPath=`.status.activeUntil`,description="When the active window ends"
// +kubebuilder:printcolumn:name="Next Start",type=string,format=date-time,JSONPath=`.status.nextStart`,description="When the window starts next"
// +kubebuilder:printcolumn:name="Checks",type=integer,JSONPath=`.status.checks`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MaintenanceWindow struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   MaintenanceWindowSpec   `json:"spec"`
	Status MaintenanceWindowStatus `json:"status,omitempty"`
}

// MaintenanceWindowList is a list of MaintenanceWindows.
// +kubebuilder:object:root=true
type MaintenanceWindowList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MaintenanceWindow `json:"items"`
}

// LabelSnooze marks a MaintenanceWindow that a snooze made (value
// "true"): the manager deletes it once it has ended.
const LabelSnooze = "monitoring.vigil.dev/snooze"

// Condition reasons of a MaintenanceWindow.
const (
	// ReasonScheduled: the window is understood (its schedule parses).
	ReasonScheduled = "Scheduled"
	// ReasonWindowActive: a window holds the check's notifications
	// (Check condition Maintenance).
	ReasonWindowActive = "WindowActive"
)

// ConditionMaintenance is present (True) on a Check while a
// MaintenanceWindow holds its notifications.
const ConditionMaintenance = "Maintenance"
