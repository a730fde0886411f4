package notify

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// SendTest sends a test notification (Message.Test) through a Channel, as
// `vigil channels test` and the dashboard's button do: through a group,
// to each of its members (read with r from the group's namespace). d
// carries everything but the Channel and the Message; check, when set, is
// the check the message names (its name and link), else a stand-in.
func SendTest(ctx context.Context, r client.Reader, ch *v1.Channel, check *CheckInfo, d Delivery) error {
	info := CheckInfo{Namespace: ch.Namespace, Object: "test", Name: "Test check"}
	if check != nil {
		info = *check
	}
	d.Message = Message{Test: true, Check: info}
	if ch.Spec.Kind != v1.ChannelGroup || ch.Spec.Group == nil {
		d.Channel = ch
		return sendTest(ctx, d)
	}
	var errs []error
	for _, name := range ch.Spec.Group.Channels {
		member := &v1.Channel{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: ch.Namespace, Name: name}, member); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", name, err))
			continue
		}
		if member.Spec.Kind == v1.ChannelGroup {
			errs = append(errs, fmt.Errorf("member %s: %w", name, ErrGroup))
			continue
		}
		d.Channel = member
		if err := sendTest(ctx, d); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// sendTest sends a test's down and, through a kind that opens something
// for a down (an incident, an issue, a repeating emergency notification),
// the matching up, so that a test leaves nothing open and nobody paged.
func sendTest(ctx context.Context, d Delivery) error {
	if err := Send(ctx, d); err != nil {
		return err
	}
	k, _ := Lookup(d.Channel.Spec.Kind)
	if _, resolves := k.(testResolver); !resolves {
		return nil
	}
	d.Message.Up = true
	if err := Send(ctx, d); err != nil {
		return fmt.Errorf("resolving the test: %w", err)
	}
	return nil
}

// testResolver marks the kinds whose test down must be followed by an up:
// the incident trackers, and Pushover, whose emergency priority repeats
// until cancelled.
type testResolver interface{ resolvesTests() }

func (tracker) resolvesTests()      {}
func (pushoverKind) resolvesTests() {}
