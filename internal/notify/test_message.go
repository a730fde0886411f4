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
		return Send(ctx, d)
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
		if err := Send(ctx, d); err != nil {
			errs = append(errs, fmt.Errorf("member %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}
