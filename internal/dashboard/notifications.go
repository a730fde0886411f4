package dashboard

import (
	"context"
	"fmt"
	"time"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/webpage"
)

// notificationsShown bounds the notifications a check's page lists.
const notificationsShown = 20

// notificationRow is one flip or notice on a check's page, with why it
// was sent, retried or held, and to whom.
type notificationRow struct {
	At       time.Time
	When     string
	What     string
	Class    string   // up, down, notice
	Outcomes []string // one line per Channel, or why there is none
}

// notifications lists the check's last flips and notices with what became
// of each: read-write keys only, as the Channels are. hasChannels says
// whether the check notifies any Channel at all.
func (s *Server) notifications(ctx context.Context, c *v1.Check, obs store.Check, hasChannels bool) ([]notificationRow, error) {
	list, err := s.Checks.Notifications(ctx, c, notificationsShown)
	if err != nil {
		return nil, err
	}
	return notificationRows(list, obs, hasChannels, inZone(string(c.Spec.Zone()))), nil
}

// notificationRows words the notifications, newest first; at formats an
// instant in the check's zone.
func notificationRows(list []store.Notification, obs store.Check, hasChannels bool, at func(time.Time) string) []notificationRow {
	rows := make([]notificationRow, 0, len(list))
	newerFlip := false // a flip (not a notice) came after this one
	for _, n := range list {
		r := notificationRow{At: n.At, When: at(n.At), What: notificationWhat(n.Flip), Class: "notice"}
		if n.Notice == "" {
			r.Class = webpage.StateWord(n.Up)
		}
		for _, d := range n.Deliveries {
			r.Outcomes = append(r.Outcomes, d.Channel+": "+deliveryWords(d, at))
		}
		window := n.HeldBy()
		held := "Held by maintenance window " + window
		flapped := n.Held == store.HeldFlapping
		parent := n.HeldByParent()
		byParent := "Held while " + parent + ", which this check depends on, was down"
		switch {
		case n.Notice == monitor.NoticeMaintenanceStart || n.Notice == monitor.NoticeMaintenanceEnd:
			// About a window, not held by it.
		case n.Notice == monitor.NoticeAck && len(n.Deliveries) > 0:
			r.Outcomes = append([]string{"Re-alerts and escalation of this down stopped; the incident is acknowledged where it was opened:"}, r.Outcomes...)
		case n.Notice == monitor.NoticeAck:
			r.Outcomes = []string{"Re-alerts and escalation of this down stopped; no Channel told of it carries an acknowledgement (PagerDuty and Opsgenie do)."}
		case window != "" && len(n.Deliveries) > 0:
			r.Outcomes = append([]string{held + "; sent when it ended."}, r.Outcomes...)
		case window != "" && !newerFlip && obs.Maintenance != "":
			r.Outcomes = []string{held + " until " + at(obs.MaintenanceUntil) + "."}
		case window != "" && !hasChannels:
			r.Outcomes = []string{held + "; no Channel of this check takes it anyway."}
		case window != "" && newerFlip:
			r.Outcomes = []string{held + "; not sent: the check changed again before the Channels were told."}
		case window != "":
			r.Outcomes = []string{held + "; not sent: when it ended, the Channels already knew the check's state."}
		case parent != "" && len(n.Deliveries) > 0:
			r.Outcomes = append([]string{byParent + "; sent when it was back."}, r.Outcomes...)
		case parent != "" && !newerFlip && obs.Dependency.Parent != "":
			r.Outcomes = []string{"Held: " + obs.Dependency.Parent + ", which this check depends on, is down; the Channels hear of it once " +
				obs.Dependency.Parent + " is back, if this check is still down."}
		case parent != "" && !hasChannels:
			r.Outcomes = []string{byParent + "; no Channel of this check takes it anyway."}
		case parent != "" && newerFlip:
			r.Outcomes = []string{byParent + "; not sent: the check changed again before the Channels were told."}
		case parent != "":
			r.Outcomes = []string{byParent + "; not sent: when it was back, the Channels already knew the check's state."}
		case flapped && len(n.Deliveries) > 0:
			r.Outcomes = append([]string{"Held while the check was flapping; sent when it kept one state."}, r.Outcomes...)
		case flapped && !hasChannels:
			r.Outcomes = []string{"Held while the check was flapping; no Channel of this check takes it anyway."}
		case flapped && newerFlip:
			r.Outcomes = []string{"Held while the check was flapping; not sent: the check changed again."}
		case flapped:
			r.Outcomes = []string{"Held while the check was flapping: once it keeps one state, the Channels are told it if they believe another."}
		case len(n.Deliveries) == 0:
			r.Outcomes = []string{"Not sent: no Channel of this check takes it."}
		}
		rows = append(rows, r)
		newerFlip = newerFlip || n.Notice == ""
	}
	return rows
}

// notificationWhat says what a flip or notice told.
func notificationWhat(f store.Flip) string {
	switch f.Notice {
	case monitor.NoticeRealert:
		return "Still down (re-alert)"
	case monitor.NoticeEscalation:
		return "Still down (escalation)"
	case monitor.NoticeFailure:
		return "A failed run (" + f.Detail + ")"
	case monitor.NoticeSLABreach:
		return "SLA breached (" + f.Detail + ")"
	case monitor.NoticeSLAMet:
		return "SLA met again (" + f.Detail + ")"
	case monitor.NoticeMaintenanceStart:
		return "Maintenance window " + f.Held + " started"
	case monitor.NoticeMaintenanceEnd:
		return "Maintenance window " + f.Held + " ended"
	case monitor.NoticeFlapping:
		return "Flapping (" + f.Detail + ")"
	case monitor.NoticeAck:
		return "Acknowledged by " + f.Detail
	}
	if f.Up {
		return "Up"
	}
	switch {
	case f.Reason == monitor.ReasonTimeout && f.Detail != "": // Vigil's own absence
		return "Down: no ping by the deadline (" + f.Detail + ")"
	case f.Detail != "":
		return "Down: the run " + f.Detail
	case f.Reason == monitor.ReasonFail:
		return "Down: a failure ping"
	case f.Reason == monitor.ReasonTimeout:
		return "Down: no ping by the deadline"
	}
	return "Down"
}

// deliveryWords says where one delivery stands.
func deliveryWords(d store.Delivery, at func(time.Time) string) string {
	switch {
	case d.State == store.DeliveryDelivered:
		return "sent"
	case d.State == store.DeliveryFailed:
		return fmt.Sprintf("not delivered after %d attempts: %s", d.Attempts, d.LastError)
	case d.Attempts > 0:
		return fmt.Sprintf("retrying at %s after %d attempts: %s", at(d.NextAttempt), d.Attempts, d.LastError)
	}
	return "queued"
}
