package checkinput

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ChannelRef is one of the project's channels as the channels field can
// name it.
type ChannelRef struct {
	// Object is the Channel object's name, what a Check's spec stores.
	Object string
	// ID is the channel's UUID as the API shows it.
	ID string
	// Name is its display name.
	Name string
}

// ErrChannels matches every channel-resolution error (errors.Is).
var ErrChannels = errors.New("invalid channels")

// ChannelError is a channels field that does not resolve; as in the
// reference its message carries no "json validation error" prefix.
type ChannelError struct{ msg string }

func (e *ChannelError) Error() string { return e.msg }

// Is makes every ChannelError match ErrChannels.
func (e *ChannelError) Is(target error) bool { return target == ErrChannels }

// ResolveChannels turns a channels field into Channel object names, sorted
// and without duplicates: "" assigns none, "*" every channel that exists
// now (as the reference, a snapshot: channels added later are not
// assigned), and otherwise each comma-separated piece, not trimmed, must
// equal exactly one channel's UUID or display name.
func ResolveChannels(value string, refs []ChannelRef) ([]string, error) {
	set := map[string]bool{}
	switch value {
	case "":
	case "*":
		for _, r := range refs {
			set[r.Object] = true
		}
	default:
		for _, piece := range strings.Split(value, ",") {
			if piece == "" {
				return nil, &ChannelError{"empty channel identifier"}
			}
			var found []string
			for _, r := range refs {
				if r.ID == piece || r.Name == piece {
					found = append(found, r.Object)
				}
			}
			switch len(found) {
			case 0:
				return nil, &ChannelError{fmt.Sprintf("invalid channel identifier: %s", piece)}
			case 1:
				set[found[0]] = true
			default:
				return nil, &ChannelError{fmt.Sprintf("non-unique channel identifier: %s", piece)}
			}
		}
	}
	out := make([]string, 0, len(set))
	for name := range set {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}
