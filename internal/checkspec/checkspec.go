// Package checkspec is the one door through which Vigil writes Check
// objects (their spec and metadata; status is the projector's): the
// Management API's create, update and delete, a ping's ?create=1, and the
// checks the CronJob controller keeps for annotated CronJobs.
//
// One conflict policy for all of them: a change is applied to the copy the
// writer read and sent with optimistic concurrency (the resourceVersion);
// when another writer got there first, the change is applied again to the
// newest copy, read from the API server itself (the informer cache may
// still hold the version that lost), at most five times. A delete names
// the object's UID, so it never deletes a re-created object of the same
// name.
package checkspec

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
)

// attempts bounds how often a change is applied after conflicts.
const attempts = 5

// Writer writes Check objects.
type Writer struct {
	// Client writes to the API server.
	Client client.Client
	// Reader reads the newest copy after a conflict, uncached.
	Reader client.Reader
}

// Create creates c; on success c holds what the API server stored. Errors
// are the API server's, as they are: callers tell a rejected spec from an
// outage.
func (w *Writer) Create(ctx context.Context, c *v1.Check) error {
	return w.Client.Create(ctx, c)
}

// Update applies change to c (the copy the caller read) and writes the
// result when it differs, as a merge patch with optimistic concurrency,
// retrying on a conflict as the package says. It returns the check as
// stored. change must be idempotent: it may run on several copies.
func (w *Writer) Update(ctx context.Context, c *v1.Check, change func(*v1.Check) error) (*v1.Check, error) {
	for attempt := 1; ; attempt++ {
		updated := c.DeepCopy()
		if err := change(updated); err != nil {
			return nil, err
		}
		if equality.Semantic.DeepEqual(updated.Spec, c.Spec) && equality.Semantic.DeepEqual(updated.ObjectMeta, c.ObjectMeta) {
			return c, nil
		}
		err := w.Client.Patch(ctx, updated, client.MergeFromWithOptions(c, client.MergeFromWithOptimisticLock{}))
		if err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) || attempt == attempts {
			return nil, err
		}
		fresh := &v1.Check{}
		if err := w.Reader.Get(ctx, client.ObjectKeyFromObject(c), fresh); err != nil {
			return nil, err
		}
		if fresh.UID != c.UID {
			return nil, apierrors.NewNotFound(v1.GroupVersion.WithResource("checks").GroupResource(), c.Name)
		}
		c = fresh
	}
}

// Delete deletes c, and only c: not another object created since under its
// name. A check already gone is not an error.
func (w *Writer) Delete(ctx context.Context, c *v1.Check) error {
	uid := c.UID
	if err := w.Client.Delete(ctx, c, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
