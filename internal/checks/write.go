package checks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/words"
)

// The Door is the one writer of Check objects (their spec and metadata;
// status is the projector's): the Management API's create, update and
// delete, a ping's ?create=1, and the checks the CronJob controller keeps
// for annotated CronJobs.
//
// One conflict policy for all of them. This manager's writes to one check
// (an update, a snooze) take turns, so that they do not race each other
// and lose: a client of the reference expects every one of 64 parallel
// updates of a check to succeed. A turn starts from the cache's copy,
// which the turn before waited for. A change is sent with optimistic
// concurrency (the resourceVersion); when another writer got there first
// (another replica, kubectl), the change is applied again to the newest
// copy, read from the API server itself (the informer cache may still
// hold the version that lost), after a short, jittered pause, at most
// five times. A write whose turn does not come within turnWait, or that
// still conflicts, fails with ErrBusy: the caller says "try again". A
// delete names the object's UID, so it never deletes a re-created object
// of the same name. Every write returns once the cache shows it (or after
// the Door's cache wait), so that a client's next read, which the cache
// serves, sees what it wrote.

// attempts bounds how often a change is applied after conflicts.
const attempts = 5

// turnWait bounds a write's wait for its turn on a check.
const turnWait = 15 * time.Second

// conflictPause is the first pause after a conflict; each next one is
// twice as long, give or take half.
var conflictPause = wait.Backoff{Duration: 10 * time.Millisecond, Factor: 2, Jitter: 0.5, Steps: attempts}

// ErrBusy: the check is being changed by other writers; the write did not
// happen, and may be sent again.
var ErrBusy = errors.New("the check is being changed by other writers")

// turn waits for this manager's turn to write the check named by key,
// then for its namespace's write slot (share.go).
func (d *Door) turn(ctx context.Context, key client.ObjectKey) (func(), error) {
	ctx, cancel := context.WithTimeout(ctx, turnWait)
	defer cancel()
	unlock, err := d.writes.Lock(ctx, key.String())
	if errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w: its turn did not come within %s", ErrBusy, words.Duration(turnWait))
	}
	if err != nil {
		return nil, err
	}
	leave, err := d.share(ctx, key.Namespace)
	if err != nil {
		unlock()
		return nil, err
	}
	return func() { leave(); unlock() }, nil
}

// CreateOwned creates c as it is, outside any project's check limit: a
// check another object owns and names (a CronJob's). On success c holds
// what the API server stored. Errors are the API server's, as they are:
// callers tell a rejected spec from an outage. It takes its namespace's
// write slot as every write does (share.go): a policy that newly covers a
// thousand CronJobs of one namespace waits its turns.
func (d *Door) CreateOwned(ctx context.Context, c *v1.Check) error {
	leave, err := d.share(ctx, c.Namespace)
	if err != nil {
		return err
	}
	defer leave()
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
	key := client.ObjectKeyFromObject(c)
	unlock, err := d.turn(ctx, key)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if cur := (&v1.Check{}); d.cache.Get(ctx, key, cur) == nil && cur.UID == c.UID {
		c = cur
	}
	pause := conflictPause
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
		if !apierrors.IsConflict(err) {
			return nil, err
		}
		if attempt == attempts {
			return nil, fmt.Errorf("%w: %w", ErrBusy, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(pause.Step()):
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
	leave, err := d.share(ctx, c.Namespace)
	if err != nil {
		return err
	}
	defer leave()
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
