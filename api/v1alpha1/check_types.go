package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CheckSpec is the desired configuration of a check: what a user keeps in git.
// Vigil's controller never writes it. A check is a Simple check when timeout is
// set (or neither timeout nor schedule is), and a Cron check when schedule is.
//
// +kubebuilder:validation:XValidation:rule="!has(self.timeout) || !has(self.schedule)",message="set either timeout (a simple check) or schedule (a cron check), not both"
// +kubebuilder:validation:XValidation:rule="!has(self.minRuntime) || !has(self.maxRuntime) || duration(self.minRuntime) < duration(self.maxRuntime)",message="minRuntime must be shorter than maxRuntime"
type CheckSpec struct {
	// Name is the check's display name, as the Management API shows it.
	// +optional
	// +kubebuilder:validation:MaxLength=100
	Name string `json:"name,omitempty"`

	// Slug identifies the check in slug ping URLs (/ping/<ping-key>/<slug>).
	// Only lowercase letters, digits, hyphens and underscores.
	// +optional
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9_-]*$')",message="slug may contain only lowercase letters a-z, digits 0-9, hyphens and underscores"
	Slug string `json:"slug,omitempty"`

	// Tags is a space-separated list of tags, for example "prod db".
	// +optional
	// +kubebuilder:validation:MaxLength=500
	Tags string `json:"tags,omitempty"`

	// Desc is a free-form description, at most 10,000 characters.
	// +optional
	// +kubebuilder:validation:MaxLength=10000
	Desc string `json:"desc,omitempty"`

	// Timeout is the expected period between pings of a Simple check, in
	// seconds. When neither timeout nor schedule is set, it is 86400 (one day).
	// +optional
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=31536000
	Timeout *int64 `json:"timeout,omitempty"`

	// Grace is how long, in seconds, a ping may be late before the check goes
	// down.
	// +optional
	// +kubebuilder:default=3600
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:validation:Maximum=31536000
	Grace int64 `json:"grace,omitempty"`

	// Schedule makes this a Cron check: a five-field cron expression
	// ("0 3 * * *") or a systemd OnCalendar expression ("Mon..Fri 09:00"),
	// evaluated in tz.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=100
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="schedule must not be blank"
	// +kubebuilder:validation:XValidation:rule="self.matches(r'^[A-Za-z0-9\\s\\x0b\\x1c-\\x1f\\x85\\p{Z}*/,~.:#_+-]*$')",message="schedule may contain only letters, digits, whitespace and the characters * / , - ~ . : # _ +, as cron and OnCalendar expressions do"
	Schedule *string `json:"schedule,omitempty"`

	// TZ is the IANA time-zone name the schedule is evaluated in. It has an
	// effect only together with schedule.
	// +optional
	// +kubebuilder:default=UTC
	TZ TimeZone `json:"tz,omitempty"`

	// ManualResume keeps a paused check paused when it receives a ping: the
	// ping is logged as ignored, and only a resume brings the check back.
	// +optional
	ManualResume bool `json:"manualResume,omitempty"`

	// Methods restricts which HTTP methods count as pings: "" allows any,
	// "POST" allows only POST (other methods are logged as ignored).
	// +optional
	// +kubebuilder:validation:Enum="";POST
	Methods string `json:"methods,omitempty"`

	// StartKeywords is a comma-separated list of keywords that classify an
	// email (or, with filterHttpBody, an HTTP ping body) as a start signal.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	StartKeywords string `json:"startKeywords,omitempty"`

	// SuccessKeywords is a comma-separated list of keywords that classify an
	// email (or an HTTP ping body) as a success signal.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	SuccessKeywords string `json:"successKeywords,omitempty"`

	// FailureKeywords is a comma-separated list of keywords that classify an
	// email (or an HTTP ping body) as a failure signal.
	// +optional
	// +kubebuilder:validation:MaxLength=200
	FailureKeywords string `json:"failureKeywords,omitempty"`

	// FilterSubject matches the keywords against an email's subject line.
	// +optional
	FilterSubject bool `json:"filterSubject,omitempty"`

	// FilterBody matches the keywords against an email's body (text and HTML).
	// +optional
	FilterBody bool `json:"filterBody,omitempty"`

	// FilterHTTPBody matches the keywords against the body of HTTP pings; the
	// result overrides the kind the ping URL names.
	// +optional
	FilterHTTPBody bool `json:"filterHttpBody,omitempty"`

	// FilterDefaultFail classifies a ping that matches no keyword as a
	// failure instead of ignoring it.
	// +optional
	FilterDefaultFail bool `json:"filterDefaultFail,omitempty"`

	// Channels are the names of the Channel objects in this namespace that are
	// notified when the check goes down or comes back up. A single "*" selects
	// every Channel in the namespace, including ones created later.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!('*' in self) || size(self) == 1",message="\"*\" (all channels) cannot be combined with channel names"
	Channels []string `json:"channels,omitempty"`

	// CronJobRef links the check to a CronJob in its namespace: Vigil
	// records a start ping when each of the CronJob's Jobs starts, and a
	// success or failure ping when it ends, so the job needs no code. Checks
	// created from a CronJob's monitoring.vigil.dev/check annotation set it
	// themselves.
	// +optional
	CronJobRef *LocalObjectReference `json:"cronJobRef,omitempty"`

	// PingURLSecret publishes the check's ping URL in a Secret of this name
	// in the check's namespace (keys PING_URL and CHECK_UUID), owned by the
	// check, so a workload reads it from an environment variable instead
	// of hard-coding a UUID.
	// +optional
	PingURLSecret *LocalObjectReference `json:"pingURLSecret,omitempty"`

	// UUID pins the identifier in the check's ping URL, so that re-creating
	// the object (for example by a GitOps tool) keeps the URL that jobs
	// already call. When unset, the object's metadata.uid is used.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$')",message="uuid must be a lowercase hyphenated UUID, such as 5d5f3e70-1c6d-4b6c-9c3a-1f0d2e3c4b5a"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="uuid is immutable: the check's ping URL must not change"
	UUID string `json:"uuid,omitempty"`

	// AlertPolicy: when failures become an alert, and how long a run may
	// or must take.
	AlertPolicy `json:",inline"`
}

// AnomalyPolicy is how a check's usual run duration is learned and how
// far from it a run may be (see AlertPolicy.Anomaly).
// +kubebuilder:validation:XValidation:rule="!has(self.minRuns) || !has(self.runs) || self.minRuns <= self.runs",message="anomaly.minRuns must not exceed anomaly.runs"
type AnomalyPolicy struct {
	// Runs is how many of the check's last successful timed runs the
	// usual range is learned from. Default 30.
	// +optional
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=100
	Runs int32 `json:"runs,omitempty"`

	// MinRuns is how many such runs the check needs before any run is
	// judged. Default 10 (runs, when that is fewer).
	// +optional
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=100
	MinRuns int32 `json:"minRuns,omitempty"`

	// Tolerance is how many robust deviations (the median absolute
	// deviation, scaled as a standard deviation, and at least a tenth of
	// the median) a run may be from the median and still be usual.
	// Default 5.
	// +optional
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=50
	Tolerance int32 `json:"tolerance,omitempty"`
}

// AlertPolicy says when a check's failures become an alert. Unset, a check
// behaves as Healthchecks' do: down at the first failure or missed
// deadline, up at the next success, and a started run bounded by grace.
// See docs/alerting.md.
type AlertPolicy struct {
	// FailureThreshold is how many failed runs in a row make the check
	// down: fail pings, missed deadlines, runs longer than maxRuntime (or,
	// without it, not ended within grace of their start) and runs shorter
	// than minRuntime. Below it the check stays up and shows the count
	// ("1 of 3 failures"). Default 1: the first failure.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	FailureThreshold int32 `json:"failureThreshold,omitempty"`

	// RecoveryThreshold is how many successes in a row, each on time for
	// the one before, bring a down check back up. Default 1.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	RecoveryThreshold int32 `json:"recoveryThreshold,omitempty"`

	// MaxRuntime bounds a run from its start signal ("2h", "45m"): a run
	// that has not ended within it is a failure, "ran longer than 2 hours".
	// When set, grace bounds only a late start; unset, a started run must
	// end within grace, as in Healthchecks.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('8784h')",message="maxRuntime must be between 1s and 8784h (366 days)"
	MaxRuntime *metav1.Duration `json:"maxRuntime,omitempty"`

	// MinRuntime makes a success that ends a run sooner than this ("5m") a
	// failure, "finished in 3 seconds, expected at least 5 minutes": a backup that
	// "succeeds" in seconds has usually done nothing. It applies to runs
	// with a start signal (a success without one has no duration).
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('8784h')",message="minRuntime must be between 1s and 8784h (366 days)"
	MinRuntime *metav1.Duration `json:"minRuntime,omitempty"`

	// Anomaly learns the check's usual run duration from its own last
	// successful timed runs (the median, give or take a tolerance of
	// robust deviations), and makes a run far outside it a failure: "ran
	// 4 seconds; usually 38 minutes to 45 minutes over its last 30 runs". Like
	// minRuntime, it applies to runs with a start signal. `anomaly: {}`
	// turns it on with the defaults.
	// +optional
	Anomaly *AnomalyPolicy `json:"anomaly,omitempty"`

	// RealertInterval announces a check that stays down again at this
	// interval ("1h"), until it is up or paused. Unset: once. A Channel's
	// own realertInterval takes its place for that Channel, and a Channel
	// whose events leave out "realert" gets none.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8784h')",message="realertInterval must be between 1m and 8784h (366 days)"
	RealertInterval *metav1.Duration `json:"realertInterval,omitempty"`

	// Escalation tells more Channels when the check is still down after a
	// delay; they are told when it comes back up too. A down that ends
	// sooner is never escalated.
	// +optional
	Escalation *Escalation `json:"escalation,omitempty"`

	// DependsOn names the checks this one depends on: while one of them
	// is down, this check's downs, re-alerts and escalation are recorded
	// and shown but notify nobody ("held: depends on backup-host, which is
	// down since 10:05"). When none of them is down any more, the Channels
	// are told once what they missed: the down, if the check is still
	// down. A dependency that leads back to the check is a cycle: the
	// check's dependencies then hold nothing, and Ready says why.
	// +optional
	DependsOn *DependsOn `json:"dependsOn,omitempty"`

	// SLA holds the check's runs, over a rolling window, to a success rate
	// and to their usual duration. A breach is told once to the Channels
	// that take "sla" (the default), and so is its end; the SLAMet
	// condition shows where the check stands. It never takes the check
	// down.
	// +optional
	SLA *CheckSLA `json:"sla,omitempty"`
}

// DependsOn names the checks of the namespace a check depends on, by name,
// by label, or both.
// +kubebuilder:validation:XValidation:rule="has(self.checks) || has(self.selector)",message="dependsOn needs checks, a selector, or both"
type DependsOn struct {
	// Checks are names of Checks in this namespace. A name that matches
	// no Check holds nothing (until such a Check exists).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=50
	// +kubebuilder:validation:items:MaxLength=253
	Checks []string `json:"checks,omitempty"`

	// Selector selects Checks of this namespace by their labels (never
	// the check itself). Together with checks, at most 50 may be selected:
	// past that the check's dependencies hold nothing, and Ready says so.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// ConditionHeld is present (True) on a Check while a check it depends on
// is down and holds its notifications (spec.dependsOn), with reason
// ReasonDependencyDown.
const ConditionHeld = "Held"

// ReasonDependencyDown: a check the check depends on is down (condition
// Held).
const ReasonDependencyDown = "DependencyDown"

// Escalation names Channels to notify when a check is still down after a
// delay.
type Escalation struct {
	// After is how long the check must have been down ("30m").
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('8784h')",message="escalation.after must be between 1m and 8784h (366 days)"
	After metav1.Duration `json:"after"`

	// Channels are the names of Channels in this namespace to notify.
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MaxLength=253
	Channels []string `json:"channels"`
}

// CheckState is the monitoring state of a check.
// +kubebuilder:validation:Enum=new;up;grace;down;paused
type CheckState string

const (
	// CheckStateNew is a check that has not received a ping yet (or was
	// resumed and has not been pinged since). It never goes down.
	CheckStateNew CheckState = "new"
	// CheckStateUp is a check whose last ping was a success and is on time.
	CheckStateUp CheckState = "up"
	// CheckStateGrace is an up check whose next ping is due but still within
	// the grace period.
	CheckStateGrace CheckState = "grace"
	// CheckStateDown is a check that failed or missed its deadline.
	CheckStateDown CheckState = "down"
	// CheckStatePaused is a check whose monitoring is paused.
	CheckStatePaused CheckState = "paused"
)

// PingType is the kind of the last ping that counted: a success or a
// failure (the ping kinds themselves are the monitor's, internal/monitor).
// +kubebuilder:validation:Enum=success;fail
type PingType string

const (
	// PingSuccess is a success signal.
	PingSuccess PingType = "success"
	// PingFail is a failure signal.
	PingFail PingType = "fail"
)

// Flip is a change of a check's state between up and down.
type Flip struct {
	// Time is when the state changed: for a missed deadline the deadline
	// itself, not the moment Vigil noticed.
	Time metav1.MicroTime `json:"time"`
	// Up is true when the check came up and false when it went down.
	Up bool `json:"up"`
	// Reason is why the check went down: "fail" (a failure ping) or
	// "timeout" (a missed deadline). Empty when it came up.
	// +optional
	Reason string `json:"reason,omitempty"`
}

// Same reports whether o is the same flip: the same instant, the same
// direction. A flip found again (after a crash, from a stale cache) is the
// same flip.
func (f *Flip) Same(o *Flip) bool {
	return f.Time.Equal(&o.Time) && f.Up == o.Up
}

// CheckStatus is what Kubernetes tools see of a check: the controller's
// verdict on the spec (conditions, observedGeneration, the ping URL) and a
// projection of the check's observed state, which lives in Vigil's ping
// store. The manager writes it within a budget of status writes per second
// (state changes first), so the ping fields can lag the store by a few
// seconds under load; lastSyncTime says when they were taken from it. The
// Management API reads the store and is always exact.
type CheckStatus struct {
	// ObservedGeneration is the generation of the spec the controller last
	// reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready (Vigil reconciled this check and is monitoring it)
	// and Up (the monitoring result), plus Reconciling, Stalled and
	// Maintenance (a MaintenanceWindow holds its notifications) while they
	// are true.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// UUID is the identifier in the check's ping URL: spec.uuid, or
	// metadata.uid when spec.uuid is unset.
	// +optional
	UUID string `json:"uuid,omitempty"`

	// PingURL is the URL the job calls to report success. Append /start,
	// /fail, /log or /<exit-status> for the other signals.
	// +optional
	PingURL string `json:"pingURL,omitempty"`

	// State is the monitoring state recorded in the ping store.
	// +optional
	State CheckState `json:"state,omitempty"`

	// StateSince is when the check entered its state.
	// +optional
	StateSince *metav1.MicroTime `json:"stateSince,omitempty"`

	// NextPing is when the next ping is expected (the start of the grace
	// period); unset for new, paused and down checks.
	// +optional
	NextPing *metav1.Time `json:"nextPing,omitempty"`

	// LastFlip is the most recent change between up and down.
	// +optional
	LastFlip *Flip `json:"lastFlip,omitempty"`

	// NPings is the number of pings received, including ignored ones.
	// +optional
	NPings int64 `json:"nPings,omitempty"`

	// LastPing is when the last success or failure ping arrived.
	// +optional
	LastPing *metav1.MicroTime `json:"lastPing,omitempty"`

	// LastPingType is the type of the ping in lastPing: success or fail.
	// +optional
	LastPingType PingType `json:"lastPingType,omitempty"`

	// LastDuration is how long the last completed run took, from its start
	// signal to its success or failure.
	// +optional
	LastDuration *metav1.Duration `json:"lastDuration,omitempty"`

	// Started is true while a run is in progress: a start signal that no
	// success or failure has ended yet.
	// +optional
	Started bool `json:"started,omitempty"`

	// LastSyncTime is when the state and ping fields above were taken from
	// the ping store.
	// +optional
	LastSyncTime *metav1.Time `json:"lastSyncTime,omitempty"`

	// Failures is how many failed runs in a row have been counted: below
	// spec.failureThreshold while the check is up, the threshold's count
	// once it is down.
	// +optional
	Failures int32 `json:"failures,omitempty"`

	// Successes is a down check's recovery streak: the successes in a row
	// it has had, while fewer than spec.recoveryThreshold.
	// +optional
	Successes int32 `json:"successes,omitempty"`

	// Coverage says what made this check for a CronJob: the policy, and
	// which spec fields it and the CronJob's annotations set. Absent on a
	// check written by hand or through the API.
	// +optional
	Coverage *Coverage `json:"coverage,omitempty"`
}

// Coverage says what made a check for a CronJob and from which fields.
type Coverage struct {
	// CronJob is the CronJob the check follows.
	CronJob string `json:"cronJob"`

	// Policy made the check: "CronJobPolicy/<name>" or
	// "ClusterCronJobPolicy/<name>". Empty: the CronJob's annotation
	// monitoring.vigil.dev/check did.
	// +optional
	Policy string `json:"policy,omitempty"`

	// PolicyFields are the spec fields the policy sets.
	// +optional
	PolicyFields []string `json:"policyFields,omitempty"`

	// AnnotationFields are the spec fields annotations on the CronJob set
	// (they win over the policy).
	// +optional
	AnnotationFields []string `json:"annotationFields,omitempty"`

	// AlsoSelectedBy are other policies of the policy's level that select
	// the CronJob too: the first by name applies, and this says so.
	// +optional
	AlsoSelectedBy []string `json:"alsoSelectedBy,omitempty"`
}

// Check is a recurring job Vigil monitors. The job reports by calling the
// check's ping URL; when a ping does not arrive in time the check goes down
// and its Channels are notified.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=chk,categories=vigil
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Last Ping",type=date,JSONPath=`.status.lastPing`
// +kubebuilder:printcolumn:name="Next Ping",type=string,format=date-time,JSONPath=`.status.nextPing`,description="When the next ping is due (a future time, shown as a timestamp)"
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Timeout",type=integer,JSONPath=`.spec.timeout`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.status.coverage.policy`,description="The CronJobPolicy or ClusterCronJobPolicy that made the check"
// +kubebuilder:printcolumn:name="Maintenance",type=string,JSONPath=`.status.conditions[?(@.type=="Maintenance")].status`,priority=1,description="True while a MaintenanceWindow holds the check's notifications"
// +kubebuilder:printcolumn:name="Failures",type=integer,JSONPath=`.status.failures`,priority=1,description="Failed runs in a row (spec.failureThreshold makes the check down)"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Pings",type=integer,JSONPath=`.status.nPings`,priority=1
// +kubebuilder:printcolumn:name="UUID",type=string,JSONPath=`.status.uuid`,priority=1
// +kubebuilder:printcolumn:name="Synced",type=date,JSONPath=`.status.lastSyncTime`,priority=1,description="When the status was last taken from the ping store (the Management API is exact)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Check struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec CheckSpec `json:"spec,omitempty"`
	// +optional
	Status CheckStatus `json:"status,omitempty"`
}

// CheckList is a list of Checks.
//
// +kubebuilder:object:root=true
type CheckList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Check `json:"items"`
}

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// Name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// NamedChannels are the Channel names the spec lists: its channels (but
// "*") and its escalation's.
func (s *CheckSpec) NamedChannels() []string {
	var out []string
	for _, n := range s.Channels {
		if n != "*" {
			out = append(out, n)
		}
	}
	if s.Escalation != nil {
		out = append(out, s.Escalation.Channels...)
	}
	return out
}

// Assigns reports whether the spec assigns the Channel of that name: it is
// listed, or the list is the single "*" (every Channel in the namespace).
func (s *CheckSpec) Assigns(channel string) bool {
	for _, n := range s.Channels {
		if n == channel || (n == "*" && len(s.Channels) == 1) {
			return true
		}
	}
	return false
}

// A check's defaults, the reference's: a Simple check of one day with an
// hour's grace, its schedule (when it has one) read in UTC. The schema's
// default markers above say the same; a spec that never went through the
// API server (a test's, or the API's before it creates) may lack them.
const (
	DefaultTimeout  int64    = 86400
	DefaultGrace    int64    = 3600
	DefaultTimeZone TimeZone = "UTC"
)

// TimeoutSeconds is a Simple check's period: spec.timeout, or
// DefaultTimeout.
func (s *CheckSpec) TimeoutSeconds() int64 {
	if s.Timeout != nil {
		return *s.Timeout
	}
	return DefaultTimeout
}

// GraceSeconds is spec.grace, or DefaultGrace.
func (s *CheckSpec) GraceSeconds() int64 {
	if s.Grace <= 0 {
		return DefaultGrace
	}
	return s.Grace
}

// Zone is the time zone a schedule is read in: spec.tz, or
// DefaultTimeZone.
func (s *CheckSpec) Zone() TimeZone {
	if s.TZ == "" {
		return DefaultTimeZone
	}
	return s.TZ
}

// DefaultCheckSpec is the spec of a check Vigil creates (through the API or
// a slug ping) before the request applies: the defaults, timeout included,
// so that the object shows them.
func DefaultCheckSpec() CheckSpec {
	timeout := DefaultTimeout
	return CheckSpec{Timeout: &timeout, Grace: DefaultGrace, TZ: DefaultTimeZone}
}
