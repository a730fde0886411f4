// Package notify delivers notifications through Channels: one file per
// channel kind, each registering itself, so adding a kind is one file.
package notify

import (
	"context"
	"fmt"
	"sort"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Kind is one integration (webhook, Slack, email, ...).
type Kind interface {
	// SecretRefs lists the Secret keys a channel of this kind reads, so the
	// controller can tell whether the channel is usable.
	SecretRefs(spec *v1.ChannelSpec) []v1.SecretKeyRef
	// Send delivers d.Message through d.Channel, a channel of this kind.
	// It returns nil for an event the channel does not send, and marks
	// errors that retrying cannot fix with Permanent. d.Secret and
	// d.Egress are set (Send in this package fills them in). Every
	// connection goes through d.Egress: d.do for HTTP, d.dial for the rest.
	Send(ctx context.Context, d Delivery) error
}

// incidentTracker marks the kinds that open something on the other side
// for a down (an incident, an alert, an issue, a card) and close it on the
// matching up. They are not sent failure notices nor maintenance notices:
// those would open one for a check that is not down.
type incidentTracker interface{ tracksIncidents() }

// tracker is embedded by the incident trackers' kinds.
type tracker struct{}

func (tracker) tracksIncidents() {}

// acknowledger marks the incident trackers that can carry an
// acknowledgement of a down to the incident they opened for it (a message
// with Notice "ack"); the other kinds are sent none.
type acknowledger interface{ acknowledges() }

// Acknowledges reports whether a Channel of the kind carries an
// acknowledgement of a down to its incident.
func Acknowledges(kind v1.ChannelKind) bool {
	_, ok := kinds[kind].(acknowledger)
	return ok
}

var kinds = map[v1.ChannelKind]Kind{}

// register adds a kind; each kind's file calls it from init.
func register(name v1.ChannelKind, k Kind) {
	if _, dup := kinds[name]; dup {
		panic(fmt.Sprintf("notify: kind %q registered twice", name))
	}
	kinds[name] = k
}

// Lookup returns the implementation of a channel kind.
func Lookup(name v1.ChannelKind) (Kind, bool) {
	k, ok := kinds[name]
	return k, ok
}

// Kinds lists the registered kinds, sorted.
func Kinds() []v1.ChannelKind {
	out := make([]v1.ChannelKind, 0, len(kinds))
	for k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// credentialRefs expands a Secret holding "username" and "password".
func credentialRefs(ref *v1.LocalSecretRef) []v1.SecretKeyRef {
	if ref == nil {
		return nil
	}
	return []v1.SecretKeyRef{{Name: ref.Name, Key: "username"}, {Name: ref.Name, Key: "password"}}
}

func optional(ref *v1.SecretKeyRef) []v1.SecretKeyRef {
	if ref == nil {
		return nil
	}
	return []v1.SecretKeyRef{*ref}
}
