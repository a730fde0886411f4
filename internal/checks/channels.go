package checks

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/project"
	"github.com/vigil-operator/vigil/internal/store"
)

// channelIndex holds the names of each namespace's Channels, as the cache's
// events tell them: a flip, recorded inside the store's transaction, owes
// a notification to each Channel its check assigns, and that list must
// cost neither a list of the cache nor a call out of the transaction.
//
// A namespace's Channels past its limit (project.Channels) are left out:
// no check is routed to them, so a flip queues no delivery for them, and
// the Channel controller says so on each.
type channelIndex struct {
	mu sync.RWMutex
	// limit is a namespace's Channel limit now (the administrator may
	// change it at any time); nil: project.DefaultObjectLimits'.
	limit func(namespace string) int
	// aged are each namespace's Channels, oldest first (ties by name).
	aged map[string][]agedName
	// names are the names of each namespace's Channels within its limit,
	// sorted, as counted under limited's limit. A slice is never changed
	// once stored (count stores a new one), so readers share it.
	names   map[string][]string
	limited map[string]int
	// routes are how the Channels that say so want to hear of checks; a
	// Channel with the defaults has none.
	routes map[client.ObjectKey]store.Route
	// groups are the members of each group Channel, as it lists them.
	groups map[client.ObjectKey][]string
}

// update records a Channel that came, changed or went: its name, route and
// members at once, so that a flip never sees a group's name without its
// members (and queues a delivery to the group itself).
func (x *channelIndex) update(ch *v1.Channel, present bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.set(ch.Namespace, agedName{ch.CreationTimestamp.Time, ch.Name}, present)
	x.setRoute(ch, present)
	x.setGroup(ch, present)
}

// setGroup records a group Channel's members; x.mu is held.
func (x *channelIndex) setGroup(ch *v1.Channel, present bool) {
	key := client.ObjectKeyFromObject(ch)
	if !present || ch.Spec.Kind != v1.ChannelGroup || ch.Spec.Group == nil {
		delete(x.groups, key)
		return
	}
	if x.groups == nil {
		x.groups = map[client.ObjectKey][]string{}
	}
	x.groups[key] = slices.Clone(ch.Spec.Group.Channels)
}

// expand replaces each group among names (sorted Channel names of the
// namespace) by its members that exist and are not groups themselves:
// a check assigned to a group owes each member the notification, once
// however many ways it reaches it. The result is sorted; names itself is
// returned, unchanged, when it holds no group.
func (x *channelIndex) expand(namespace string, names []string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if len(x.groups) == 0 {
		return names
	}
	var out []string
	grouped := false
	for _, name := range names {
		members, isGroup := x.groups[client.ObjectKey{Namespace: namespace, Name: name}]
		if !isGroup {
			out = append(out, name)
			continue
		}
		grouped = true
		for _, m := range members {
			_, memberIsGroup := x.groups[client.ObjectKey{Namespace: namespace, Name: m}]
			if _, counted := slices.BinarySearch(x.names[namespace], m); counted && !memberIsGroup {
				out = append(out, m)
			}
		}
	}
	if !grouped {
		return names
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// setRoute records how a Channel wants to hear of checks; x.mu is held.
func (x *channelIndex) setRoute(ch *v1.Channel, present bool) {
	rt := routeOf(ch)
	key := client.ObjectKeyFromObject(ch)
	if !present || rt == (store.Route{}) {
		delete(x.routes, key)
		return
	}
	if x.routes == nil {
		x.routes = map[client.ObjectKey]store.Route{}
	}
	x.routes[key] = rt
}

// Route is how the Channel wants to hear of checks (the zero Route: the
// defaults): the index is the store's RouteTable.
func (x *channelIndex) Route(namespace, name string) store.Route {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.routes[client.ObjectKey{Namespace: namespace, Name: name}]
}

// routeOf is a Channel's route, from its spec.
func routeOf(ch *v1.Channel) store.Route {
	var rt store.Route
	for _, ev := range ch.Spec.Events {
		switch ev {
		case v1.ChannelEventDown:
			rt.Events |= store.EventDown
		case v1.ChannelEventUp:
			rt.Events |= store.EventUp
		case v1.ChannelEventRealert:
			rt.Events |= store.EventRealert
		case v1.ChannelEventFailure:
			rt.Events |= store.EventFailure
		case v1.ChannelEventTooLong:
			rt.Events |= store.EventTooLong
		case v1.ChannelEventTooShort:
			rt.Events |= store.EventTooShort
		case v1.ChannelEventMaintenance:
			rt.Events |= store.EventMaintenance
		case v1.ChannelEventSLA:
			rt.Events |= store.EventSLA
		}
	}
	if ch.Spec.RealertInterval != nil {
		rt.Realert = ch.Spec.RealertInterval.Duration
	}
	return rt
}

// agedName is a Channel's name and creation time, by which its namespace's
// Channels are counted against the limit.
type agedName struct {
	created time.Time
	name    string
}

func compareAge(a, b agedName) int {
	return cmp.Or(a.created.Compare(b.created), strings.Compare(a.name, b.name))
}

// set records a Channel's name; x.mu is held.
func (x *channelIndex) set(namespace string, ch agedName, present bool) {
	cur := x.aged[namespace]
	i := slices.IndexFunc(cur, func(a agedName) bool { return a.name == ch.name })
	switch {
	case present && i < 0:
		j, _ := slices.BinarySearchFunc(cur, ch, compareAge)
		if x.aged == nil {
			x.aged = map[string][]agedName{}
		}
		x.aged[namespace] = slices.Insert(slices.Clip(cur), j, ch)
	case !present && i >= 0:
		if len(cur) == 1 {
			delete(x.aged, namespace)
		} else {
			x.aged[namespace] = slices.Delete(slices.Clone(cur), i, i+1)
		}
	default:
		return
	}
	x.count(namespace, x.limitOf(namespace))
}

func (x *channelIndex) limitOf(namespace string) int {
	if x.limit == nil {
		return project.DefaultObjectLimits[project.Channels]
	}
	return x.limit(namespace)
}

// count stores the names of the namespace's Channels within limit; x.mu is
// held for writing.
func (x *channelIndex) count(namespace string, limit int) {
	aged := x.aged[namespace]
	if len(aged) == 0 {
		delete(x.names, namespace)
		delete(x.limited, namespace)
		return
	}
	names := make([]string, 0, min(len(aged), limit))
	for _, a := range aged[:min(len(aged), limit)] {
		names = append(names, a.name)
	}
	slices.Sort(names)
	if x.names == nil {
		x.names, x.limited = map[string][]string{}, map[string]int{}
	}
	x.names[namespace], x.limited[namespace] = names, limit
}

// all are the names of the namespace's Channels within its limit, sorted;
// shared, read only. A limit changed since they were counted counts them
// again.
func (x *channelIndex) all(namespace string) []string {
	limit := x.limitOf(namespace)
	x.mu.RLock()
	names, counted := x.names[namespace], x.limited[namespace] == limit || len(x.aged[namespace]) == 0
	x.mu.RUnlock()
	if counted {
		return names
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.count(namespace, limit)
	return x.names[namespace]
}

// Channels are the names of the existing Channels the check's spec assigns,
// sorted: those it lists, or every Channel of its namespace for "*", with
// each group replaced by its members. The slice may be shared: read it
// only.
func (d *Door) Channels(c *v1.Check) []string {
	if len(c.Spec.Channels) == 0 {
		return nil
	}
	all := d.ChannelNames(c.Namespace)
	if len(c.Spec.Channels) == 1 && c.Spec.Channels[0] == "*" {
		return d.channels.expand(c.Namespace, all)
	}
	var names []string
	for _, name := range all {
		if c.Spec.Assigns(name) {
			names = append(names, name)
		}
	}
	return d.channels.expand(c.Namespace, names)
}

// escalationChannels are the names of the existing Channels the check's
// escalation names, sorted, groups replaced by their members.
func (d *Door) escalationChannels(c *v1.Check) []string {
	esc := c.Spec.Escalation
	if esc == nil || len(esc.Channels) == 0 {
		return nil
	}
	var names []string
	for _, name := range d.ChannelNames(c.Namespace) {
		if slices.Contains(esc.Channels, name) {
			names = append(names, name)
		}
	}
	return d.channels.expand(c.Namespace, names)
}

// ChannelNames are the names of the namespace's Channels within its limit
// (every Channel, short of it), sorted; the slice is shared: read it only.
func (d *Door) ChannelNames(namespace string) []string {
	d.await()
	return d.channels.all(namespace)
}

// ProjectChannels are a project's Channel objects, oldest first (then by
// name): what the API and the dashboard show a check's channels as.
func (d *Door) ProjectChannels(ctx context.Context, namespace string) ([]v1.Channel, error) {
	var list v1.ChannelList
	if err := d.cache.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	slices.SortStableFunc(list.Items, func(a, b v1.Channel) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	return list.Items, nil
}
