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

// CronJobField indexes the cache's checks by the CronJob they are linked
// to (spec.cronJobRef), for the controllers' own lists. Requests find
// checks through the Door's own index (index.go).
const CronJobField = "vigil.cronJob"

// setupIndexes registers the cache's index; before the cache starts.
func setupIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &v1.Check{}, CronJobField, func(o client.Object) []string {
		if c, ok := o.(*v1.Check); ok && c.Spec.CronJobRef != nil {
			return []string{c.Spec.CronJobRef.Name}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("indexing checks by %s: %w", CronJobField, err)
	}
	return nil
}

// The checks the Door finds are the cache's own: read them; DeepCopy one
// before changing it (Update does).

// InProject is a project's checks, oldest first (the reference's insertion
// order, which API listings follow). The slice is shared: read it only.
func (d *Door) InProject(namespace string) []*v1.Check {
	d.await()
	return d.index.inProject(namespace)
}

// Namespaces lists the namespaces that have checks, sorted: the projects
// a person signed in to the dashboard may be shown (O(projects)).
func (d *Door) Namespaces() []string {
	d.await()
	return d.index.namespaces()
}

// Named is the check of that name in the namespace, as the cache has it
// (nil: none).
func (d *Door) Named(namespace, name string) *v1.Check {
	d.await()
	return d.index.named(namespace, name)
}

// ByUUID finds the check with a UUID in any namespace: the oldest of those
// in the project that owns the UUID. spec.uuid is the tenant's to choose, so
// a check in another project may name the same UUID; it never answers to
// it (the controller reports it as a duplicate). Before any project has
// claimed the UUID (a check created a moment ago), the oldest check answers.
func (d *Door) ByUUID(ctx context.Context, uuid string) (*v1.Check, error) {
	d.await()
	return d.ownedOldest(ctx, uuid, d.index.withUUID(uuid))
}

// WithUUID lists every check that names the UUID, in any namespace.
func (d *Door) WithUUID(uuid string) []*v1.Check {
	d.await()
	return slices.Clone(d.index.withUUID(uuid))
}

// ByBadgeKey finds the check whose badge key this is, in any namespace,
// as ByUUID does.
func (d *Door) ByBadgeKey(ctx context.Context, key string) (*v1.Check, error) {
	d.await()
	list := d.index.withBadgeKey(key)
	if len(list) == 0 {
		return nil, ErrNotFound
	}
	return d.ownedOldest(ctx, UUIDOf(list[0]), list)
}

// ownedOldest is the oldest of the checks (all naming uuid) in the project
// that owns it.
func (d *Door) ownedOldest(ctx context.Context, uuid string, checks []*v1.Check) (*v1.Check, error) {
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
func (d *Door) ByUniqueKey(namespace, key string) (*v1.Check, error) {
	d.await()
	return found(Oldest(d.index.withUniqueKey(namespace, key), nil))
}

// BySlug lists the checks with a slug within one namespace, oldest first.
func (d *Door) BySlug(namespace, slug string) []*v1.Check {
	d.await()
	list := slices.Clone(d.index.withSlug(namespace, slug))
	slices.SortFunc(list, compareOldest)
	return list
}

func found(c *v1.Check) (*v1.Check, error) {
	if c == nil {
		return nil, ErrNotFound
	}
	return c, nil
}

// Older reports whether a was created before b (InProject's order).
func Older(a, b *v1.Check) bool { return compareOldest(a, b) < 0 }

// Oldest returns the oldest of the checks match accepts (nil accepts all),
// in InProject's order, without sorting; nil when there is none.
func Oldest(items []*v1.Check, match func(*v1.Check) bool) *v1.Check {
	var best *v1.Check
	for _, c := range items {
		if (match == nil || match(c)) && (best == nil || compareOldest(c, best) < 0) {
			best = c
		}
	}
	return best
}

// compareOldest is InProject's order: creation time, then name, then
// namespace.
func compareOldest(a, b *v1.Check) int {
	return cmp.Or(
		a.CreationTimestamp.Compare(b.CreationTimestamp.Time),
		strings.Compare(a.Name, b.Name),
		strings.Compare(a.Namespace, b.Namespace),
	)
}

// DisplayName is how people see a check named: its name, or its object
// name when it has none.
func DisplayName(c *v1.Check) string {
	if c.Spec.Name != "" {
		return c.Spec.Name
	}
	return c.Name
}
