package benchutil

import (
	"context"
	"errors"

	"k8s.io/client-go/rest"

	"github.com/vigil-operator/vigil/internal/manager"
)

// StartManager starts a manager in this process and returns once its
// cache has synced; stop stops it and waits until its store is closed.
func StartManager(ctx context.Context, cfg *rest.Config, opts manager.Options) (mgr *manager.Manager, stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	mgr, err = manager.New(ctx, cfg, opts)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		stop()
		return nil, nil, errors.New("the manager's cache did not sync")
	}
	return mgr, stop, nil
}
