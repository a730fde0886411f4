package checks

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// The cache's indexes of checks, so that each lookup is a map access, not a
// scan of every check in the cluster.
const (
	uuidField      = "vigil.uuid"
	slugField      = "vigil.slug"
	uniqueKeyField = "vigil.uniqueKey"
	badgeKeyField  = "vigil.badgeKey"
	// CronJobField indexes checks by the CronJob they are linked to
	// (spec.cronJobRef), for the controllers' own lists.
	CronJobField = "vigil.cronJob"
)

// setupIndexes registers the indexes; before the cache starts.
func setupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	fields := map[string]func(*v1.Check) string{
		uuidField:      UUIDOf,
		slugField:      func(c *v1.Check) string { return c.Spec.Slug },
		uniqueKeyField: func(c *v1.Check) string { return UniqueKey(UUIDOf(c)) },
		badgeKeyField:  func(c *v1.Check) string { return BadgeKey(UUIDOf(c)) },
		CronJobField: func(c *v1.Check) string {
			if c.Spec.CronJobRef == nil {
				return ""
			}
			return c.Spec.CronJobRef.Name
		},
	}
	for name, value := range fields {
		extract := value
		err := indexer.IndexField(ctx, &v1.Check{}, name, func(o client.Object) []string {
			c, ok := o.(*v1.Check)
			if !ok {
				return nil
			}
			if v := extract(c); v != "" {
				return []string{v}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("indexing checks by %s: %w", name, err)
		}
	}
	return nil
}

// The checks the Door finds are the cache's own (shallow copies that share
// its maps and slices): copying every check of a large project for each
// request was most of a request's cost. Read them; DeepCopy one before
// changing it (Update does).

// list lists checks from the cache without copying them.
func (d *Door) list(ctx context.Context, opts ...client.ListOption) ([]v1.Check, error) {
	var list v1.CheckList
	if err := d.cache.List(ctx, &list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// InProject lists a project's checks, in no particular order.
func (d *Door) InProject(ctx context.Context, namespace string) ([]v1.Check, error) {
	return d.list(ctx, client.InNamespace(namespace))
}

// ByUUID finds the check with a UUID in any namespace: the oldest of those
// in the project that owns the UUID. spec.uuid is the tenant's to choose, so
// a check in another project may name the same UUID; it never answers to
// it (the controller reports it as a duplicate). Before any project has
// claimed the UUID (a check created a moment ago), the oldest check answers.
func (d *Door) ByUUID(ctx context.Context, uuid string) (*v1.Check, error) {
	list, err := d.WithUUID(ctx, uuid)
	if err != nil {
		return nil, err
	}
	return d.ownedOldest(ctx, uuid, list)
}

// WithUUID lists every check that names the UUID, in any namespace.
func (d *Door) WithUUID(ctx context.Context, uuid string) ([]v1.Check, error) {
	return d.list(ctx, client.MatchingFields{uuidField: uuid})
}

// ByBadgeKey finds the check whose badge key this is, in any namespace,
// as ByUUID does.
func (d *Door) ByBadgeKey(ctx context.Context, key string) (*v1.Check, error) {
	list, err := d.list(ctx, client.MatchingFields{badgeKeyField: key})
	if err != nil {
		return nil, err
	}
	if len(list) == 0 {
		return nil, ErrNotFound
	}
	return d.ownedOldest(ctx, UUIDOf(&list[0]), list)
}

// ownedOldest is the oldest of the checks (all naming uuid) in the project
// that owns it.
func (d *Door) ownedOldest(ctx context.Context, uuid string, checks []v1.Check) (*v1.Check, error) {
	if len(checks) == 0 {
		return nil, ErrNotFound
	}
	owner, err := d.store.UUIDOwner(ctx, uuid, d.clock.Now())
	if err != nil {
		return nil, err
	}
	return found(Oldest(checks, func(c *v1.Check) bool { return owner == "" || c.Namespace == owner }))
}

// ByUniqueKey finds the check with a unique_key within one namespace.
func (d *Door) ByUniqueKey(ctx context.Context, namespace, key string) (*v1.Check, error) {
	list, err := d.list(ctx, client.InNamespace(namespace), client.MatchingFields{uniqueKeyField: key})
	if err != nil {
		return nil, err
	}
	return found(Oldest(list, nil))
}

// BySlug lists the checks with a slug within one namespace, oldest first.
func (d *Door) BySlug(ctx context.Context, namespace, slug string) ([]v1.Check, error) {
	list, err := d.list(ctx, client.InNamespace(namespace), client.MatchingFields{slugField: slug})
	if err != nil {
		return nil, err
	}
	SortOldestFirst(list)
	return list, nil
}

func found(c *v1.Check) (*v1.Check, error) {
	if c == nil {
		return nil, ErrNotFound
	}
	return c, nil
}

// SortOldestFirst orders checks by creation, then name, then namespace
// (compareOldest): the reference's insertion order, which API listings and
// upsert matching follow. Checks that compare equal keep their order.
//
// It sorts pointers and moves each check once: a Check is a large struct,
// and sorting thousands of them in place spent most of an API request
// moving them around.
func SortOldestFirst(checks []v1.Check) {
	order := make([]*v1.Check, len(checks))
	for i := range checks {
		order[i] = &checks[i]
	}
	slices.SortStableFunc(order, compareOldest)
	sorted := make([]v1.Check, len(checks))
	for i, c := range order {
		sorted[i] = *c
	}
	copy(checks, sorted)
}

// Older reports whether a was created before b (SortOldestFirst's order).
func Older(a, b *v1.Check) bool { return compareOldest(a, b) < 0 }

// Oldest returns the oldest of the checks match accepts (nil accepts all),
// in SortOldestFirst's order, without sorting; nil when there is none.
func Oldest(items []v1.Check, match func(*v1.Check) bool) *v1.Check {
	var best *v1.Check
	for i := range items {
		c := &items[i]
		if (match == nil || match(c)) && (best == nil || compareOldest(c, best) < 0) {
			best = c
		}
	}
	return best
}

// compareOldest is SortOldestFirst's order: creation time, then name, then
// namespace.
func compareOldest(a, b *v1.Check) int {
	return cmp.Or(
		a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
		strings.Compare(a.Name, b.Name),
		strings.Compare(a.Namespace, b.Namespace),
	)
}
