package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/vigil-operator/vigil/internal/monitor"
	"github.com/vigil-operator/vigil/internal/store"
)

func TestNotificationRows(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	at := func(t time.Time) string { return t.Format("15:04") }
	delivered := store.Delivery{Channel: "ops", State: store.DeliveryDelivered}
	retrying := store.Delivery{Channel: "pager", State: store.DeliveryPending, Attempts: 3, NextAttempt: t0.Add(time.Hour), LastError: "503 Service Unavailable"}
	failed := store.Delivery{Channel: "mail", State: store.DeliveryFailed, Attempts: 10, LastError: "550 no such user"}
	held := func(f store.Flip) store.Flip { f.Held, f.HeldUntil = "nightly", t0.Add(2*time.Hour); return f }
	down := store.Flip{At: t0, Reason: monitor.ReasonFail}
	for _, tc := range []struct {
		name        string
		list        []store.Notification
		obs         store.Check
		hasChannels bool
		want        string
	}{
		{"sent, retrying, not delivered", []store.Notification{{Flip: down, Deliveries: []store.Delivery{delivered, retrying, failed}}}, store.Check{}, true,
			"03:00 Down: a failure ping | ops: sent | pager: retrying at 04:00 after 3 attempts: 503 Service Unavailable | mail: not delivered after 10 attempts: 550 no such user"},
		{"no Channel", []store.Notification{{Flip: store.Flip{At: t0, Up: true}}}, store.Check{}, false,
			"03:00 Up | Not sent: no Channel of this check takes it."},
		{"held, window still on", []store.Notification{{Flip: held(down)}}, store.Check{Maintenance: "nightly", MaintenanceUntil: t0.Add(2 * time.Hour)}, true,
			"03:00 Down: a failure ping | Held by maintenance window nightly until 05:00."},
		{"held, sent at the end", []store.Notification{{Flip: held(down), Deliveries: []store.Delivery{delivered}}}, store.Check{}, true,
			"03:00 Down: a failure ping | Held by maintenance window nightly; sent when it ended. | ops: sent"},
		{"held, changed again", []store.Notification{{Flip: held(store.Flip{At: t0.Add(time.Hour), Up: true})}, {Flip: held(down)}}, store.Check{}, true,
			"04:00 Up | Held by maintenance window nightly; not sent: when it ended, the Channels already knew the check's state.\n" +
				"03:00 Down: a failure ping | Held by maintenance window nightly; not sent: the check changed again before the Channels were told."},
		{"held, then the window's end told to a Channel", []store.Notification{
			{Flip: store.Flip{At: t0.Add(2 * time.Hour), Notice: monitor.NoticeMaintenanceEnd, Held: "nightly"}, Deliveries: []store.Delivery{delivered}},
			{Flip: held(store.Flip{At: t0.Add(time.Hour), Up: true})}}, store.Check{}, true,
			"05:00 Maintenance window nightly ended | ops: sent\n" +
				"04:00 Up | Held by maintenance window nightly; not sent: when it ended, the Channels already knew the check's state."},
		{"a window's notices", []store.Notification{{Flip: store.Flip{At: t0, Notice: monitor.NoticeMaintenanceStart, Held: "nightly"}, Deliveries: []store.Delivery{delivered}}}, store.Check{}, true,
			"03:00 Maintenance window nightly started | ops: sent"},
		{"a flapping check: the notice, the changes it held, and the state told when it was steady", []store.Notification{
			{Flip: store.Flip{At: t0.Add(40 * time.Minute), Reason: monitor.ReasonFail, Held: store.HeldFlapping}, Deliveries: []store.Delivery{delivered}},
			{Flip: store.Flip{At: t0.Add(30 * time.Minute), Up: true, Held: store.HeldFlapping}},
			{Flip: store.Flip{At: t0.Add(20 * time.Minute), Notice: monitor.NoticeFlapping, Detail: "11 state changes within 1 h"}, Deliveries: []store.Delivery{delivered}},
			{Flip: store.Flip{At: t0.Add(20 * time.Minute), Reason: monitor.ReasonFail, Held: store.HeldFlapping}}}, store.Check{}, true,
			"03:40 Down: a failure ping | Held while the check was flapping; sent when it kept one state. | ops: sent\n" +
				"03:30 Up | Held while the check was flapping; not sent: the check changed again.\n" +
				"03:20 Flapping (11 state changes within 1 h) | ops: sent\n" +
				"03:20 Down: a failure ping | Held while the check was flapping; not sent: the check changed again."},
		{"the last flip its flapping held", []store.Notification{{Flip: store.Flip{At: t0, Up: true, Held: store.HeldFlapping}}}, store.Check{}, true,
			"03:00 Up | Held while the check was flapping: once it keeps one state, the Channels are told it if they believe another."},
		{"a re-alert and an overrun's words", []store.Notification{{Flip: store.Flip{At: t0, Notice: monitor.NoticeRealert}, Deliveries: []store.Delivery{delivered}},
			{Flip: store.Flip{At: t0, Reason: monitor.ReasonRuntime, Detail: "ran longer than 2 hours"}, Deliveries: []store.Delivery{delivered}}}, store.Check{}, true,
			"03:00 Still down (re-alert) | ops: sent\n03:00 Down: the run ran longer than 2 hours | ops: sent"},
		{"an acknowledgement, and a down after Vigil's absence", []store.Notification{
			{Flip: store.Flip{At: t0.Add(time.Minute), Notice: monitor.NoticeAck, Detail: "API key hcw_aaaaaaaa"}},
			{Flip: store.Flip{At: t0, Reason: monitor.ReasonTimeout, Detail: "it fell due while Vigil was away"}, Deliveries: []store.Delivery{delivered}}},
			store.Check{}, true,
			"03:01 Acknowledged by API key hcw_aaaaaaaa | Re-alerts and escalation of this down stopped; no Channel told of it carries an acknowledgement (PagerDuty and Opsgenie do).\n" +
				"03:00 Down: no ping by the deadline (it fell due while Vigil was away) | ops: sent"},
		{"an acknowledgement carried to PagerDuty", []store.Notification{
			{Flip: store.Flip{At: t0.Add(time.Minute), Notice: monitor.NoticeAck, Detail: "API key hcw_aaaaaaaa"},
				Deliveries: []store.Delivery{{Channel: "pager", State: store.DeliveryDelivered}}}},
			store.Check{}, true,
			"03:01 Acknowledged by API key hcw_aaaaaaaa | Re-alerts and escalation of this down stopped; the incident is acknowledged where it was opened: | pager: sent"},
		{"a down a parent holds, and one it held that was told when the parent was back", []store.Notification{
			{Flip: store.Flip{At: t0.Add(time.Hour), Reason: monitor.ReasonFail, Held: "(depends on) backup-host"}},
			{Flip: store.Flip{At: t0.Add(30 * time.Minute), Up: true, Held: "(depends on) backup-host"}},
			{Flip: store.Flip{At: t0, Reason: monitor.ReasonTimeout, Held: "(depends on) backup-host"}, Deliveries: []store.Delivery{delivered}}},
			store.Check{Dependency: store.Dependency{Parent: "backup-host"}}, true,
			"04:00 Down: a failure ping | Held: backup-host, which this check depends on, is down; the Channels hear of it once backup-host is back, if this check is still down.\n" +
				"03:30 Up | Held while backup-host, which this check depends on, was down; not sent: the check changed again before the Channels were told.\n" +
				"03:00 Down: no ping by the deadline | Held while backup-host, which this check depends on, was down; sent when it was back. | ops: sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines []string
			for _, r := range notificationRows(tc.list, tc.obs, tc.hasChannels, at) {
				lines = append(lines, strings.Join(append([]string{r.When + " " + r.What}, r.Outcomes...), " | "))
			}
			if got := strings.Join(lines, "\n"); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
