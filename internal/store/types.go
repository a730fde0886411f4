package store

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/vigil-operator/vigil/internal/monitor"
)

// Target is a check as a write needs it: its identity, from the Check
// object, and how it is monitored, from its spec. The store keeps no copy
// of the spec: the Kubernetes API is where it lives.
type Target struct {
	UID             types.UID
	Namespace, Name string
	Config          monitor.Config
	// Channels are the names of the Channels a flip notifies: its
	// outbox rows, written in the flip's transaction.
	Channels []string
	// PingLogLimit is how many pings the check keeps (the project's limit;
	// 100 when not positive).
	PingLogLimit int
	// BodyLimit bounds the ping body bytes the checks of the namespace
	// keep together (bodies.go); not positive: no bound but each check's
	// BodyBudget.
	BodyLimit int64

	// Realert, when positive, announces a check that stays down again at
	// this interval, to each Channel that takes re-alerts (see Route).
	Realert time.Duration
	// Escalation notifies more Channels when the check is still down
	// after a delay.
	Escalation Escalation
	// Routes tell how each Channel of the namespace wants to hear of the
	// check (nil: every Channel takes the default events, at the check's
	// Realert).
	Routes RouteTable
	// Maintenance tells when the check's notifications are held (nil:
	// never).
	Maintenance Maintenance
	// Dependencies are the checks whose downs hold its notifications
	// (nil: none; dependency.go).
	Dependencies Dependencies
}

// Maintenance tells when a check's notifications are held: the windows
// that cover it (package maintenance).
type Maintenance interface {
	// Hold is the window that holds notifications at t and when it ends;
	// when none does, name is empty and next is when one starts (zero:
	// none will).
	Hold(t time.Time) (name string, until, next time.Time)
}

// RouteTable tells how each Channel of a namespace wants to hear of checks
// (the zero Route: the defaults).
type RouteTable interface {
	Route(namespace, channel string) Route
}

// RouteFunc is a function as a RouteTable.
type RouteFunc func(namespace, channel string) Route

// Route calls f.
func (f RouteFunc) Route(namespace, channel string) Route { return f(namespace, channel) }

// Escalation is a check's escalation: Channels told once the check has
// been down for After (none when After is not positive or no Channel).
type Escalation struct {
	After    time.Duration
	Channels []string
}

// Event is a kind of notification a Channel may take (Route.Events).
type Event uint8

// The events.
const (
	EventDown Event = 1 << iota
	EventUp
	EventRealert
	EventFailure // a failed run below the check's failure threshold
	// EventTooLong and EventTooShort: a down or a failed run because a run
	// was longer than maxRuntime or shorter than minRuntime.
	EventTooLong
	EventTooShort
	// EventMaintenance: a maintenance window started or ended holding
	// the check's notifications.
	EventMaintenance
	// EventSLA: a check's SLA breached, or met again (sla.go).
	EventSLA
)

// failedRunEvents are the events a down (or, with EventFailure for
// EventDown, a failed run) for this reason is: a Channel takes it when it
// takes any of them.
func failedRunEvents(ev Event, reason monitor.Reason) Event {
	switch reason {
	case monitor.ReasonRuntime:
		ev |= EventTooLong
	case monitor.ReasonShort:
		ev |= EventTooShort
	case monitor.ReasonAnomaly: // too short or too long for this check
		ev |= EventTooShort | EventTooLong
	}
	return ev
}

// DefaultEvents are the events a Channel takes unless it says.
const DefaultEvents = EventDown | EventUp | EventRealert | EventSLA

// Route is how one Channel wants to hear of a check.
type Route struct {
	// Events the Channel takes (zero: DefaultEvents).
	Events Event
	// Realert, when positive, is the Channel's own re-alert interval, in
	// place of the check's.
	Realert time.Duration
}

// route is the Channel's route for tg, with the defaults filled in.
func (tg *Target) route(channel string) Route {
	var r Route
	if tg.Routes != nil {
		r = tg.Routes.Route(tg.Namespace, channel)
	}
	if r.Events == 0 {
		r.Events = DefaultEvents
	}
	if r.Realert <= 0 {
		r.Realert = tg.Realert
	}
	return r
}

// Ping is one ping to record.
type Ping struct {
	// Kind is the classified signal (after URL, exit status, methods and
	// keyword rules).
	Kind monitor.PingKind
	// At is when the ping happened; Noted when it reached Vigil, if later
	// (a Job's end, read after it), which decides whether a maintenance
	// window holds what it causes (zero: At).
	At         time.Time
	Noted      time.Time
	RID        string
	ExitStatus *int
	Scheme     string
	RemoteAddr string
	Method     string
	UA         string
	Body       []byte
	// Early is the early ping this records (EarlyPing.ID), deleted in the
	// same transaction; "" for a ping that was never one.
	Early string
}

// Recorded is what recording a ping did.
type Recorded struct {
	// N is the ping's serial number within the check.
	N int64
	// Kind is the kind logged: "ign" when the check ignored the ping.
	Kind monitor.PingKind
	// Flip is the flip the ping caused, if any.
	Flip *Flip
	// BodyRefused: the ping's body was not kept, its namespace's checks
	// holding their BodyLimit of bodies already (bodies.go).
	BodyRefused bool
	// Taken: the ping was an early one that another replica recorded
	// first; this recorded nothing.
	Taken bool
	// LogOnly: the ping was an early one older than a ping the check
	// recorded before it; it is logged, and changed nothing (early.go).
	LogOnly bool
}

// Check is what the store knows of a check. The zero Check (a check never
// pinged, paused or observed) is a new one.
type Check struct {
	UID             types.UID
	Namespace, Name string
	Facts           monitor.Facts
	NPings          int64
	// NextChange is when time alone changes the recorded state (zero:
	// never); the deadline loop acts then.
	NextChange time.Time
	// LastFlip is the newest flip (nil: none).
	LastFlip *Flip
	// Maintenance is the MaintenanceWindow that held the check's
	// notifications when its row was last written ("": none), and
	// MaintenanceUntil when that window ends. The row is written at a
	// window's start and end (they are among its next changes).
	Maintenance      string
	MaintenanceUntil time.Time
	// Version is the change number of the check's last write.
	Version int64
	// RunCounts are its runs since it was created (or since Vigil counts
	// them), by how they ended.
	RunCounts RunCounts
	// Ack is the last acknowledgement of a down; it holds only while the
	// check is still in that down (Acknowledged).
	Ack Ack
	// Dependency is the check it depends on that held its notifications
	// when its row was last written (dependency.go).
	Dependency Dependency
}

// Ack is an acknowledgement of a check's down: who saw it, and when.
type Ack struct {
	At time.Time
	// By says who: "API key hcw_1234abcd", a signed-in user.
	By string
}

// Acknowledged returns the acknowledgement of the check's current down,
// if it has one: the check is down, and was acknowledged since the down
// began. A check that came up and went down again is a new down, not
// acknowledged.
func (c Check) Acknowledged() (Ack, bool) {
	if c.Facts.State != monitor.StatusDown || c.Ack.At.IsZero() || c.Ack.At.Before(c.Facts.StateSince) {
		return Ack{}, false
	}
	return c.Ack, true
}

// RunCounts count a check's runs by how they ended, and keep its last
// success: Prometheus's counters and a last success older than the runs
// kept.
type RunCounts struct {
	Succeeded, Failed int64
	// Missed counts its downs for lack of a ping.
	Missed      int64
	LastSuccess time.Time
	// Dropped is when the newest run the store let go ended (zero: none):
	// its runs after it are whole.
	Dropped time.Time
}

// LoggedPing is one entry of a check's ping log.
type LoggedPing struct {
	N          int64
	Kind       monitor.PingKind
	At         time.Time
	Scheme     string
	RemoteAddr string
	Method     string
	UA         string
	RID        string
	ExitStatus *int
	// BodySize is the stored body's length (0: none, or dropped).
	BodySize    int
	BodyDropped bool
}

// Flip is a change of a check's state between up and down.
type Flip struct {
	// N is the flip's serial number within the check.
	N int64
	// At is when the state changed: the fail ping, the missed deadline (not
	// when it was noticed), or the ping that ended the down.
	At     time.Time
	Up     bool
	From   monitor.Status
	To     monitor.Status
	Reason monitor.Reason
	// Detail is the reason in plain words with the policy's figures, as it
	// was when the flip happened ("ran longer than 1 hour"); often empty.
	Detail string
	// Notice is empty for a flip; for a notice, its kind (the flips the API
	// lists leave notices out).
	Notice monitor.Notice
	// Since is when the down began, for an up flip (how long it was down)
	// and a notice about a down; zero otherwise.
	Since time.Time
	// Held names what held the flip's notification (told when the hold
	// ended, if the state had not changed back): a MaintenanceWindow, and
	// HeldUntil is when that window ended; or HeldFlapping; or a parent
	// (HeldByParent).
	Held      string
	HeldUntil time.Time
}

// HeldFlapping is Flip.Held for a flip its check's flapping held
// (flapping.go). It is no Kubernetes name, so no window's.
const HeldFlapping = "(flapping)"

// HeldBy is the MaintenanceWindow that held the flip's notification, or ""
// (none held it, or its check's flapping did).
func (f *Flip) HeldBy() string {
	if f.Held == HeldFlapping || f.HeldByParent() != "" {
		return ""
	}
	return f.Held
}

// DeliveryState is where one notification stands.
type DeliveryState string

// The delivery states.
const (
	DeliveryPending   DeliveryState = "pending"
	DeliveryDelivered DeliveryState = "delivered"
	DeliveryFailed    DeliveryState = "failed"
)

// Delivery is the notification of one flip to one channel.
type Delivery struct {
	CheckUID        types.UID
	Namespace, Name string
	Flip            Flip
	Channel         string
	State           DeliveryState
	Attempts        int
	NextAttempt     time.Time
	LastError       string
	// Queued is when it was queued (StormMembers alone reads it).
	Queued time.Time
}

// Outcome is the result of one delivery attempt.
type Outcome struct {
	CheckUID types.UID
	FlipN    int64
	Channel  string
	// State is the delivery's new state; Pending retries at NextAttempt.
	State       DeliveryState
	NextAttempt time.Time
	LastError   string
	// Attempted counts one attempt more. The dispatcher sets it on the
	// outcome it records as an attempt begins (pending again at the
	// backoff, should the attempt never end), not on the attempt's result.
	Attempted bool
}

// Change is a check whose row changed, from the changes feed.
type Change struct {
	UID             types.UID
	Namespace, Name string
	State           monitor.Status
	Version         int64
}

// Cursor is a place in the changes feed: after a change's version and UID.
// One transaction gives every check it writes the same version, so a
// version alone cannot tell where a page of the feed stopped.
type Cursor struct {
	Version int64
	UID     types.UID
}

// Cursor is the place just after this change.
func (c Change) Cursor() Cursor { return Cursor{Version: c.Version, UID: c.UID} }
