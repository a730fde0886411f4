package v1alpha1

// Condition types. Ready follows the Kubernetes convention that kstatus,
// Argo CD, Flux and `kubectl wait --for=condition=Ready` understand: it means
// Vigil reconciled the object (and, for a Check, is monitoring it), not that
// the job is healthy. The monitoring result is the separate Up condition, so
// a down check does not look unfinished to those tools.
const (
	// ConditionReady is True when the object is reconciled and in use.
	ConditionReady = "Ready"
	// ConditionUp is True when a check is up (or in its grace period), False
	// when it is down, and Unknown when it is new or paused.
	ConditionUp = "Up"
	// ConditionReconciling is present (True) only while the controller is
	// working towards the latest generation.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is present (True) only while a spec error that
	// retrying cannot fix blocks reconciliation.
	ConditionStalled = "Stalled"
)

// Condition reasons and Event reasons. An Event's reason equals the reason of
// the condition it explains, so `kubectl describe` reads like a story.
const (
	// ReasonMonitoring: the check is reconciled and monitored.
	ReasonMonitoring = "Monitoring"
	// ReasonProgressing: the controller is applying a new generation.
	ReasonProgressing = "Progressing"
	// ReasonInvalidSchedule: spec.schedule does not parse.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonInvalidTimeZone: spec.tz is not a known time zone.
	ReasonInvalidTimeZone = "InvalidTimeZone"
	// ReasonDuplicateUUID: another check in the cluster has the same UUID.
	ReasonDuplicateUUID = "DuplicateUUID"
	// ReasonUnknownChannel: spec.channels names a Channel that does not exist.
	ReasonUnknownChannel = "UnknownChannel"
	// ReasonDependencyCycle: following spec.dependsOn leads back to the
	// check; its dependencies hold nothing until the cycle is broken.
	ReasonDependencyCycle = "DependencyCycle"
	// ReasonTooManyDependencies: spec.dependsOn names or selects more
	// checks than a check may depend on; they hold nothing.
	ReasonTooManyDependencies = "TooManyDependencies"
	// ReasonPingURLSecretTaken: spec.pingURLSecret names a Secret that
	// belongs to something else; the check is monitored, the URL not
	// published.
	ReasonPingURLSecretTaken = "PingURLSecretTaken"
	// ReasonPingURLSecretForbidden: spec.pingURLSecret is set, but the
	// check's namespace has not bound the vigil-ping-url-secrets role to the
	// manager; the check is monitored, the URL not published.
	ReasonPingURLSecretForbidden = "PingURLSecretForbidden"

	// ReasonCheckUp: the check came up (Event) or is up (Up condition).
	ReasonCheckUp = "CheckUp"
	// ReasonCheckDown: the check went down (Event), or is down for a
	// reason older than the ones below (Up condition).
	ReasonCheckDown = "CheckDown"
	// ReasonPingFailed: the check is down by a failure ping (Up condition).
	ReasonPingFailed = "PingFailed"
	// ReasonDeadlineMissed: the check is down because no ping came by its
	// deadline, or a run did not end within grace (Up condition).
	ReasonDeadlineMissed = "DeadlineMissed"
	// ReasonRanTooLong: a run ran longer than spec.maxRuntime (Up condition).
	ReasonRanTooLong = "RanTooLong"
	// ReasonRanTooShort: a run succeeded sooner than spec.minRuntime (Up
	// condition).
	ReasonRanTooShort = "RanTooShort"
	// ReasonRunAnomalous: a run took far more or far less time than the
	// check's own runs usually do (spec.anomaly; Up condition).
	ReasonRunAnomalous = "RunAnomalous"
	// ReasonRecovering: the check is down and has some, not all, of the
	// successes in a row spec.recoveryThreshold asks for (Up condition).
	ReasonRecovering = "Recovering"
	// ReasonCheckGrace: the next ping is due and the grace period is running.
	ReasonCheckGrace = "CheckGrace"
	// ReasonCheckNew: the check has not been pinged yet.
	ReasonCheckNew = "CheckNew"
	// ReasonCheckPaused: monitoring is paused.
	ReasonCheckPaused = "CheckPaused"

	// ReasonInvalidSpec: the spec is invalid in a way the schema could not catch.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonLimitExceeded: the namespace holds more objects of the kind
	// than its limit allows, and this one, among the newest, is ignored.
	ReasonLimitExceeded = "LimitExceeded"
	// ReasonChannelReady: the channel's settings and Secrets are usable.
	ReasonChannelReady = "ChannelReady"
	// ReasonSecretNotFound: a referenced Secret does not exist.
	ReasonSecretNotFound = "SecretNotFound"
	// ReasonSecretKeyMissing: a referenced Secret lacks the needed key.
	ReasonSecretKeyMissing = "SecretKeyMissing"
	// ReasonSecretNotAllowed: a referenced Secret lacks the label
	// monitoring.vigil.dev/channel-secret: "true" the manager requires.
	ReasonSecretNotAllowed = "SecretNotAllowed"
	// ReasonMemberNotFound: a group Channel names a Channel that does not
	// exist in its namespace.
	ReasonMemberNotFound = "MemberNotFound"
	// ReasonMemberIsGroup: a group Channel names another group, which is
	// not followed.
	ReasonMemberIsGroup = "MemberIsGroup"
	// ReasonDeliveryFailed: a notification could not be delivered (Event).
	ReasonDeliveryFailed = "DeliveryFailed"
	// ReasonEgressDenied: a notification was not sent because its address
	// is in a range the manager does not connect to unless its
	// administrator allows it (Event, and the start of the error in the
	// Channel's status.lastError).
	ReasonEgressDenied = "EgressDenied"
)
