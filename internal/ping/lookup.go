package ping

import (
	"context"
	"errors"
	"fmt"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/checks"
	"github.com/vigil-operator/vigil/internal/project"
)

// What lookupCheck finds when it finds no single check. Callers map them to
// their protocol's answers.
var (
	// errNoCheck: no check has the UUID, no project has the ping key, or
	// the project has no check with the slug.
	errNoCheck = errors.New("no such check")
	// errNoSlugMatch is the last case of errNoCheck (which it matches): the
	// project exists, so a slug ping may create the check.
	errNoSlugMatch = fmt.Errorf("%w with the slug", errNoCheck)
	// errSlugAmbiguous: several of the project's checks have the slug.
	errSlugAmbiguous = errors.New("ambiguous slug")
)

// lookupCheck finds the check t names: by UUID when t.UUID is set, else by
// the project t.PingKey names and t.Slug. Any error looking the UUID up is
// errNoCheck; any other error (the cache's, the ping store's when it asks
// who owns the UUID) is returned as it is, for a 503. namespace is the project's namespace once the ping key is known.
func lookupCheck(ctx context.Context, door *checks.Door, projects *project.Registry, t Target) (check *v1.Check, namespace string, err error) {
	if t.UUID != "" {
		c, err := door.ByUUID(ctx, t.UUID)
		switch {
		case errors.Is(err, checks.ErrNotFound):
			return nil, "", errNoCheck
		case err != nil:
			return nil, "", err
		}
		return c, "", nil
	}
	info, ok := projects.ByPingKey(t.PingKey)
	if !ok {
		return nil, "", errNoCheck
	}
	found := door.BySlug(info.Namespace, t.Slug)
	switch {
	case len(found) > 1:
		return nil, info.Namespace, errSlugAmbiguous
	case len(found) == 0:
		return nil, info.Namespace, errNoSlugMatch
	}
	return found[0], info.Namespace, nil
}
