package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// CheckSLA is what a check's runs are held to over a rolling window: the
// share of them that succeed, and how much slower they may get than in
// the window before. Both are judged over the runs the ping store keeps.
// +kubebuilder:validation:XValidation:rule="has(self.minSuccessRate) || has(self.maxDurationIncrease)",message="sla needs minSuccessRate, maxDurationIncrease or both"
type CheckSLA struct {
	// Window is how far back the runs judged ended ("24h", "720h"). The
	// duration rule compares it with the window of the same length before
	// it. Default 168h (7 days).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1h') && duration(self) <= duration('744h')",message="sla.window must be between 1h and 744h (31 days)"
	Window *metav1.Duration `json:"window,omitempty"`

	// MinSuccessRate is the percentage of the window's runs that must
	// succeed ("95", "99.5"); a missed run counts as a failed one. It is
	// judged once the window holds 5 runs or more.
	// +optional
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:Pattern=`^(100(\.0{1,3})?|[0-9]{1,2}(\.[0-9]{1,3})?)$`
	// +kubebuilder:validation:XValidation:rule="double(self) > 0.0",message="sla.minSuccessRate must be above 0"
	MinSuccessRate string `json:"minSuccessRate,omitempty"`

	// MaxDurationIncrease is how much slower, in percent, the window's
	// p95 run duration may be than the window before's: 50 lets a 10-minute
	// job take up to 15 minutes. It is judged once each window holds 5
	// timed runs (a start signal before the end).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxDurationIncrease int32 `json:"maxDurationIncrease,omitempty"`
}

// ConditionSLAMet is present on a Check with an SLA once it has been
// judged: True while its runs meet it, False with the reason while they
// breach it.
const ConditionSLAMet = "SLAMet"

// The SLAMet condition's reasons.
const (
	// ReasonWithinSLA: the runs meet the SLA.
	ReasonWithinSLA = "WithinSLA"
	// ReasonTooFewRuns: the window holds too few runs to judge (the
	// condition is Unknown).
	ReasonTooFewRuns = "TooFewRuns"
	// ReasonSuccessRateLow: fewer runs succeeded than minSuccessRate.
	ReasonSuccessRateLow = "SuccessRateLow"
	// ReasonDurationRegressed: the p95 duration grew past
	// maxDurationIncrease.
	ReasonDurationRegressed = "DurationRegressed"
)
