// Package quota creates checks within their project's check limit.
//
// Counting a project's checks in the informer cache and then creating one
// is a race: a hundred clients creating at once all count nineteen, and a
// second replica's creations are not in this one's cache at all. So
// creations in a project take turns, on every replica, through the ping
// store's project lock (store.LockProject), and each turn counts only once
// the cache has caught up with the creation of the turn before: a limit of
// 20 leaves exactly 20 checks, however many race for the last places.
package quota

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/cachewait"
	"github.com/vigil-operator/vigil/internal/store"
)

// cacheWait bounds the wait for the cache before the API server is asked.
const cacheWait = 2 * time.Second

// Guard serializes check creation per project.
type Guard struct {
	Store *store.Store
	// Cache lists the project's checks; Watch tells when it has caught up.
	Cache client.Reader
	Watch *cachewait.Watcher
	// Live lists them from the API server when the cache has not caught up
	// in time: its watch is slow, or the last creation's Check is gone
	// and no later event has come (after a restart).
	Live client.Reader
	// Limit is a project's check limit.
	Limit func(namespace string) int
	Log   logr.Logger
}

// Create holds namespace's creation lock while create runs. create is given
// the project's checks, as the cache holds them once it has every earlier
// creation (shared with the cache: read them only), and the project's
// limit; it creates at most one Check and returns it (nil when it created
// none, such as when it found one to update instead).
func (g *Guard) Create(ctx context.Context, namespace string, create func(checks []v1.Check, limit int) (*v1.Check, error)) (*v1.Check, error) {
	lock, err := g.Store.LockProject(ctx, namespace)
	if err != nil {
		return nil, err
	}
	var created *v1.Check
	defer func() {
		version := ""
		if created != nil {
			version = created.ResourceVersion
		}
		// The check exists whatever happens here: failing the request
		// would make its client create another. A lost record lets the
		// next turn count from a cache that may lack this check.
		if err := lock.Release(version); err != nil {
			g.Log.Error(err, "recording a check creation", "namespace", namespace)
		}
	}()
	var list v1.CheckList
	if lock.LastCreate == "" || g.Watch.Caught(ctx, lock.LastCreate, cacheWait) {
		err = g.Cache.List(ctx, &list, client.InNamespace(namespace), client.UnsafeDisableDeepCopy)
	} else {
		err = g.Live.List(ctx, &list, client.InNamespace(namespace))
	}
	if err != nil {
		return nil, fmt.Errorf("listing the project's checks: %w", err)
	}
	created, err = create(list.Items, g.Limit(namespace))
	return created, err
}
