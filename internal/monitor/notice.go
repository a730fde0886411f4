package monitor

// Notice is the kind of a notification about a check whose state has not
// changed (the store keeps it as a flips row that is not a flip): one
// name for each, which the store, the dispatcher and every Channel kind
// share.
type Notice string

// The notices.
const (
	// NoticeRealert: the check is still down, at its re-alert interval.
	NoticeRealert Notice = "realert"
	// NoticeEscalation: the check is still down after its escalation delay.
	NoticeEscalation Notice = "escalation"
	// NoticeFailure: a failed run was counted below the failure threshold.
	NoticeFailure Notice = "failure"
	// NoticeMaintenanceStart and NoticeMaintenanceEnd: a maintenance
	// window (Held) started holding the check's notifications (until
	// HeldUntil), or ended.
	NoticeMaintenanceStart Notice = "maintenance-start"
	NoticeMaintenanceEnd   Notice = "maintenance-end"
	// NoticeSLABreach and NoticeSLAMet: the check's runs breached its
	// SLA (Reason says which rule, Detail the figures), or meet it again.
	NoticeSLABreach Notice = "sla-breach"
	NoticeSLAMet    Notice = "sla-met"
	// NoticeFlapping: the check changes state too often to be told of
	// each change; Detail says how often, and until when its
	// notifications are held (store/flapping.go).
	NoticeFlapping Notice = "flapping"
	// NoticeAck: someone (Detail) acknowledged the down; its re-alerts
	// and escalation stop until it ends (store/ack.go).
	NoticeAck Notice = "ack"
)
