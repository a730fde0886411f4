package notify

import (
	"context"
	"errors"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

func init() { register(v1.ChannelGroup, groupKind{}) }

// groupKind is a Channel made of other Channels. Nothing is sent through
// the group itself: a check assigned to it owes its notifications to each
// member (the checks package expands groups where it lists a check's
// Channels), and each member keeps its own outbox entry, retries, events
// and status.
type groupKind struct{}

func (groupKind) SecretRefs(*v1.ChannelSpec) []v1.SecretKeyRef { return nil }

// ErrGroup is Send's answer for a group: its members are sent to instead.
var ErrGroup = errors.New("a group Channel delivers through its members, not itself")

func (groupKind) Send(context.Context, Delivery) error { return Permanent(ErrGroup) }
