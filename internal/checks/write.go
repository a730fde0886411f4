package checks

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// The Door is the one writer of Check objects (their spec and metadata;
// status is the projector's): the Management API's create, update and
// delete, a ping's ?create=1, and the checks the CronJob controller keeps
// for annotated CronJobs.
//
// One conflict policy for all of them: a change is applied to the copy the
// writer read and sent with optimistic concurrency (the resourceVersion);
// when another writer got there first, the change is applied again to the
// newest copy, read from the API server itself (the informer cache may
// still hold the version that lost), at most five times. A delete names
// the object's UID, so it never deletes a re-created object of the same
// name. Every write returns once the cache shows it (or after the Door's
// cache wait), so that a client's next read, which the cache serves, sees
// what it wrote.

// attempts bounds how often a change is applied after conflicts.
const attempts = 5

// CreateOwned creates c as it is, outside any project's check limit: a
// check another object owns and names (a CronJob's). On success c holds
// what the API server stored. Errors are the API server's, as they are:
// callers tell a rejected spec from an outage.
func (d *Door) CreateOwned(ctx context.Context, c *v1.Check) error {
	if err := d.client.Create(ctx, c); err != nil {
		return err
	}
	d.awaitVersion(ctx, c)
	return nil
}

// Update applies change to c (the copy the caller read; it is not
// changed) and writes the result when it differs, as a merge patch with
// optimistic concurrency, retrying on a conflict as the Door's policy says.
// It returns the check as stored. change must be idempotent: it may run on
// several copies.
func (d *Door) Update(ctx context.Context, c *v1.Check, change func(*v1.Check) error) (*v1.Check, error) {
	for attempt := 1; ; attempt++ {
		updated := c.DeepCopy()
		if err := change(updated); err != nil {
			return nil, err
		}
		if equality.Semantic.DeepEqual(updated.Spec, c.Spec) && equality.Semantic.DeepEqual(updated.ObjectMeta, c.ObjectMeta) {
			return c, nil
		}
		err := d.client.Patch(ctx, updated, client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			d.awaitVersion(ctx, updated)
			return updated, nil
		}
		if !apierrors.IsConflict(err) || attempt == attempts {
			return nil, err
		}
		fresh := &v1.Check{}
		if err := d.live.Get(ctx, client.ObjectKeyFromObject(c), fresh); err != nil {
			return nil, err
		}
		if fresh.UID != c.UID {
			return nil, apierrors.NewNotFound(v1.GroupVersion.WithResource("checks").GroupResource(), c.Name)
		}
		c = fresh
	}
}

// Delete deletes c, and only c: not another object created since under its
// name. A check already gone is not an error. Its rows in the ping store go
// when the controller sees the deletion.
func (d *Door) Delete(ctx context.Context, c *v1.Check) error {
	uid := c.UID
	if err := d.client.Delete(ctx, c, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	d.watch.gone(ctx, client.ObjectKeyFromObject(c), d.wait)
	return nil
}

// awaitVersion waits until the cache holds c at its resourceVersion or
// later (or another object under its name).
func (d *Door) awaitVersion(ctx context.Context, c *v1.Check) {
	d.watch.version(ctx, client.ObjectKeyFromObject(c), c.UID, c.ResourceVersion, d.wait)
}
