package checks

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/vigil-operator/vigil/api/v1alpha1"
	"github.com/vigil-operator/vigil/internal/keylock"
	"github.com/vigil-operator/vigil/internal/maintenance"
	"github.com/vigil-operator/vigil/internal/project"
)

// windowIndex holds each namespace's MaintenanceWindows, compiled, so that
// building a check's store target (every ping) neither lists the cache nor
// parses a schedule. A namespace's entry is rebuilt from the cache, never
// from one event: whoever rebuilds last has read the newest windows, so an
// event handled late cannot bring an old window back.
type windowIndex struct {
	// refresh serialises a namespace's rebuilds, list to store: a rebuild
	// that listed earlier never stores after one that listed later. One
	// namespace's rebuilds (a tenant editing 300 windows) never wait on
	// another's.
	refresh keylock.Locks
	mu      sync.RWMutex
	// byNS are each namespace's valid windows, by name; a slice is never
	// changed once stored, so readers share it.
	byNS map[string][]*maintenance.Window
}

// RefreshWindows reads the namespace's MaintenanceWindows from the cache
// again: the window controller calls it before it has the namespace's
// checks observed, so their rows see the window it reconciles.
func (d *Door) RefreshWindows(ctx context.Context, namespace string) error {
	unlock, err := d.windows.refresh.Lock(ctx, namespace)
	if err != nil {
		return err
	}
	defer unlock()
	var list v1.MaintenanceWindowList
	if err := d.cache.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return fmt.Errorf("listing the MaintenanceWindows of %s: %w", namespace, err)
	}
	// Windows past the namespace's limit hold nothing; their controller
	// says so.
	counted, snoozes := maintenance.Counted(list.Items)
	counted = slices.Concat(project.Oldest(counted, d.ObjectLimit(namespace, project.MaintenanceWindows)), snoozes)
	var ws []*maintenance.Window
	for i := range counted {
		if w, err := maintenance.Compile(&counted[i]); err == nil {
			ws = append(ws, w) // an invalid window holds nothing; its controller says why
		}
	}
	slices.SortFunc(ws, func(a, b *maintenance.Window) int { return strings.Compare(a.Name, b.Name) })
	x := &d.windows
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(ws) == 0 {
		delete(x.byNS, namespace)
		return nil
	}
	if x.byNS == nil {
		x.byNS = map[string][]*maintenance.Window{}
	}
	x.byNS[namespace] = ws
	return nil
}

func (d *Door) windowEvent(obj any, _ bool) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if o, ok := obj.(client.Object); ok {
		if err := d.RefreshWindows(context.Background(), o.GetNamespace()); err != nil {
			d.log.Error(err, "maintenance windows not read again; the window controller retries")
		}
	}
}

// Windows are the valid MaintenanceWindows that cover the check, by name
// (nil: none).
func (d *Door) Windows(c *v1.Check) maintenance.Set {
	d.await()
	d.windows.mu.RLock()
	all := d.windows.byNS[c.Namespace]
	d.windows.mu.RUnlock()
	var set maintenance.Set
	for _, w := range all {
		if w.Selects(c) {
			set = append(set, w)
		}
	}
	return set
}

// Snooze holds the check's notifications from now for dur: a one-off
// MaintenanceWindow for the check alone, made or moved (one per check).
// It returns the window as written.
// It takes the check's turn, as Update does.
func (d *Door) Snooze(ctx context.Context, c *v1.Check, dur time.Duration) (*v1.MaintenanceWindow, error) {
	unlock, err := d.turn(ctx, client.ObjectKeyFromObject(c))
	if err != nil {
		return nil, err
	}
	defer unlock()
	return maintenance.ApplySnooze(ctx, d.client, d.live, c, d.clock.Now(), dur)
}

// Unsnooze ends the check's snooze, if it has one, in the check's turn.
func (d *Door) Unsnooze(ctx context.Context, c *v1.Check) error {
	unlock, err := d.turn(ctx, client.ObjectKeyFromObject(c))
	if err != nil {
		return err
	}
	defer unlock()
	return maintenance.EndSnooze(ctx, d.client, d.live, c)
}
