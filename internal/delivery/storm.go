package delivery

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/notify"
	"github.com/vigil-operator/vigil/internal/store"
	"github.com/vigil-operator/vigil/internal/words"
)

// Storm control: when many checks go down (or up) at once, after a
// cluster-wide incident, a Channel gets one message listing them, not one
// message each.
//
// A Channel is in a storm when the downs (or ups) of StormThreshold or
// more checks were queued for it within StormWindow: one check that flaps
// makes no storm (flapping has rules of its own, store.FlapPolicy). Until then each
// goes alone, at once. In a storm, a notification waits until the oldest
// one pending beside it has waited StormGather, and then all those pending
// go as one message (at most maxGroup; the rest make the next). So a wave
// of 50 downs in one pass reaches a Channel as one message StormGather
// later, and a storm that lasts reaches it once per StormGather at most,
// after the first StormThreshold-1.
//
// Everything the rule reads is in the outbox (store.StormMembers,
// store.RecentlyQueued), so a restart in the middle of a storm finds it
// again; each notification keeps its own row, attempts and outcome. The
// decisions about one Channel's notifications are taken one at a time
// (Dispatcher.storms), each after reading that its notification is still due,
// so none goes twice. Only plain downs and ups are grouped, and only
// through kinds that do not track incidents (notify.Groups): a PagerDuty
// incident is opened and resolved per check, and PagerDuty groups alerts
// itself.

// Storm control's defaults (Options).
const (
	DefaultStormThreshold = 10
	DefaultStormWindow    = time.Minute
	DefaultStormGather    = 10 * time.Second
)

// maxGroup bounds the checks one grouped message carries.
const maxGroup = 500

// stormControlled reports whether storm control decides dl's fate: a down
// or up flip (not a notice) through a Channel whose kind groups.
func (d *Dispatcher) stormControlled(ctx context.Context, dl store.Delivery) bool {
	if d.Options.StormThreshold < 2 || dl.Flip.Notice != "" {
		return false
	}
	ch := &v1.Channel{}
	if err := d.Client.Get(ctx, types.NamespacedName{Namespace: dl.Namespace, Name: dl.Channel}, ch); err != nil {
		return false // sent alone, which finds out what is wrong
	}
	return notify.Groups(ch.Spec.Kind)
}

// storm decides dl under its Channel's storm lock, which it is given and
// which it releases (unlock) once what it decided is recorded. It reports
// alone: dl is to be sent by itself, by the caller, who must record its
// attempt before calling unlock. Otherwise dl was taken care of: sent in a
// group, set to wait for one, or found no longer due.
func (d *Dispatcher) storm(ctx context.Context, dl store.Delivery, unlock func()) (alone bool, err error) {
	now := d.Clock.Now()
	due, err := d.Store.DeliveryDue(ctx, dl, now)
	if err != nil || !due {
		return false, err
	}
	ref := store.ChannelRef{Namespace: dl.Namespace, Name: dl.Channel}
	recent, err := d.Store.RecentlyQueued(ctx, ref, dl.Flip.Up, now.Add(-d.Options.StormWindow), d.Options.StormThreshold)
	if err != nil {
		return false, err
	}
	var members []store.Delivery
	if recent >= d.Options.StormThreshold {
		if members, err = d.Store.StormMembers(ctx, ref, dl.Flip.Up, now, maxGroup); err != nil {
			return false, err
		}
	}
	switch plan, sendAt := planStorm(d.Options, recent, members, now); plan {
	case waitForGroup: // each without an attempt counted
		outcomes := make([]store.Outcome, len(members))
		for i, m := range members {
			outcomes[i] = store.Outcome{CheckUID: m.CheckUID, FlipN: m.Flip.N, Channel: m.Channel,
				State: store.DeliveryPending, NextAttempt: sendAt}
		}
		return false, d.Store.RecordOutcomes(ctx, outcomes)
	case sendGroup:
		d.deliverGroup(ctx, members, unlock)
		return false, nil
	default:
		return true, nil
	}
}

// stormPlan is what storm control does with a due notification.
type stormPlan int

const (
	sendAlone    stormPlan = iota // no storm, or nothing to group it with
	waitForGroup                  // until sendAt, with the others pending
	sendGroup                     // now, with the others pending
)

// planStorm is the rule: recent checks told the Channel lately (counted
// up to the threshold), and members its pending notifications of the same
// direction, oldest queued first (read only in a storm).
func planStorm(o Options, recent int, members []store.Delivery, now time.Time) (plan stormPlan, sendAt time.Time) {
	if recent < o.StormThreshold || len(members) == 0 {
		return sendAlone, time.Time{}
	}
	if sendAt = members[0].Queued.Add(o.StormGather); now.Before(sendAt) {
		return waitForGroup, sendAt
	}
	if len(members) == 1 {
		return sendAlone, time.Time{}
	}
	return sendGroup, time.Time{}
}

// deliverGroup sends members as one message and records each one's
// outcome, as deliver does for one: each attempt recorded (and unlock
// called) before the send.
func (d *Dispatcher) deliverGroup(ctx context.Context, members []store.Delivery, unlock func()) {
	now := d.Clock.Now()
	var begun []store.Outcome
	sending := members[:0:0]
	for _, m := range members {
		oc := store.Outcome{CheckUID: m.CheckUID, FlipN: m.Flip.N, Channel: m.Channel, State: store.DeliveryPending,
			Attempted: true, LastError: unfinished, NextAttempt: now.Add(d.backoff(m.Attempts+1, nil, now))}
		if m.Attempts >= d.Options.MaxAttempts {
			// Every attempt began and none ended (a send that kills the
			// process): given up, not sent again with the others.
			oc = store.Outcome{CheckUID: m.CheckUID, FlipN: m.Flip.N, Channel: m.Channel, State: store.DeliveryFailed, LastError: neverEnded}
		} else {
			sending = append(sending, m)
		}
		begun = append(begun, oc)
	}
	err := d.Store.RecordOutcomes(ctx, begun)
	unlock()
	members = sending
	if len(members) == 0 {
		return
	}
	if err != nil {
		if ctx.Err() == nil {
			log.FromContext(ctx).Error(err, "recording a grouped delivery's attempt", "channel", members[0].Namespace+"/"+members[0].Channel)
		}
		return // not sent: still due
	}
	ch, sendErr := d.sendGroup(ctx, members)
	now = d.Clock.Now()
	outcomes := make([]store.Outcome, len(members))
	for i, m := range members {
		oc := store.Outcome{CheckUID: m.CheckUID, FlipN: m.Flip.N, Channel: m.Channel, State: store.DeliveryDelivered}
		if sendErr != nil {
			oc.LastError = words.Clip(sendErr.Error(), 512)
			if attempts := m.Attempts + 1; notify.IsPermanent(sendErr) || attempts >= d.Options.MaxAttempts {
				oc.State = store.DeliveryFailed
			} else {
				oc.State, oc.NextAttempt = store.DeliveryPending, now.Add(d.backoff(attempts, sendErr, now))
			}
		}
		outcomes[i] = oc
	}
	if ch != nil && ctx.Err() == nil {
		d.recordOnChannel(ch, &v1.Check{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%d checks", len(members))}}, members[0].Flip.Up, sendErr)
	}
	d.record(ctx, members[0], outcomes...)
}

// sendGroup sends one message about members through their Channel. A
// check deleted since is listed under the name its notification was
// queued with.
func (d *Dispatcher) sendGroup(ctx context.Context, members []store.Delivery) (*v1.Channel, error) {
	first := members[0]
	ch := &v1.Channel{}
	if err := d.get(ctx, types.NamespacedName{Namespace: first.Namespace, Name: first.Channel}, ch, nil); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, notify.Permanent(fmt.Errorf("channel %q no longer exists", first.Channel))
		}
		return nil, err
	}
	group := make([]notify.GroupedCheck, 0, len(members))
	last := first.Flip.At
	for _, m := range members {
		g := notify.GroupedCheck{Name: m.Name, At: m.Flip.At, Reason: string(m.Flip.Reason), Detail: m.Flip.Detail, Since: m.Flip.Since}
		check := &v1.Check{}
		err := d.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Name}, check)
		if err == nil && check.UID == m.CheckUID {
			if check.Spec.Name != "" {
				g.Name = check.Spec.Name
			}
			if d.BaseURL != "" {
				g.DetailsURL = d.BaseURL + "/checks/" + checks.UUIDOf(check)
			}
		}
		if m.Flip.At.After(last) {
			last = m.Flip.At
		}
		group = append(group, g)
	}
	slices.SortStableFunc(group, func(a, b notify.GroupedCheck) int { return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.Name, b.Name)) })
	info := notify.CheckInfo{Namespace: first.Namespace, Name: fmt.Sprintf("%d checks", len(group)),
		UUID: fmt.Sprintf("group-%s-%d", first.CheckUID, first.Flip.N)}
	if d.BaseURL != "" {
		info.DetailsURL = d.BaseURL + "/"
	}
	msg := notify.Message{Check: info, Up: first.Flip.Up, Time: last, Group: group}
	return ch, d.sendThrough(ctx, ch, msg)
}
