// Package checkindex is how Vigil finds a Check from what a request carries:
// the UUID in a ping URL, a slug within a project, or a read-only
// unique_key. It registers field indexes on the manager's cache so each
// lookup is a map access, not a scan of every check in the cluster.
package checkindex

import (
	"cmp"
	"context"
	"crypto/sha1" //nolint:gosec // the reference's unique_key is defined as a SHA-1; it is an identifier, not a secret
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// Field index names.
const (
	UUIDField      = "vigil.uuid"
	SlugField      = "vigil.slug"
	UniqueKeyField = "vigil.uniqueKey"
	BadgeKeyField  = "vigil.badgeKey"
	// CronJobField indexes checks by the CronJob they are linked to.
	CronJobField = "vigil.cronJob"
)

// ErrNotFound is returned when no check matches.
var ErrNotFound = errors.New("check not found")

// UUIDOf is a check's identity in ping URLs: spec.uuid when the manifest pins
// one, otherwise the object's UID.
func UUIDOf(c *v1.Check) string {
	if c.Spec.UUID != "" {
		return c.Spec.UUID
	}
	return string(c.UID)
}

// UniqueKey is the reference's stable read-only identifier: the hex SHA-1 of
// the first 16 hex digits of the UUID (without hyphens).
func UniqueKey(uuid string) string {
	digits := strings.ReplaceAll(uuid, "-", "")
	if len(digits) > 16 {
		digits = digits[:16]
	}
	sum := sha1.Sum([]byte(digits)) //nolint:gosec // see import
	return hex.EncodeToString(sum[:])
}

// BadgeKey is the key in a check's public badge URL (/b/<states>/<key>.svg).
// It is derived from the UUID one way, so a badge, which is public, never
// reveals the ping URL; it is formatted as a UUID, as the reference's is.
func BadgeKey(uuid string) string {
	sum := sha256.Sum256([]byte("vigil-badge:" + uuid))
	h := hex.EncodeToString(sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// Owners tells which project owns a UUID: the ping store records the first
// project whose check claimed it (store.ClaimUUID).
type Owners interface {
	// UUIDOwner is the owning namespace, "" when no project owns it.
	UUIDOwner(ctx context.Context, uuid string, now time.Time) (string, error)
}

// ByBadgeKey finds the check whose badge key this is, in any namespace,
// as ByUUID does.
func ByBadgeKey(ctx context.Context, r client.Reader, owners Owners, key string) (*v1.Check, error) {
	var list v1.CheckList
	if err := r.List(ctx, &list, client.MatchingFields{BadgeKeyField: key}); err != nil {
		return nil, err
	}
	if len(list.Items) == 0 {
		return nil, ErrNotFound
	}
	return ownedOldest(ctx, owners, UUIDOf(&list.Items[0]), list.Items)
}

// Setup registers the indexes; call it before the manager starts.
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	fields := map[string]func(*v1.Check) string{
		UUIDField:      UUIDOf,
		SlugField:      func(c *v1.Check) string { return c.Spec.Slug },
		UniqueKeyField: func(c *v1.Check) string { return UniqueKey(UUIDOf(c)) },
		BadgeKeyField:  func(c *v1.Check) string { return BadgeKey(UUIDOf(c)) },
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

// ByUUID finds the check with a UUID in any namespace: the oldest of those
// in the project that owns the UUID. spec.uuid is the tenant's to choose, so
// a check in another project may name the same UUID; it never answers to
// it (the controller reports it as a duplicate). Before any project has
// claimed the UUID (a check created a moment ago), the oldest check answers.
func ByUUID(ctx context.Context, r client.Reader, owners Owners, uuid string) (*v1.Check, error) {
	list, err := WithUUID(ctx, r, uuid)
	if err != nil {
		return nil, err
	}
	return ownedOldest(ctx, owners, uuid, list)
}

// WithUUID lists every check that names the UUID, in any namespace.
func WithUUID(ctx context.Context, r client.Reader, uuid string) ([]v1.Check, error) {
	var list v1.CheckList
	if err := r.List(ctx, &list, client.MatchingFields{UUIDField: uuid}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// ownedOldest is the oldest of the checks (all naming uuid) in the project
// that owns it.
func ownedOldest(ctx context.Context, owners Owners, uuid string, checks []v1.Check) (*v1.Check, error) {
	if len(checks) == 0 {
		return nil, ErrNotFound
	}
	owner, err := owners.UUIDOwner(ctx, uuid, time.Now())
	if err != nil {
		return nil, err
	}
	return oldest(checks, func(c *v1.Check) bool { return owner == "" || c.Namespace == owner })
}

// ByUniqueKey finds the check with a unique_key within one namespace.
func ByUniqueKey(ctx context.Context, r client.Reader, namespace, key string) (*v1.Check, error) {
	var list v1.CheckList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{UniqueKeyField: key}); err != nil {
		return nil, err
	}
	return oldest(list.Items, nil)
}

// BySlug lists the checks with a slug within one namespace, oldest first.
func BySlug(ctx context.Context, r client.Reader, namespace, slug string) ([]v1.Check, error) {
	var list v1.CheckList
	if err := r.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{SlugField: slug}); err != nil {
		return nil, err
	}
	SortOldestFirst(list.Items)
	return list.Items, nil
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

var nameUnsafe = regexp.MustCompile(`[^a-z0-9-]+`)

// ObjectName is the readable, deterministic object name Vigil gives a check
// it creates (through the API or slug auto-provisioning): a DNS-safe form of
// base (a slug or name) and the first 8 hex digits of its UUID, such as
// "nightly-backup-5d5f3e70". The UUID part makes it unique.
func ObjectName(base, uuid string) string {
	base = strings.ToLower(strings.ReplaceAll(base, "_", "-"))
	base = strings.Trim(nameUnsafe.ReplaceAllString(base, "-"), "-")
	if len(base) > 50 {
		base = strings.Trim(base[:50], "-")
	}
	if base == "" {
		base = "check"
	}
	return base + "-" + strings.ReplaceAll(uuid, "-", "")[:8]
}

// Older reports whether a was created before b (SortOldestFirst's order).
func Older(a, b *v1.Check) bool { return compareOldest(a, b) < 0 }

func oldest(items []v1.Check, match func(*v1.Check) bool) (*v1.Check, error) {
	if c := Oldest(items, match); c != nil {
		return c, nil
	}
	return nil, ErrNotFound
}

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
